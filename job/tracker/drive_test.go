package tracker

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestStepExecAndEpochs drives a run of two epochs as a driver does:
// StepExec executes every action but Open, Epochs opens each epoch once,
// in order, and the run ends after the final evaluation.
func TestStepExecAndEpochs(t *testing.T) {
	tk := New(Options{Epochs: 2, Commits: true, Evaluate: true})
	var done []string
	exec := func(a Action) (Event, error) {
		done = append(done, fmt.Sprintf("%T", a))
		return nil, nil
	}
	now := time.Unix(0, 0)
	acts, err := tk.StepExec(Started{Now: now}, exec)
	if err != nil {
		t.Fatal(err)
	}
	var opened []int
	err = Epochs(acts, func(o Open) ([]Action, error) {
		opened = append(opened, o.Epoch)
		if _, err := tk.StepExec(BatchTrained{Now: now, Samples: 3}, exec); err != nil {
			return nil, err
		}
		return tk.StepExec(EpochEnded{Now: now}, exec)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opened, []int{1, 2}) {
		t.Fatalf("epochs opened %v, want [1 2]", opened)
	}
	want := []string{"tracker.Commit", "tracker.Evaluate", "tracker.Commit", "tracker.Drain", "tracker.Evaluate", "tracker.Done"}
	if !slices.Equal(done, want) {
		t.Fatalf("executed %v, want %v", done, want)
	}
	if n, _ := tk.Applied(); n != 6 {
		t.Fatalf("applied %d, want 6", n)
	}

	// An exec error stops at once; Epochs refuses anything but one Open.
	boom := errors.New("boom")
	tk = New(Options{Epochs: 1, Commits: true})
	if _, err := tk.StepExec(Started{Now: now}, exec); err != nil {
		t.Fatal(err)
	}
	tk.StepExec(BatchTrained{Now: now, Samples: 1}, exec)
	if _, err := tk.StepExec(EpochEnded{Now: now}, func(Action) (Event, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("StepExec with a failing exec = %v, want boom", err)
	}
	if err := Epochs([]Action{Open{Epoch: 1}, Commit{}}, nil); err == nil {
		t.Fatal("Epochs took an Open followed by other actions")
	}
}

// TestStepExecValidates: a Validate answered by exec is applied at once,
// and the Open that follows it is returned, as after an epoch's end.
func TestStepExecValidates(t *testing.T) {
	tk := New(Options{Epochs: 3, Validate: true, Higher: true, Patience: 1})
	now := time.Unix(0, 0)
	figures := []float64{0.5, 0.6, 0.55}
	var done []string
	exec := func(a Action) (Event, error) {
		done = append(done, fmt.Sprintf("%T", a))
		if _, ok := a.(Validate); ok {
			v := figures[0]
			figures = figures[1:]
			return Validated{Now: now, Value: v}, nil
		}
		return nil, nil
	}
	acts, err := tk.StepExec(Started{Now: now}, exec)
	if err != nil {
		t.Fatal(err)
	}
	var opened []int
	err = Epochs(acts, func(o Open) ([]Action, error) {
		opened = append(opened, o.Epoch)
		return tk.StepExec(EpochEnded{Now: now}, exec)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opened, []int{1, 2, 3}) || len(figures) != 0 {
		t.Fatalf("epochs opened %v (want [1 2 3]), figures left %v", opened, figures)
	}
	if b := tk.Best(); b == nil || b.Value != 0.6 || b.When != "epoch 2" || b.Since != 1 {
		t.Fatalf("best %+v, want 0.6 at epoch 2, since 1", b)
	}
	want := []string{"tracker.Validate", "tracker.Validate", "tracker.Validate", "tracker.Drain", "tracker.Done"}
	if !slices.Equal(done, want) {
		t.Fatalf("executed %v, want %v", done, want)
	}
}

// TestStepNamesEventTypes: Step's errors name the event's type as %T
// does, a nil event included.
func TestStepNamesEventTypes(t *testing.T) {
	tk := New(Options{Epochs: 1})
	for _, c := range []struct {
		ev   Event
		want string
	}{{BatchTrained{}, "tracker: tracker.BatchTrained before Started"}, {nil, "tracker: <nil> before Started"}} {
		if _, err := tk.Step(c.ev); err == nil || err.Error() != c.want {
			t.Errorf("Step(%T) = %v, want %q", c.ev, err, c.want)
		}
	}
}
