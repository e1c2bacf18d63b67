package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
)

// TestRouteMatchesTables trains two clusters started alike with the same
// batches: one through Pull and Push, which route every call anew, and
// one through a single Route, reset and refilled for every batch and
// shared by the batch's pull and push. Every pulled value must be the
// same, bit for bit, over gRPC and over both direct paths.
func TestRouteMatchesTables(t *testing.T) {
	for _, kind := range []string{"grpc", messages, buffers} {
		t.Run(kind, func(t *testing.T) { testRouteMatchesTables(t, kind) })
	}
}

func testRouteMatchesTables(t *testing.T, kind string) {
	ctx := context.Background()
	clients := make([]*client.Client, 2)
	for i := range clients {
		m, shards := startShards(t, 2, 1)
		if kind == "grpc" {
			clients[i] = newClient(t, m)
		} else {
			clients[i], _, _ = localClient(t, m, shards, kind, 0, 1)
		}
	}
	specs := []ams.TableSpec{
		{Name: "emb", Dim: 3, Optimizer: ams.OptimizerSpec{Name: "adagrad", LR: 0.1}, Init: ams.InitSpec{Kind: "uniform", Scale: 0.1, Seed: 7}},
		{Name: "user", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "uniform", Scale: 1, Seed: 9}},
	}
	dense := []client.Dense{{Spec: ams.DenseSpec{Name: "mlp", Size: 11, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.5}},
		Init: make([]float32, 11)}}
	for _, c := range clients {
		if err := c.Declare(ctx, specs, dense); err != nil {
			t.Fatal(err)
		}
	}
	route := clients[1].NewRoute()
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 12 {
		// Batches grow and shrink, so the route reuses longer and shorter
		// lists than the last batch's.
		ids := [2][]uint64{randomIDs(rng, 1+rng.IntN(400)), randomIDs(rng, rng.IntN(30))}
		route.Reset()
		for ti, name := range []string{"emb", "user"} {
			if err := route.Add(name, ids[ti]); err != nil {
				t.Fatal(err)
			}
		}
		var got [2][][]float32
		for ci, c := range clients {
			rows := [][]float32{make([]float32, 3*len(ids[0])), make([]float32, 2*len(ids[1]))}
			params := make([]float32, 11)
			vec := []client.Vector{{Name: "mlp", Values: params}}
			var err error
			if ci == 0 {
				err = c.Pull(ctx, []client.Table{{Name: "emb", IDs: ids[0], Rows: rows[0]}, {Name: "user", IDs: ids[1], Rows: rows[1]}}, vec, true)
			} else {
				err = c.PullRoute(ctx, route, rows, vec, true)
			}
			if err != nil {
				t.Fatalf("step %d: pull: %v", step, err)
			}
			got[ci] = [][]float32{rows[0], rows[1], params}
			grads := [][]float32{slices.Clone(rows[0]), slices.Clone(rows[1])}
			for k := range grads[0] {
				grads[0][k] += float32(k%7) - 3
			}
			vec = []client.Vector{{Name: "mlp", Values: slices.Clone(params)}}
			if ci == 0 {
				err = c.Push(ctx, []client.Table{{Name: "emb", IDs: ids[0], Rows: grads[0]}, {Name: "user", IDs: ids[1], Rows: grads[1]}}, vec)
			} else {
				err = c.PushRoute(ctx, route, grads, vec)
			}
			if err != nil {
				t.Fatalf("step %d: push: %v", step, err)
			}
		}
		for k := range got[0] {
			if !slices.Equal(got[0][k], got[1][k]) {
				t.Fatalf("step %d: part %d differs between Pull/Push and a reused route", step, k)
			}
		}
	}
}

// randomIDs returns up to n unique ids, sorted.
func randomIDs(rng *rand.Rand, n int) []uint64 {
	ids := make([]uint64, n)
	for k := range ids {
		ids[k] = rng.Uint64N(2000) * 0x9E3779B97F4A7C15
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// TestRouteReuseAllocs: routing a batch again on a reused route
// allocates nothing.
func TestRouteReuseAllocs(t *testing.T) {
	ctx := context.Background()
	m, _ := startShards(t, 3, 1)
	c := newClient(t, m)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 4}, {Name: "user", Dim: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := randomIDs(rng, 5000), randomIDs(rng, 300)
	r := c.NewRoute()
	batch := func() {
		r.Reset()
		if err := r.Add("emb", a); err != nil {
			t.Fatal(err)
		}
		if err := r.Add("user", b); err != nil {
			t.Fatal(err)
		}
	}
	batch()
	if n := testing.AllocsPerRun(20, batch); n != 0 {
		t.Fatalf("routing a batch on a reused route allocates %v times", n)
	}
}

// TestRouteRefusals: a route is checked against its client and the
// buffers it is used with.
func TestRouteRefusals(t *testing.T) {
	ctx := context.Background()
	m, _ := startShards(t, 2, 1)
	c, other := newClient(t, m), newClient(t, m)
	for _, cl := range []*client.Client{c, other} {
		if err := cl.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 2}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := c.NewRoute()
	if err := r.Add("nope", []uint64{1}); !errors.Is(err, ams.ErrUnknownTable) {
		t.Fatalf("Add of an undeclared table = %v, want ams.ErrUnknownTable", err)
	}
	if err := r.Add("emb", []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	for name, rows := range map[string][][]float32{
		"no buffer":        nil,
		"a short buffer":   {make([]float32, 3)},
		"too many buffers": {make([]float32, 4), make([]float32, 4)},
	} {
		if err := c.PullRoute(ctx, r, rows, nil, true); !errors.Is(err, ams.ErrDimMismatch) {
			t.Errorf("pull with %s = %v, want ams.ErrDimMismatch", name, err)
		}
		if err := c.PushRoute(ctx, r, rows, nil); !errors.Is(err, ams.ErrDimMismatch) {
			t.Errorf("push with %s = %v, want ams.ErrDimMismatch", name, err)
		}
	}
	if err := other.PullRoute(ctx, r, [][]float32{make([]float32, 4)}, nil, true); err == nil {
		t.Error("a client pulled through another client's route")
	}
}
