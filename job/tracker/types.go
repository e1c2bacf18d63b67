package tracker

import (
	"time"

	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
)

// Event is an input of Step.
type Event interface{ event() }

// Started starts the run.
type Started struct{ Now time.Time }

// BatchTrained reports a batch trained and its push started: its samples,
// their digest sum and the positions after its last sample of each
// stream (compress.Batch.Ends). PauseRequested reports that the scheduler
// asks for a pause (asked after every batch).
type BatchTrained struct {
	Now            time.Time
	Samples        int
	Digest         uint64
	Ends           []reader.Position
	PauseRequested bool
}

// Tick reports time passing while no batch comes (a quiet stream);
// PauseRequested reports that the scheduler asks for a pause meanwhile:
// the run pauses at once, at the boundary of the batches it trained (a
// quiet stream must not hold up a snapshot or an export until its next
// batch).
type Tick struct {
	Now            time.Time
	PauseRequested bool
}

// Idle reports that the source is idle: the partial batch was trained.
type Idle struct{ Now time.Time }

// Redealt reports that the source's partitions were dealt anew
// (worker.ErrReopen).
type Redealt struct{ Now time.Time }

// EpochEnded reports that the epoch's data ended and its last batch was
// trained.
type EpochEnded struct{ Now time.Time }

// Stopped reports that the run is stopped (its context ended).
type Stopped struct{ Now time.Time }

// Validated answers a Validate: the validation figure of the model
// (train.valid_metric: higher or lower is better as Options.Higher
// says).
type Validated struct {
	Now   time.Time
	Value float64
}

func (Started) event()      {}
func (BatchTrained) event() {}
func (Tick) event()         {}
func (Idle) event()         {}
func (Redealt) event()      {}
func (EpochEnded) event()   {}
func (Stopped) event()      {}
func (Validated) event()    {}

// Action is an output of Step, for the driver to execute.
type Action interface{ action() }

// Open opens the data of Epoch, from its Batch-th batch (or the position
// the start checkpoint names) and trains it.
type Open struct {
	Epoch int
	Batch int
}

// Commit waits until every push of the batches trained so far is applied,
// then stores Checkpoint in the model.
type Commit struct{ Checkpoint checkpoint.Checkpoint }

// Pause waits until every push is applied, stores Checkpoint (when set)
// and pauses for the scheduler until it resumes.
type Pause struct{ Checkpoint *checkpoint.Checkpoint }

// Reopen reopens the epoch's source (after its partitions were re-dealt).
type Reopen struct{}

// Evaluate evaluates the model on the test set; Final marks the last one.
type Evaluate struct {
	When  string
	Final bool
}

// Validate evaluates the model on the validation set and answers with
// Validated; it ends the actions of its step (what follows depends on
// the answer).
type Validate struct{ When string }

// Pin keeps the model as the best so far: a pinned snapshot of it, after
// every push is applied and Checkpoint, which holds the new best
// (checkpoint.Best), is stored.
type Pin struct {
	When       string
	Checkpoint checkpoint.Checkpoint
}

// Rollback ends the run on the best model: every push applied, the
// cluster rolls the model back to the pinned snapshot. The driver's
// attempt ends with the rollback (the cluster restores at a new version)
// and the next one starts with Options.Final; a refused rollback is the
// run's error. Reason says why the run ends.
type Rollback struct{ Reason string }

// Progress prints a progress line.
type Progress struct{}

// LeaveRound leaves the epoch's sync round (sync mode), with Checkpoint,
// the finished epoch's, entering the model with the round.
type LeaveRound struct{ Checkpoint checkpoint.Checkpoint }

// Drain waits until every push is applied.
type Drain struct{}

// Barrier waits at the final barrier for the other workers.
type Barrier struct{}

// Done ends the run.
type Done struct{}

func (Open) action()       {}
func (Commit) action()     {}
func (Pause) action()      {}
func (Reopen) action()     {}
func (Evaluate) action()   {}
func (Progress) action()   {}
func (Validate) action()   {}
func (Pin) action()        {}
func (Rollback) action()   {}
func (LeaveRound) action() {}
func (Drain) action()      {}
func (Barrier) action()    {}
func (Done) action()       {}
