package job

import (
	"context"

	"github.com/xdlgo/xps/cluster/controlplane"
)

// The scheduler's pauses, as a model sees them. A model's attempt calls
// StartTraining before its first push and StopTraining when it pushes no
// more; between them it asks PauseRequested at every batch boundary and,
// when it is asked, makes every push applied (and its checkpoint stored)
// and calls Pause, which returns when training may go on. These are the
// public face of Env.Pauser, so that a model written outside the module
// needs no type of the control plane.

// StartTraining marks the worker as training: from now on the scheduler's
// pauses wait for it at a batch boundary. It fails with an error wrapping
// a restore (Recoverable) when training resumes at a newer cluster
// version, or when the cluster failed.
func (e *Env) StartTraining(ctx context.Context) error { return e.Pauser.StartTraining(ctx) }

// StopTraining marks the worker as no longer training: pauses are
// acknowledged at once from now on.
func (e *Env) StopTraining(ctx context.Context) { e.Pauser.StopTraining(ctx) }

// PauseRequested reports whether the scheduler waits for a pause.
func (e *Env) PauseRequested() bool { return e.Pauser.Requested() }

// Pause acknowledges the scheduler's pause and waits for its resume.
func (e *Env) Pause(ctx context.Context) error { return e.Pauser.Pause(ctx) }

// Lifecycle is the part of Env a model's training run uses while it
// trains: the scheduler's pauses at batch boundaries, and the best model
// (keep it, end the run on it). *Env implements it. A run outside a job
// (a test, a benchmark) has none: it never pauses and keeps no best.
type Lifecycle interface {
	// PauseRequested reports whether the scheduler waits for a pause.
	PauseRequested() bool
	// Pause acknowledges the pause asked last and waits for its resume.
	Pause(ctx context.Context) error
	// KeepsBest reports whether the job keeps its best model.
	KeepsBest() bool
	// KeepBest keeps the model as the best so far (hold serves the
	// pauses of its snapshot; nil for a model held wholly by the shards)
	// and returns the snapshot it pinned.
	KeepBest(ctx context.Context, hold func(context.Context) error) (uint64, error)
	// RollBack ends the run on the kept model.
	RollBack(ctx context.Context, why string) error
}

var _ Lifecycle = (*Env)(nil)

// PendingPause is the sequence number of the pause asked last (0 when
// none was), so that a model that saves state of its own with a
// snapshot can match the pause to the snapshot (SnapshotTarget) and serve
// exactly that one (PauseFor).
func (e *Env) PendingPause() uint64 { return e.Pauser.Pending() }

// PauseFor acknowledges pause seq and waits for its resume.
func (e *Env) PauseFor(ctx context.Context, seq uint64) error { return e.Pauser.PauseFor(ctx, seq) }

// SnapshotTarget is the snapshot being taken, if any: its sequence
// number, store and the pause that serves it, for a model whose state
// outside the shards goes into the snapshot.
func (e *Env) SnapshotTarget(ctx context.Context) (controlplane.SnapshotTarget, bool, error) {
	return e.Conn.GetSnapshotTarget(ctx)
}

// WorkersLeft returns those of the named workers that have left the
// cluster cleanly (a job that ended).
func (e *Env) WorkersLeft(ctx context.Context, names []string) ([]string, error) {
	return e.Conn.WorkersLeft(ctx, names)
}
