package client_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
)

// TestNonFiniteOverTheWire: over real gRPC, a push whose gradients hold a
// NaN and an Inf among good rows succeeds; a table that refuses keeps the
// bad rows as they were and applies the good ones, a table that clips
// applies them clipped, and a dense range whose gradient holds a NaN is
// left as it was while the other shard's range is applied. The shards'
// stats count each, and a warm start's values holding a NaN or Inf are
// refused with ams.ErrNonFinite (or clipped, where the table clips).
func TestNonFiniteOverTheWire(t *testing.T) {
	ctx := context.Background()
	m, _ := startShards(t, 2, 1)
	c := newClient(t, m)
	sgd := ams.OptimizerSpec{Name: ams.OptSGD, LR: 1}
	zeros := ams.InitSpec{Kind: ams.InitZeros}
	tables := []ams.TableSpec{
		{Name: "refuse", Dim: 2, Optimizer: sgd, Init: zeros},
		{Name: "clip", Dim: 2, Optimizer: sgd, Init: zeros, NonFinite: ams.NonFiniteClip, NonFiniteBound: 5},
	}
	const n = 10
	init := make([]float32, n)
	dense := client.Dense{Spec: ams.DenseSpec{Name: "mlp", Size: n, Optimizer: sgd}, Init: init}
	if err := c.Declare(ctx, tables, []client.Dense{dense}); err != nil {
		t.Fatal(err)
	}
	ids := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	ones := make([]float32, 2*len(ids))
	for i := range ones {
		ones[i] = 1
	}
	if err := c.Push(ctx, []client.Table{{Name: "refuse", IDs: ids, Rows: ones}, {Name: "clip", IDs: ids, Rows: ones}}, nil); err != nil {
		t.Fatal(err)
	}
	// Rows 2 (id 3) and 5 (id 6) are bad: a NaN, an Inf.
	grads := slices.Clone(ones)
	grads[2*2+1] = float32(math.NaN())
	grads[5*2] = float32(math.Inf(1))
	dgrad := make([]float32, n)
	for i := range dgrad {
		dgrad[i] = 1
	}
	lo, hi := ams.DenseRange(n, 0, 2) // shard 0's range gets the NaN
	dgrad[lo] = float32(math.NaN())
	err := c.Push(ctx, []client.Table{{Name: "refuse", IDs: ids, Rows: grads}, {Name: "clip", IDs: ids, Rows: grads}},
		[]client.Vector{{Name: "mlp", Values: dgrad}})
	if err != nil {
		t.Fatalf("a push with non-finite gradients failed: %v", err)
	}
	got := make([]float32, 2*len(ids))
	if err := c.Pull(ctx, []client.Table{{Name: "refuse", IDs: ids, Rows: got}}, nil, false); err != nil {
		t.Fatal(err)
	}
	want := []float32{-2, -2, -2, -2, -1, -1, -2, -2, -2, -2, -1, -1, -2, -2, -2, -2}
	if !slices.Equal(got, want) {
		t.Fatalf("refuse table after the push: %v, want %v (the bad rows as they were)", got, want)
	}
	if err := c.Pull(ctx, []client.Table{{Name: "clip", IDs: ids, Rows: got}}, nil, false); err != nil {
		t.Fatal(err)
	}
	want = []float32{-2, -2, -2, -2, -2, -1, -2, -2, -2, -2, -6, -2, -2, -2, -2, -2}
	if !slices.Equal(got, want) {
		t.Fatalf("clip table after the push: %v, want %v (NaN as 0, Inf as 5)", got, want)
	}
	dv := make([]float32, n)
	if err := c.PullDense(ctx, "mlp", dv); err != nil {
		t.Fatal(err)
	}
	for i, v := range dv {
		if w := float32(-1); i >= lo && i < hi {
			w = 0 // shard 0 refused its range
			if v != w {
				t.Fatalf("dense[%d] = %v, want %v (its range refused)", i, v, w)
			}
		} else if v != w {
			t.Fatalf("dense[%d] = %v, want %v (the other shard's range applied)", i, v, w)
		}
	}

	checkNonFiniteLoads(t, c, n)
	checkNonFiniteCounters(t, c)
}

// checkNonFiniteLoads: a warm start's values are refused whole on a
// refusing table and clipped on a clipping one; SetDense with a NaN is
// refused.
func checkNonFiniteLoads(t *testing.T, c *client.Client, n int) {
	t.Helper()
	ctx := context.Background()
	vals := []float32{0.5, 0.5, float32(math.Inf(-1)), 0.5}
	if err := c.LoadRows(ctx, "refuse", 2, []uint64{100, 101}, vals, nil); !errors.Is(err, ams.ErrNonFinite) || !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("load of a -Inf into a refusing table = %v, want ams.ErrNonFinite", err)
	}
	if err := c.LoadRows(ctx, "clip", 2, []uint64{100, 101}, vals, nil); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	if err := c.Pull(ctx, []client.Table{{Name: "clip", IDs: []uint64{100, 101}, Rows: got}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if want := []float32{0.5, 0.5, -5, 0.5}; !slices.Equal(got, want) {
		t.Fatalf("clip table after a load: %v, want %v", got, want)
	}
	dvals := make([]float32, n)
	dvals[n-1] = float32(math.NaN())
	if err := c.SetDense(ctx, "mlp", dvals); !errors.Is(err, ams.ErrNonFinite) {
		t.Fatalf("SetDense with a NaN = %v, want ams.ErrNonFinite", err)
	}

}

// checkNonFiniteCounters: the shards' stats count every refused and
// clipped row and vector of TestNonFiniteOverTheWire.
func checkNonFiniteCounters(t *testing.T, c *client.Client) {
	t.Helper()
	usage, dusage, err := c.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ams.Counters{}
	for _, u := range usage {
		byName[u.Name] = u.Counters
	}
	if r := byName["refuse"]; r.NonFiniteRefused != 2 || r.NonFiniteClipped != 0 || r.Created != 8 {
		t.Errorf("refuse table's counters %+v, want 2 refused, 8 created", r)
	}
	if r := byName["clip"]; r.NonFiniteClipped != 3 || r.NonFiniteRefused != 0 {
		t.Errorf("clip table's counters %+v, want 3 clipped (2 pushed, 1 loaded)", r)
	}
	if len(dusage) != 1 || dusage[0] != (ams.DenseUsage{Name: "mlp", NonFiniteRefused: 1}) {
		t.Errorf("dense usage %+v, want mlp with 1 refused", dusage)
	}
}
