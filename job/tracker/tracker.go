package tracker

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
)

// Options configure a Tracker.
type Options struct {
	// Epochs is the number of epochs of the job (train.epochs), at least 1.
	Epochs int
	// Start is where the run resumes: the checkpoint the model holds (the
	// zero Checkpoint: from the start).
	Start checkpoint.Checkpoint
	// Commits makes the tracker emit Commit actions (and checkpoints with
	// Pause). Off in sync mode, where checkpoints go with the rounds.
	Commits bool
	// CommitEvery is the least time between two commits while training;
	// 0 commits only at epoch ends, idle sources, re-deals and pauses.
	CommitEvery time.Duration
	// ProgressEvery is the least time between two Progress actions; 0
	// prints none.
	ProgressEvery time.Duration
	// EvalEvery evaluates every that many batches (0: only after epochs);
	// Evaluate is off altogether without a test set.
	EvalEvery int
	Evaluate  bool
	// EvaluateOnStop evaluates (Evaluate{When: "stop", Final: true}) after
	// the commit of a stop: the end of a job that never ends by itself (a
	// stream), whose stop is its normal end. Not without Evaluate.
	EvaluateOnStop bool
	// Sync marks sync mode: the end of an epoch leaves the epoch's round.
	Sync bool
	// Barrier emits the final Barrier, before the final evaluation: a job
	// of several workers waits there for the others (a run in a job of
	// one emits it too, and its Barrier does nothing).
	Barrier bool
	// Validate validates the model (Validate, answered by Validated)
	// wherever it evaluates, and after every epoch: the first worker of a
	// job with a validation set. Higher says a higher figure is better
	// (AUC, P@k; not logloss), MinDelta how much better a figure must be
	// to count. Patience stops the run once that many validations in a
	// row did not beat the best (0: never stops early).
	Validate bool
	Higher   bool
	MinDelta float64
	Patience int
	// KeepBest keeps the best model (Pin) and ends the run on it
	// (Rollback) when the last validation is not the best: a job in a
	// cluster with a snapshot store. Without it a run that stops early
	// stops at the end of the epoch, with the model it has.
	KeepBest bool
	// Final starts the run at its end: the job was rolled back to its best
	// model (controlplane.LastRollback), which is validated again, then
	// evaluated.
	Final bool
}

// ErrDone is returned for an event after the run is done, but for
// Stopped, which commits again (a stop may have cut the final commit
// short).
var ErrDone = errors.New("tracker: the run is done")

// Tracker is the state of one training run. It is used by one goroutine.
type Tracker struct {
	opts                     Options
	epoch                    int
	epochDone                bool
	batch                    int   // the next batch of the epoch
	batches                  int64 // batches trained over the job
	runBatch                 int64 // batches trained in this run
	applied                  int64
	digest                   uint64
	positions                map[string]reader.Position // by stream (reader.StreamOf): the latest of each
	dirty                    bool                       // the checkpoint changed since the last commit
	lastCommit, lastProgress time.Time
	started, done            bool
	// best is the best validation so far (the start checkpoint's, then
	// every Validated); valid is what the validation in progress follows
	// (none when none is), validWhen its name; stopping: a run that
	// cannot keep its best model stops at the end of the epoch.
	best      *checkpoint.Best
	valid     validPoint
	validWhen string
	stopping  bool
}

// KeptModel names the validation of a Final run (Validate.When).
const KeptModel = "the kept model"

// ValidationWords returns how a progress line names the validation when
// ("after epoch 2", "of the kept model") and the best one so far, by
// metric ("; best auc 0.7869 after epoch 2"; "" before the first).
func ValidationWords(when string, best *checkpoint.Best, metric string) (at, bestSoFar string) {
	at = "after " + when
	if when == KeptModel {
		at = "of " + when
	}
	if best != nil {
		bestSoFar = fmt.Sprintf("; best %s %.4f after %s", metric, best.Value, best.When)
	}
	return at, bestSoFar
}

// validPoint is where a validation was asked for: what comes next
// depends on it.
type validPoint uint8

const (
	validNone  validPoint = iota
	validBatch            // every EvalEvery batches: training goes on
	validEpoch            // the end of an epoch: the next opens, or the run finishes
	validFinal            // the kept model, at the start of a Final run
)

// New returns the tracker of a run with opts.
func New(opts Options) *Tracker {
	opts.Epochs = max(opts.Epochs, 1)
	s := opts.Start
	t := &Tracker{opts: opts, applied: s.Applied, digest: s.Digest, batches: s.Batches,
		positions: map[string]reader.Position{}}
	if s.Best != nil {
		b := *s.Best
		t.best = &b
	}
	return t
}

// Step applies ev and returns the actions the driver must execute, in
// order.
func (t *Tracker) Step(ev Event) ([]Action, error) {
	if t.done {
		if ev, ok := ev.(Stopped); ok {
			// The stop cut the run's last actions short (the final
			// commit, the barrier): commit again, as every stop does.
			t.dirty = true
			return t.commit(ev.Now, nil), nil
		}
		return nil, fmt.Errorf("%w: %s", ErrDone, eventType(ev))
	}
	if _, ok := ev.(Started); !ok && !t.started {
		return nil, fmt.Errorf("tracker: %s before Started", eventType(ev))
	}
	if v, ok := ev.(Validated); ok {
		return t.validated(v)
	}
	if t.valid != validNone {
		return nil, fmt.Errorf("tracker: %s while waiting for Validated", eventType(ev))
	}
	switch ev := ev.(type) {
	case Started:
		return t.start(ev), nil
	case BatchTrained:
		return t.trained(ev), nil
	case Tick:
		if ev.PauseRequested {
			return []Action{t.pauseNow(ev.Now)}, nil
		}
		if t.opts.CommitEvery > 0 && ev.Now.Sub(t.lastCommit) >= t.opts.CommitEvery {
			return t.commit(ev.Now, nil), nil
		}
		return nil, nil
	case Idle:
		return t.commit(ev.Now, nil), nil
	case Redealt:
		acts := t.commit(ev.Now, nil)
		clear(t.positions)
		return append(acts, Reopen{}), nil
	case Stopped:
		// Always, changed or not: a commit emitted before may not have
		// been carried out (the stop cancelled it halfway), and a stop
		// must leave the checkpoint of every batch reported.
		t.dirty = true
		acts := t.commit(ev.Now, nil)
		if t.opts.Evaluate && t.opts.EvaluateOnStop {
			acts = append(acts, Drain{}, Evaluate{When: "stop", Final: true})
		}
		return acts, nil
	case EpochEnded:
		return t.epochEnded(ev.Now), nil
	}
	return nil, fmt.Errorf("tracker: unknown event %s", eventType(ev))
}

// eventType is ev's type as %T prints it. Unlike handing ev to fmt, it
// lets ev stay on its sender's stack: a driver's event per batch costs no
// allocation.
func eventType(ev Event) string {
	if ev == nil {
		return "<nil>"
	}
	return reflect.TypeOf(ev).String()
}

// start opens the first epoch to train, or goes straight to the final
// evaluation when the checkpoint says every epoch was trained.
func (t *Tracker) start(ev Started) []Action {
	if t.started {
		return nil
	}
	t.started, t.lastCommit, t.lastProgress = true, ev.Now, ev.Now
	s := t.opts.Start
	t.epoch = t.First()
	if s.Epoch > 0 && !s.EpochDone {
		t.batch = s.Batch
	}
	if t.opts.Final && t.opts.Validate {
		return t.validate(nil, validFinal, KeptModel)
	}
	if t.epoch > t.opts.Epochs || t.opts.Final {
		return t.finish("final")
	}
	return []Action{Open{Epoch: t.epoch, Batch: t.batch}}
}

// trained accounts for a batch, then prints progress, commits, pauses and
// evaluates as due.
func (t *Tracker) trained(ev BatchTrained) []Action {
	t.applied += int64(ev.Samples)
	t.digest += ev.Digest
	t.batch++
	t.batches++
	t.runBatch++
	for _, p := range ev.Ends {
		t.positions[reader.StreamOf(p.File)] = p
	}
	t.dirty = t.dirty || len(ev.Ends) > 0 || ev.Samples > 0
	var acts []Action
	if t.opts.ProgressEvery > 0 && ev.Now.Sub(t.lastProgress) >= t.opts.ProgressEvery {
		t.lastProgress = ev.Now
		acts = append(acts, Progress{})
	}
	if ev.PauseRequested {
		acts = append(acts, t.pauseNow(ev.Now))
	} else if t.opts.CommitEvery > 0 && ev.Now.Sub(t.lastCommit) >= t.opts.CommitEvery {
		acts = t.commit(ev.Now, acts)
	}
	if t.opts.EvalEvery > 0 && t.runBatch%int64(t.opts.EvalEvery) == 0 {
		when := fmt.Sprintf("batch %d", t.runBatch)
		if t.opts.Evaluate {
			acts = append(acts, Evaluate{When: when})
		}
		if t.opts.Validate {
			acts = t.validate(acts, validBatch, when)
		}
	}
	return acts
}

// validate appends a Validate at point p, named when.
func (t *Tracker) validate(acts []Action, p validPoint, when string) []Action {
	t.valid, t.validWhen = p, when
	return append(acts, Validate{When: when})
}

// validated takes the validation's figure: a new best is kept (Pin), and
// the run goes on, stops early, or finishes, on its best model
// (Rollback) when it is not the model it has.
func (t *Tracker) validated(ev Validated) ([]Action, error) {
	p, when := t.valid, t.validWhen
	if p == validNone {
		return nil, errors.New("tracker: Validated without Validate")
	}
	t.valid = validNone
	if p == validFinal {
		return t.finish("final"), nil
	}
	better := t.best == nil || t.opts.Higher && ev.Value > t.best.Value+t.opts.MinDelta ||
		!t.opts.Higher && ev.Value < t.best.Value-t.opts.MinDelta
	if better {
		t.best = &checkpoint.Best{Value: ev.Value, When: when}
	} else {
		t.best.Since++
	}
	t.dirty = true
	last := p == validEpoch && t.epoch >= t.opts.Epochs
	stop := !better && t.opts.Patience > 0 && t.best.Since >= t.opts.Patience
	var acts []Action
	if better && t.opts.KeepBest && !last {
		acts = append(acts, Pin{When: when, Checkpoint: t.checkpoint()})
	}
	switch {
	case (last || stop) && !better && t.opts.KeepBest:
		t.done = true
		why := fmt.Sprintf("the training ended (%s)", when)
		if !last {
			why = fmt.Sprintf("%d validations in a row (to %s) did not beat the best", t.best.Since, when)
		}
		return append(acts, Drain{}, Rollback{Reason: why}), nil
	case last || stop && p == validEpoch || t.stopping && p == validEpoch:
		return append(acts, t.finish(when)...), nil
	case stop:
		t.stopping = true // at the end of the epoch
	case p == validEpoch:
		return append(acts, t.next()), nil
	}
	return acts, nil
}

// Trained returns the epochs this run trained so far, the one in
// progress counted when it began.
func (t *Tracker) Trained() int { return max(t.epoch-t.First()+1, 0) }

// pauseNow is the pause at this batch boundary: with the checkpoint of
// what was trained when the run commits, which the pause stores.
func (t *Tracker) pauseNow(now time.Time) Action {
	var cp *checkpoint.Checkpoint
	if t.opts.Commits {
		c := t.checkpoint()
		cp = &c
	}
	t.dirty, t.lastCommit = false, now
	return Pause{Checkpoint: cp}
}

// epochEnded commits the finished epoch, leaves its round, evaluates,
// and opens the next epoch or finishes.
func (t *Tracker) epochEnded(now time.Time) []Action {
	t.epochDone, t.dirty = true, true
	acts := t.commit(now, nil)
	if t.opts.Sync {
		acts = append(acts, LeaveRound{Checkpoint: t.checkpoint()})
	}
	when := fmt.Sprintf("epoch %d", t.epoch)
	last := t.epoch >= t.opts.Epochs
	if t.opts.Evaluate && !last {
		acts = append(acts, Evaluate{When: when})
	}
	if t.opts.Validate {
		return t.validate(acts, validEpoch, when)
	}
	if last || t.stopping {
		return append(acts, t.finish(when)...)
	}
	return append(acts, t.next())
}

// next opens the next epoch, from the start of its data: the positions
// of the epoch before are forgotten (a checkpoint of the new epoch holding
// one would resume it at the old epoch's end, and skip it).
func (t *Tracker) next() Action {
	t.epoch, t.epochDone, t.batch = t.epoch+1, false, 0
	clear(t.positions)
	return Open{Epoch: t.epoch}
}

// finish is the end of the run: every push applied, the final barrier,
// the final evaluation.
func (t *Tracker) finish(when string) []Action {
	t.done = true
	acts := []Action{Drain{}}
	if t.opts.Barrier {
		acts = append(acts, Barrier{})
	}
	if t.opts.Evaluate {
		acts = append(acts, Evaluate{When: when, Final: true})
	}
	return append(acts, Done{})
}

// commit appends a Commit of the current checkpoint when it changed.
func (t *Tracker) commit(now time.Time, acts []Action) []Action {
	t.lastCommit = now
	if !t.opts.Commits || !t.dirty {
		return acts
	}
	t.dirty = false
	return append(acts, Commit{Checkpoint: t.checkpoint()})
}

// checkpoint is the checkpoint of every batch reported so far.
func (t *Tracker) checkpoint() checkpoint.Checkpoint {
	c := checkpoint.Checkpoint{Epoch: t.epoch, EpochDone: t.epochDone, Batch: t.batch, Positions: t.Positions(),
		Applied: t.applied, Batches: t.batches, Digest: t.digest}
	if t.best != nil {
		b := *t.best
		c.Best = &b
	}
	return c
}

// Checkpoint returns the checkpoint of every batch reported so far, as a
// Commit would carry it now.
func (t *Tracker) Checkpoint() checkpoint.Checkpoint { return t.checkpoint() }

// Best returns the best validation so far, or nil before the first.
func (t *Tracker) Best() *checkpoint.Best {
	if t.best == nil {
		return nil
	}
	b := *t.best
	return &b
}

// After returns the checkpoint the model will hold once the batch of ev
// is applied (sync mode sends it with the batch's round), without
// accounting for the batch: BatchTrained does, once it is trained.
func (t *Tracker) After(ev BatchTrained) checkpoint.Checkpoint {
	c := t.checkpoint()
	c.Applied += int64(ev.Samples)
	c.Digest += ev.Digest
	c.Batch++
	c.Batches++
	if len(ev.Ends) > 0 {
		pos := make(map[string]reader.Position, len(t.positions)+len(ev.Ends))
		for _, p := range c.Positions {
			pos[reader.StreamOf(p.File)] = p
		}
		for _, p := range ev.Ends {
			pos[reader.StreamOf(p.File)] = p
		}
		c.Positions = sortPositions(pos)
	}
	return c
}

// Positions returns the position after the last trained sample of every
// stream trained on since the last reopen, sorted by stream.
func (t *Tracker) Positions() []reader.Position { return sortPositions(t.positions) }

func sortPositions(m map[string]reader.Position) []reader.Position {
	out := make([]reader.Position, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// Batches returns the batches trained over the job so far: the number
// (from 0) of the next batch, which names its push (ams.Origin).
func (t *Tracker) Batches() int64 { return t.batches }

// Epoch returns the epoch being trained.
func (t *Tracker) Epoch() int { return t.epoch }

// Applied returns the samples applied over the job and their digest sum.
func (t *Tracker) Applied() (int64, uint64) { return t.applied, t.digest }

// First returns the first epoch of this run: the start checkpoint's, or
// the one after it when that epoch was done.
func (t *Tracker) First() int {
	s := t.opts.Start
	if s.EpochDone {
		return max(s.Epoch, 1) + 1
	}
	return max(s.Epoch, 1)
}

// Epochs returns the epochs this run trained, or will have trained when it
// is done.
func (t *Tracker) Epochs() int { return max(t.opts.Epochs-t.First()+1, 0) }
