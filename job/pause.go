package job

import "context"

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
