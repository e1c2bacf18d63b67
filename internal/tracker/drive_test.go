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
	exec := func(a Action) error {
		done = append(done, fmt.Sprintf("%T", a))
		return nil
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
	if _, err := tk.StepExec(EpochEnded{Now: now}, func(Action) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("StepExec with a failing exec = %v, want boom", err)
	}
	if err := Epochs([]Action{Open{Epoch: 1}, Commit{}}, nil); err == nil {
		t.Fatal("Epochs took an Open followed by other actions")
	}
}
