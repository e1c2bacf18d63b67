package ams

import (
	"errors"
	"testing"
)

func TestDenseVar(t *testing.T) {
	spec := DenseSpec{Name: "mlp", Size: 100_000, Optimizer: OptimizerSpec{Name: "adam", LR: 0.001}}
	lo, hi := DenseRange(spec.Size, 1, 3)
	v, err := NewDenseVar(spec, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	n := hi - lo
	if gl, gh := v.Bounds(); gl != lo || gh != hi || len(v.Values()) != n || len(v.State()) != 2*n+1 {
		t.Fatalf("bounds [%d,%d) values %d state %d", gl, gh, len(v.Values()), len(v.State()))
	}
	if v.Initialized() {
		t.Fatal("initialized before Set")
	}
	grad := make([]float32, n)
	for i := range grad {
		grad[i] = float32(i%7) - 3
	}
	if err := v.Apply(grad); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("Apply before Set: %v", err)
	}
	init := make([]float32, n)
	for i := range init {
		init[i] = float32(i) * 1e-5
	}
	if err := v.Set(init[:n-1]); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("Set with short values: %v", err)
	}
	if err := v.Set(init); err != nil {
		t.Fatal(err)
	}
	init[0] = 42 // Set copied
	if v.Values()[0] == 42 {
		t.Fatal("Set kept the caller's slice")
	}
	init[0] = 0
	// Against the optimizer applied to a plain copy: one long row.
	opt, _ := spec.Optimizer.New()
	w := append([]float32(nil), init...)
	st := make([]float32, opt.StateWidth(n))
	opt.InitState(st)
	for range 3 {
		if err := v.Apply(grad); err != nil {
			t.Fatal(err)
		}
		opt.Apply(w, st, grad)
	}
	for i := range w {
		if v.Values()[i] != w[i] {
			t.Fatalf("value %d = %v, want %v", i, v.Values()[i], w[i])
		}
	}
	if v.State()[2*n] != 3 {
		t.Fatalf("dense Adam step count %v, want 3", v.State()[2*n])
	}
	if err := v.Apply(grad[:1]); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("Apply with short gradient: %v", err)
	}
	// Load restores values and state; an empty state resets it.
	u, _ := NewDenseVar(spec, lo, hi)
	if err := u.Load(v.Values(), v.State()); err != nil {
		t.Fatal(err)
	}
	if !u.Initialized() || u.State()[2*n] != 3 || u.Values()[5] != v.Values()[5] {
		t.Fatal("Load did not restore")
	}
	if err := u.Load(v.Values(), nil); err != nil || u.State()[2*n] != 0 {
		t.Fatalf("Load without state: %v, t=%v", err, u.State()[2*n])
	}
	if err := u.Load(v.Values(), v.State()[:3]); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("Load with short state: %v", err)
	}
}

func TestNewDenseVarErrors(t *testing.T) {
	for _, tc := range []struct {
		spec   DenseSpec
		lo, hi int
	}{
		{DenseSpec{Name: "d", Size: 10}, -1, 5},
		{DenseSpec{Name: "d", Size: 10}, 6, 5},
		{DenseSpec{Name: "d", Size: 10}, 0, 11},
		{DenseSpec{Name: "", Size: 10}, 0, 10},
		{DenseSpec{Name: "d", Size: 10, Optimizer: OptimizerSpec{Name: "lamb"}}, 0, 10},
	} {
		if _, err := NewDenseVar(tc.spec, tc.lo, tc.hi); !errors.Is(err, ErrBadSpec) {
			t.Errorf("NewDenseVar(%+v, %d, %d) = %v, want ErrBadSpec", tc.spec, tc.lo, tc.hi, err)
		}
	}
	// An empty part (more shards than values) is allowed.
	v, err := NewDenseVar(DenseSpec{Name: "d", Size: 2}, 2, 2)
	if err != nil || len(v.Values()) != 0 {
		t.Fatalf("empty part: %v", err)
	}
	if err := v.Set(nil); err != nil {
		t.Fatal(err)
	}
	if err := v.Apply(nil); err != nil {
		t.Fatal(err)
	}
}
