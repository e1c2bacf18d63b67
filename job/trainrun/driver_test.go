package trainrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/job/tracker"
)

// steps records the steps the driver carries out, as lines.
type steps struct {
	log       []string
	commitErr error
	ctxErr    []error // each Commit's context's error when called
}

func (s *steps) Commit(ctx context.Context, c checkpoint.Checkpoint) error {
	s.log = append(s.log, fmt.Sprintf("commit epoch %d batch %d", c.Epoch, c.Batch))
	s.ctxErr = append(s.ctxErr, ctx.Err())
	return s.commitErr
}
func (s *steps) Pause(ctx context.Context, c *checkpoint.Checkpoint) error {
	s.log = append(s.log, "pause")
	return nil
}
func (s *steps) Evaluate(ctx context.Context, e tracker.Evaluate) error {
	s.log = append(s.log, "evaluate "+e.When)
	return nil
}
func (s *steps) Validate(ctx context.Context, when string) (tracker.Event, error) {
	s.log = append(s.log, "validate "+when)
	return tracker.Validated{Value: 0.5}, nil
}
func (s *steps) Progress(context.Context) { s.log = append(s.log, "progress") }
func (s *steps) Pin(ctx context.Context, c checkpoint.Checkpoint) error {
	s.log = append(s.log, "pin")
	s.ctxErr = append(s.ctxErr, ctx.Err())
	return nil
}
func (s *steps) Rollback(ctx context.Context, reason string) error {
	s.log = append(s.log, "rollback "+reason)
	return nil
}

// rounds adds Rounds to steps.
type rounds struct{ steps }

func (r *rounds) LeaveRound(ctx context.Context, c checkpoint.Checkpoint) error {
	r.log = append(r.log, "leave round")
	return nil
}
func (r *rounds) Barrier(context.Context) error { r.log = append(r.log, "barrier"); return nil }
func (r *rounds) Reopen(context.Context) error  { r.log = append(r.log, "reopen"); return nil }

func newDriver(m Steps, opts tracker.Options) (*Driver, *int) {
	drains := new(int)
	return &Driver{Name: "test", Tracker: tracker.New(opts), Model: m,
		Drain: func() error { *drains++; return nil }}, drains
}

// TestDriverRunsAnEpoch: a one-epoch run with a test set, a validation
// set and a barrier: the driver hands back the Open, then carries out the
// epoch end's actions in the tracker's order through the model.
func TestDriverRunsAnEpoch(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	m := &rounds{}
	d, drains := newDriver(m, tracker.Options{Epochs: 1, Commits: true, Evaluate: true, Validate: true, Higher: true, Barrier: true})
	acts, err := d.Step(ctx, tracker.Started{Now: now})
	if err != nil || len(acts) != 1 {
		t.Fatalf("Started: %v, %v; want one Open", acts, err)
	}
	if _, ok := acts[0].(tracker.Open); !ok {
		t.Fatalf("Started: %v; want an Open", acts)
	}
	if _, err := d.Step(ctx, tracker.BatchTrained{Now: now, Samples: 10}); err != nil {
		t.Fatal(err)
	}
	acts, err = d.Step(ctx, tracker.EpochEnded{Now: now})
	if err != nil || len(acts) != 0 {
		t.Fatalf("EpochEnded: %v, %v; want the run done", acts, err)
	}
	got := strings.Join(m.log, "; ")
	if want := "commit epoch 1 batch 1; validate epoch 1; barrier; evaluate epoch 1"; got != want || *drains != 1 {
		t.Fatalf("the epoch's end carried out %q and %d drains; want %q and the drain before the final evaluation", got, *drains, want)
	}
}

// TestDriverFailsWhatTheModelCannotDo: a model without Rounds fails a run
// whose tracker asks for the final barrier, instead of skipping it.
func TestDriverFailsWhatTheModelCannotDo(t *testing.T) {
	d, _ := newDriver(&steps{}, tracker.Options{Epochs: 1})
	for _, a := range []tracker.Action{tracker.Barrier{}, tracker.Reopen{}, tracker.LeaveRound{}} {
		err := d.exec(context.Background(), a)
		if err == nil || !strings.Contains(err.Error(), "test: unexpected action") {
			t.Fatalf("%T on a model without Rounds: %v, want an error", a, err)
		}
	}
}

// TestDriverStopsAtTheFirstError: a commit that fails ends the step with
// its error, and nothing after it is carried out.
func TestDriverStopsAtTheFirstError(t *testing.T) {
	bad := errors.New("the store is gone")
	m := &steps{commitErr: bad}
	d, _ := newDriver(m, tracker.Options{Epochs: 1, Commits: true, Evaluate: true})
	now := time.Unix(1000, 0)
	if _, err := d.Step(context.Background(), tracker.Started{Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Step(context.Background(), tracker.BatchTrained{Now: now, Samples: 10}); err != nil {
		t.Fatal(err)
	}
	_, err := d.Step(context.Background(), tracker.EpochEnded{Now: now})
	if !errors.Is(err, bad) {
		t.Fatalf("EpochEnded with a failing commit: %v, want its error", err)
	}
	if got := strings.Join(m.log, "; "); strings.Contains(got, "evaluate") {
		t.Fatalf("carried out after the failed commit: %q", got)
	}
}

// TestDriverStoppedCommitsOnALiveContext: a stopped run's commit runs
// under a context of its own although the run's has ended, and Stopped
// returns the checkpoint it committed with the stop's cause.
func TestDriverStoppedCommitsOnALiveContext(t *testing.T) {
	m := &steps{}
	d, _ := newDriver(m, tracker.Options{Epochs: 2, Commits: true})
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Unix(1000, 0)
	if _, err := d.Step(ctx, tracker.Started{Now: now}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := d.Step(ctx, tracker.BatchTrained{Now: now, Samples: 10}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	cp, err := d.Stopped(ctx, context.Canceled, time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Stopped: %v, want the stop's cause", err)
	}
	if cp == nil || cp.Batch != 3 || cp.Epoch != 1 {
		t.Fatalf("Stopped committed %+v, want epoch 1 after 3 batches", cp)
	}
	if n := len(m.ctxErr); n == 0 || m.ctxErr[n-1] != nil {
		t.Fatalf("the stop's commit ran on an ended context: %v", m.ctxErr)
	}
}

// TestDriverPinsOnAStoppedRun: a run stopped while it validated (its
// context ended before the better figure came back) still pins the best
// model, on a context of its own: the stop's checkpoint will carry that
// best, and a best without its snapshot could not be rolled back to.
func TestDriverPinsOnAStoppedRun(t *testing.T) {
	m := &steps{}
	d, _ := newDriver(m, tracker.Options{Epochs: 2, Commits: true, EvalEvery: 2, Validate: true, Higher: true, KeepBest: true})
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Unix(1000, 0)
	if _, err := d.Step(ctx, tracker.Started{Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Step(ctx, tracker.BatchTrained{Now: now, Samples: 10}); err != nil {
		t.Fatal(err)
	}
	cancel() // as a stop that comes with the validation
	if _, err := d.Step(ctx, tracker.BatchTrained{Now: now, Samples: 10}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.log, ", "); got != "validate batch 2, pin" || m.ctxErr[len(m.ctxErr)-1] != nil {
		t.Fatalf("steps %q, the pin's context %v", got, m.ctxErr)
	}
}
