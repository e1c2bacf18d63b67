package trainrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/job/tracker"
)

// Steps is what a model carries out for its run's tracker: the actions
// every run has. Each model keeps its own step, evaluation and data; the
// driver only dispatches.
type Steps interface {
	// Commit stores c once every push of the batches it counts is
	// applied.
	Commit(ctx context.Context, c checkpoint.Checkpoint) error
	// Pause serves the scheduler's pause at this batch boundary: every
	// push applied, c stored unless nil, then the resume awaited.
	Pause(ctx context.Context, c *checkpoint.Checkpoint) error
	// Evaluate scores the test set (every push before it applied).
	Evaluate(ctx context.Context, e tracker.Evaluate) error
	// Validate scores the validation set and answers with its figure
	// (tracker.Validated).
	Validate(ctx context.Context, when string) (tracker.Event, error)
	// Progress prints a progress line.
	Progress(ctx context.Context)
	// Pin keeps the model as the best so far, c (holding the new best)
	// committed first.
	Pin(ctx context.Context, c checkpoint.Checkpoint) error
	// Rollback ends the run on the best model kept, for reason.
	Rollback(ctx context.Context, reason string) error
}

// Rounds is what a model that runs sync rounds, several workers and
// streams adds to Steps. A model without it fails a run whose tracker
// asks for one of these.
type Rounds interface {
	LeaveRound(ctx context.Context, c checkpoint.Checkpoint) error
	Barrier(ctx context.Context) error
	Reopen(ctx context.Context) error
}

// Driver feeds a run's events to its tracker and carries out the actions
// the tracker returns through the model's Steps (and Rounds, when the
// model has them); Drain is the run's push ring's (every push applied,
// the first error).
type Driver struct {
	Name    string // prefixes errors ("worker")
	Tracker *tracker.Tracker
	Model   Steps
	Drain   func() error

	stopping bool
	stopped  *checkpoint.Checkpoint // the last commit of Stopped
}

// Step hands ev to the tracker and carries out the actions it returns,
// except Open: only the tracker's start and an epoch's end return one,
// and Step returns it with what follows, for tracker.Epochs.
func (d *Driver) Step(ctx context.Context, ev tracker.Event) ([]tracker.Action, error) {
	return d.Tracker.StepExec(ev, func(a tracker.Action) (tracker.Event, error) {
		if v, ok := a.(tracker.Validate); ok {
			return d.Model.Validate(ctx, v.When)
		}
		return nil, d.exec(ctx, a)
	})
}

func (d *Driver) exec(ctx context.Context, a tracker.Action) error {
	m := d.Model
	switch a := a.(type) {
	case tracker.Commit:
		if err := m.Commit(ctx, a.Checkpoint); err != nil {
			return err
		}
		if d.stopping {
			c := a.Checkpoint
			d.stopped = &c
		}
		return nil
	case tracker.Pause:
		return m.Pause(ctx, a.Checkpoint)
	case tracker.Evaluate:
		return m.Evaluate(ctx, a)
	case tracker.Progress:
		m.Progress(ctx)
		return nil
	case tracker.Drain:
		return d.Drain()
	case tracker.Pin:
		// A pin is carried out even when the run was stopped meanwhile
		// (the stop came with the validation it follows), with time of
		// its own, at most PinBound: every later checkpoint, the stop's
		// too, carries the new best, and a best without its pinned
		// snapshot could not be rolled back to.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PinBound)
		defer cancel()
		return m.Pin(pctx, a.Checkpoint)
	case tracker.Rollback:
		return m.Rollback(ctx, a.Reason)
	case tracker.Done:
		return nil
	}
	rs, ok := m.(Rounds)
	if !ok {
		return fmt.Errorf("%s: unexpected action %T", d.Name, a)
	}
	switch a := a.(type) {
	case tracker.LeaveRound:
		return rs.LeaveRound(ctx, a.Checkpoint)
	case tracker.Barrier:
		return rs.Barrier(ctx)
	case tracker.Reopen:
		return rs.Reopen(ctx)
	}
	return fmt.Errorf("%s: unexpected action %T", d.Name, a)
}

// PinBound bounds a pin begun (tracker.Pin) once the run's context has
// ended.
const PinBound = 10 * time.Second

// Stopped ends a run whose context ended (err is why): the tracker's
// Stopped actions (the commit of every batch trained; for a stream,
// whose stop is its end, the evaluation) are carried out with time of
// their own, at most bound, so that the checkpoint in the model counts
// every push the shards applied. It returns err joined with what failed
// on the way, and the checkpoint the stop committed (nil: none).
func (d *Driver) Stopped(ctx context.Context, err error, bound time.Duration) (*checkpoint.Checkpoint, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	d.stopping, d.stopped = true, nil
	defer func() { d.stopping = false }()
	_, serr := d.Step(cctx, tracker.Stopped{Now: time.Now()})
	return d.stopped, errors.Join(err, serr)
}
