package ams

import (
	"errors"
	"math"
	"testing"
)

// TestLRScheduleScale: warm-up, then each decay, at points worked by hand.
func TestLRScheduleScale(t *testing.T) {
	for _, c := range []struct {
		s    LRSchedule
		t    int64
		want float64
	}{
		{LRSchedule{}, 1, 1},
		{LRSchedule{WarmupSteps: 10}, 1, 0.1},
		{LRSchedule{WarmupSteps: 10}, 10, 1},
		{LRSchedule{WarmupSteps: 10}, 1000, 1},
		{LRSchedule{WarmupSteps: 10, Decay: DecayLinear, DecaySteps: 100}, 60, 0.5},
		{LRSchedule{WarmupSteps: 10, Decay: DecayLinear, DecaySteps: 100}, 500, 0},
		{LRSchedule{Decay: DecayLinear, DecaySteps: 100, MinScale: 0.2}, 90, 0.2},
		{LRSchedule{Decay: DecayCosine, DecaySteps: 100}, 50, 0.5},
		{LRSchedule{Decay: DecayCosine, DecaySteps: 100, MinScale: 0.1}, 100, 0.1},
		{LRSchedule{Decay: DecayCosine, DecaySteps: 100, MinScale: 0.1}, 1000, 0.1},
		{LRSchedule{Decay: DecayExponential, DecaySteps: 100}, 200, 0.25},
		{LRSchedule{Decay: DecayExponential, DecaySteps: 100, MinScale: 0.3}, 200, 0.3},
	} {
		c.s.EnsureDefaults()
		if got := c.s.Scale(c.t); math.Abs(float64(got)-c.want) > 1e-6 {
			t.Errorf("%+v at step %d: %v, want %v", c.s, c.t, got, c.want)
		}
	}
	for _, bad := range []LRSchedule{{Decay: "step"}, {Decay: DecayLinear}, {DecaySteps: 5}, {WarmupSteps: -1}, {MinScale: 1}} {
		bad.EnsureDefaults()
		if err := bad.Validate(); !errors.Is(err, ErrBadSpec) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestDenseSchedule: a scheduled dense variable's k-th update moves it by
// the optimizer's rate times Scale(k); its step is part of its state, so
// a variable loaded from that state goes on at the next step.
func TestDenseSchedule(t *testing.T) {
	spec := DenseSpec{Name: "d", Size: 3, Optimizer: OptimizerSpec{Name: OptSGD, LR: 0.1},
		Schedule: LRSchedule{WarmupSteps: 4, Decay: DecayLinear, DecaySteps: 4}}
	v, err := NewDenseVar(spec, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Set([]float32{0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	g := []float32{1, 2, -1}
	want := []float64{0, 0, 0}
	for step := int64(1); step <= 6; step++ {
		if step == 4 { // a restore: the values and the state, step included, into a new variable
			w, _ := NewDenseVar(spec, 0, 3)
			if err := w.Load(v.Values(), v.State()); err != nil {
				t.Fatal(err)
			}
			v = w
		}
		if err := v.Apply(g); err != nil {
			t.Fatal(err)
		}
		s := float64(spec.Schedule.Scale(step))
		for i := range want {
			want[i] -= 0.1 * s * float64(g[i])
		}
		for i, x := range v.Values() {
			if math.Abs(float64(x)-want[i]) > 1e-6 {
				t.Fatalf("after step %d: values %v, want %v", step, v.Values(), want)
			}
		}
	}
}
