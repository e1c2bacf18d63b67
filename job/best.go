package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
)

// The best model of a job with a validation set (config job.valid): the
// first worker keeps each better model in a pinned snapshot (KeepBest)
// and, when the job ends on a worse one (early stopping, or a last epoch
// that did not beat the best), rolls the cluster back to it (RollBack).
// The rollback restores every worker at a new version; each starts its
// next attempt at the end (Env.BestRestored): the kept model is evaluated, exported
// and saved as the job's final model.

// KeepsBest reports whether this worker keeps the best model of its job
// in pinned snapshots: the first worker of a job with a validation set
// and a snapshot store (worker -local has one).
func (e *Env) KeepsBest() bool {
	return e.Index == 0 && e.Config.HasValidation() && e.Config.Snapshot.Store != "" && e.Client != nil
}

// SayValidation says how the job uses its validation set of samples
// samples: whether it keeps the best model (not with a model trained in
// sync mode, sync, nor without a snapshot store) and when it stops early.
func (e *Env) SayValidation(samples int, sync bool) {
	t := e.Config.Train
	plan := "; the best model is kept"
	switch {
	case sync:
		plan = "; sync mode keeps the last model (the best is not kept)"
	case !e.KeepsBest():
		plan = "; no snapshot store: the last model is kept (set snapshot.store to keep the best)"
	}
	if t.Patience > 0 {
		plan += fmt.Sprintf("; training stops after %d validations without a better %s", t.Patience, t.ValidMetric)
	}
	e.Say("validation: %d samples, judged by %s%s", samples, t.ValidMetric, plan)
}

// keepTries is how many times a pinned snapshot is asked for before the
// job fails: a failed snapshot is most often a passing trouble (the
// scheduler retries incomplete parts itself).
const keepTries = 3

// KeepBest has the scheduler take a pinned snapshot of the model, the
// best so far, which Prune keeps and RollBack restores. The worker must
// have applied and committed what it trained (its checkpoint holds the
// new best). With hold nil the worker trains nothing meanwhile and its
// pauses are acknowledged at once; a model that keeps state of its own in
// the worker gives hold, which serves the snapshot's pause (see
// SaveModel).
func (e *Env) KeepBest(ctx context.Context, hold func(context.Context) error) (_ uint64, err error) {
	if hold == nil {
		e.Pauser.StopTraining(ctx)
		defer func() {
			if serr := e.Pauser.StartTraining(ctx); err == nil {
				err = serr
			}
		}()
	}
	for try := 1; try <= keepTries; try++ {
		var r controlplane.SnapshotResult
		r, err = e.requestSnapshot(ctx, true, hold)
		switch {
		case err != nil:
		case !r.Pinned:
			err = fmt.Errorf("job: snapshot %d answered the request for a pinned one, not pinned", r.Seq)
		case hold != nil && !slices.Contains(r.Paused, e.Name):
			// The scheduler had not seen this worker join yet and did not
			// wait for its pause: the state hold writes is not in it.
			err = fmt.Errorf("job: snapshot %d was taken without this worker's pause", r.Seq)
		}
		if err == nil {
			return r.Seq, nil
		}
		if ctx.Err() != nil {
			break
		}
		e.Say("keeping the best model: %v (try %d of %d)", err, try, keepTries)
	}
	return 0, fmt.Errorf("job: keeping the best model: %w", err)
}

// requestSnapshot has the scheduler take a snapshot (pinned with pin),
// hold serving this worker's pauses meanwhile (nil: the pauser
// acknowledges them, the worker training nothing).
func (e *Env) requestSnapshot(ctx context.Context, pin bool, hold func(context.Context) error) (controlplane.SnapshotResult, error) {
	if hold == nil {
		return e.Conn.RequestSnapshot(ctx, pin)
	}
	hctx, cancel := context.WithCancel(ctx)
	held := make(chan error, 1)
	go func() { held <- hold(hctx) }()
	r, err := e.Conn.RequestSnapshot(ctx, pin)
	cancel()
	if herr := <-held; err == nil && herr != nil && !errors.Is(herr, context.Canceled) {
		err = herr
	}
	return r, err
}

// rollbackWait bounds the wait, after a rollback succeeded, for the
// attempt to end with it.
const rollbackWait = 5 * time.Minute

// RollBack has the scheduler roll the cluster back to the pinned
// snapshot (the best model), why saying why, and returns once the
// attempt ended with the restore (ctx's cause, which wraps ErrRestored):
// the next attempt starts at the end (Env.BestRestored). A refused or failed
// rollback is returned as such.
func (e *Env) RollBack(ctx context.Context, why string) error {
	e.Say("ending on the best model: %s; rolling the cluster back to it", why)
	e.Pauser.StopTraining(ctx) // the rollback pauses every worker first
	if _, err := e.Conn.RequestRollback(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("job: rolling back to the best model: %w", err)
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(rollbackWait):
		return errors.New("job: the cluster rolled back to the best model, but this worker's attempt did not end with it")
	}
}

// rolledBack returns the rollback that ended the job on its best model
// when the cluster serves at the version it produced (the job is over
// but for its final evaluation), or nil.
func (e *Env) rolledBack(ctx context.Context) (*controlplane.RollbackResult, error) {
	r, ok, err := e.Conn.LastRollback(ctx)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if !ok || r.Error != "" || r.Version != e.Version {
		return nil, nil
	}
	return &r, nil
}
