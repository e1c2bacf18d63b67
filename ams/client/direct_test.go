package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
)

// countingPlane is a shard's real service, counting the calls that reach
// it directly.
type countingPlane struct {
	client.DataPlane
	pulls, pushes *atomic.Int64
}

func (p countingPlane) Pull(ctx context.Context, req *amspb.PullRequest) (*amspb.PullResponse, error) {
	p.pulls.Add(1)
	return p.DataPlane.Pull(ctx, req)
}

func (p countingPlane) Push(ctx context.Context, req *amspb.PushRequest) (*amspb.PushResponse, error) {
	p.pushes.Add(1)
	return p.DataPlane.Push(ctx, req)
}

// countingLocal is a shard's real in-process data plane (shard.Local),
// counting the calls that reach it; it takes the caller's buffers.
type countingLocal struct {
	countingPlane
	l *shard.Local
}

func (p countingLocal) PullRows(ctx context.Context, v uint64, t []ams.TableRequest, d []ams.DenseRequest, create bool) error {
	p.pulls.Add(1)
	return p.l.PullRows(ctx, v, t, d, create)
}

func (p countingLocal) PushRows(ctx context.Context, v uint64, o ams.Origin, t []ams.TableRequest, d []ams.DenseRequest) error {
	p.pushes.Add(1)
	return p.l.PushRows(ctx, v, o, t, d)
}

// resolver resolves the shards it was given by address.
type resolver map[string]client.DataPlane

func (r resolver) Local(addr string) client.DataPlane { return r[addr] }

// Kinds of direct calls a resolver offers.
const (
	messages = "messages" // the service's Pull and Push (client.DataPlane)
	buffers  = "buffers"  // shard.Local: on the caller's buffers (client.LocalShard)
)

// localClient returns a NewLocal client of m that calls the shards whose
// index is in direct in this process (kind messages or buffers), and the
// counters of those calls.
func localClient(t *testing.T, m *ams.ShardMap, shards []*shard.Shard, kind string, direct ...int) (*client.Client, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var pulls, pushes atomic.Int64
	r := resolver{}
	for _, i := range direct {
		cp := countingPlane{DataPlane: shard.NewService(shards[i]), pulls: &pulls, pushes: &pushes}
		if kind == buffers {
			l := shard.NewLocal(shards[i])
			r[m.Addrs[i]] = countingLocal{countingPlane: countingPlane{DataPlane: l, pulls: &pulls, pushes: &pushes}, l: l}
		} else {
			r[m.Addrs[i]] = cp
		}
	}
	c, err := client.NewLocal(m, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &pulls, &pushes
}

// TestDirectMatchesGRPC runs the same pulls and pushes on two clusters
// started alike, one through gRPC and one through direct calls to some or
// all of its shards: every pulled value must be the same, bit for bit.
func TestDirectMatchesGRPC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   string
		direct []int
	}{
		{"messages, all shards direct", messages, []int{0, 1}},
		{"messages, shard 1 direct, shard 0 over gRPC", messages, []int{1}},
		{"buffers, all shards direct", buffers, []int{0, 1}},
		{"buffers, shard 0 direct, shard 1 over gRPC", buffers, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m1, _ := startShards(t, 2, 1)
			m2, shards2 := startShards(t, 2, 1)
			viaGRPC := newClient(t, m1)
			viaDirect, pulls, pushes := localClient(t, m2, shards2, tc.kind, tc.direct...)
			specs := []ams.TableSpec{
				{Name: "emb", Dim: 5, Optimizer: ams.OptimizerSpec{Name: "adagrad", LR: 0.1}, Init: ams.InitSpec{Kind: "uniform", Scale: 0.1, Seed: 7}},
				{Name: "user", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "uniform", Scale: 1, Seed: 9}},
			}
			dense := []client.Dense{{Spec: ams.DenseSpec{Name: "mlp", Size: 37, Optimizer: ams.OptimizerSpec{Name: "adam", LR: 0.01}},
				Init: make([]float32, 37)}}
			for _, c := range []*client.Client{viaGRPC, viaDirect} {
				if err := c.Declare(ctx, specs, dense); err != nil {
					t.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for step := 0; step < 20; step++ {
				ids := [2][]uint64{make([]uint64, 1+rng.IntN(300)), make([]uint64, rng.IntN(20))}
				for ti := range ids {
					for k := range ids[ti] {
						ids[ti][k] = rng.Uint64N(1000) * 0x9E3779B97F4A7C15
					}
					slices.Sort(ids[ti])
					ids[ti] = slices.Compact(ids[ti])
				}
				var got [2][][]float32
				for ci, c := range []*client.Client{viaGRPC, viaDirect} {
					tables := []client.Table{
						{Name: "emb", IDs: ids[0], Rows: make([]float32, 5*len(ids[0]))},
						{Name: "user", IDs: ids[1], Rows: make([]float32, 2*len(ids[1]))},
					}
					params := make([]float32, 37)
					if err := c.Pull(ctx, tables, []client.Vector{{Name: "mlp", Values: params}}, true); err != nil {
						t.Fatalf("step %d: pull: %v", step, err)
					}
					got[ci] = [][]float32{tables[0].Rows, tables[1].Rows, params}
					grads := []client.Table{
						{Name: "emb", IDs: ids[0], Rows: slices.Clone(tables[0].Rows)},
						{Name: "user", IDs: ids[1], Rows: slices.Clone(tables[1].Rows)},
					}
					g := make([]float32, 37)
					for k := range g {
						g[k] = float32(k%5) - 2
					}
					if err := c.Push(ctx, grads, []client.Vector{{Name: "mlp", Values: g}}); err != nil {
						t.Fatalf("step %d: push: %v", step, err)
					}
				}
				for k := range got[0] {
					if !slices.Equal(got[0][k], got[1][k]) {
						t.Fatalf("step %d: part %d differs between gRPC and direct calls", step, k)
					}
				}
			}
			if want := int64(20 * len(tc.direct)); pulls.Load() != want || pushes.Load() != want {
				t.Fatalf("%d pulls and %d pushes reached the shards directly, want %d of each", pulls.Load(), pushes.Load(), want)
			}
		})
	}
}

// TestDirectErrors checks that the direct path fails as gRPC does: a stale
// version, a closed shard and an ended context.
func TestDirectErrors(t *testing.T) {
	for _, kind := range []string{messages, buffers} {
		t.Run(kind, func(t *testing.T) { testDirectErrors(t, kind) })
	}
}

func testDirectErrors(t *testing.T, kind string) {
	ctx := context.Background()
	m, shards := startShards(t, 2, 1)
	c, _, _ := localClient(t, m, shards, kind, 0, 1)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	one := func() []client.Table {
		return []client.Table{{Name: "emb", IDs: []uint64{1, 2, 3}, Rows: make([]float32, 6)}}
	}

	stale := *m
	stale.Version = 2
	sc, _, _ := localClient(t, &stale, shards, kind, 0, 1)
	vec := []client.Vector{{Name: "x", Values: make([]float32, 1)}}
	if err := sc.Pull(ctx, nil, vec, true); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("stale pull = %v, want ams.ErrStaleVersion", err)
	}
	if err := sc.Push(ctx, nil, vec); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("stale push = %v, want ams.ErrStaleVersion", err)
	}
	if err := c.Pull(ctx, []client.Table{{Name: "nope", IDs: []uint64{1}, Rows: make([]float32, 2)}}, nil, true); !errors.Is(err, ams.ErrUnknownTable) {
		t.Fatalf("pull of an unknown table = %v, want ErrUnknownTable", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Pull(cctx, one(), nil, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("pull with a cancelled context = %v, want context.Canceled", err)
	}

	shards[1].Close()
	if err := c.Pull(ctx, one(), nil, true); !errors.Is(err, ams.ErrUnavailable) {
		t.Fatalf("pull from a closed shard = %v, want ErrUnavailable", err)
	}
	if err := c.Push(ctx, one(), nil); !errors.Is(err, ams.ErrUnavailable) {
		t.Fatalf("push to a closed shard = %v, want ErrUnavailable", err)
	}
}

// TestDirectSyncRound runs a sync-mode round through direct calls: the
// shard keeps the round's state entry, not the caller's buffer, which the
// caller reuses as soon as the call returns.
func TestDirectSyncRound(t *testing.T) {
	ctx := context.Background()
	m, shards := startShards(t, 1, 1)
	c, pulls, pushes := localClient(t, m, shards, buffers, 0)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	r := client.Round{Epoch: 0, Iter: 0, Worker: 0, Workers: 1}
	route := c.NewRoute()
	if err := route.Add("emb", []uint64{5}); err != nil {
		t.Fatal(err)
	}
	rows := [][]float32{make([]float32, 2)}
	if pending, err := c.PullRound(ctx, r, route, rows, nil); err != nil || pending {
		t.Fatalf("pull round 0: pending %v, %v", pending, err)
	}
	before := slices.Clone(rows[0])
	val := []byte("checkpoint-a")
	if err := c.PushRound(ctx, r, route, [][]float32{{1, -1}}, nil, []client.StateEntry{{Key: "ckpt/w0", Value: val}}); err != nil {
		t.Fatal(err)
	}
	copy(val, "XXXXXXXXXXXX") // the caller reuses its buffer
	r.Iter = 1
	if pending, err := c.PullRound(ctx, r, route, rows, nil); err != nil || pending {
		t.Fatalf("pull round 1: pending %v, %v", pending, err)
	}
	if want := []float32{before[0] - 1, before[1] + 1}; !slices.Equal(rows[0], want) {
		t.Fatalf("row after round 0 = %v, want %v", rows[0], want)
	}
	got, err := c.GetState(ctx, "ckpt/")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].Value) != "checkpoint-a" {
		t.Fatalf("state after the round = %q, want the value as pushed", got)
	}
	if pulls.Load() != 2 || pushes.Load() != 1 {
		t.Fatalf("%d pulls and %d pushes went direct, want 2 and 1", pulls.Load(), pushes.Load())
	}
}

// TestLocalRefuses calls shard.Local with buffers that do not fit: each
// call is refused as a bad request (ams.ErrBadRequest, no gRPC status)
// and changes nothing.
func TestLocalRefuses(t *testing.T) {
	ctx := context.Background()
	m, shards := startShards(t, 1, 1)
	c := newClient(t, m)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 2}},
		[]client.Dense{{Spec: ams.DenseSpec{Name: "mlp", Size: 3}, Init: make([]float32, 3)}}); err != nil {
		t.Fatal(err)
	}
	l := shard.NewLocal(shards[0])
	for _, tc := range []struct {
		name   string
		tables []ams.TableRequest
		dense  []ams.DenseRequest
	}{
		{"position past the buffer", []ams.TableRequest{{Table: "emb", IDs: []uint64{1, 2}, Pos: []int32{0, 2}, Rows: make([]float32, 4)}}, nil},
		{"negative position", []ams.TableRequest{{Table: "emb", IDs: []uint64{1}, Pos: []int32{-1}, Rows: make([]float32, 4)}}, nil},
		{"fewer positions than ids", []ams.TableRequest{{Table: "emb", IDs: []uint64{1, 2}, Pos: []int32{0}, Rows: make([]float32, 4)}}, nil},
		{"buffer not whole rows", []ams.TableRequest{{Table: "emb", IDs: []uint64{1}, Pos: []int32{0}, Rows: make([]float32, 3)}}, nil},
		{"rows without positions, wrong length", []ams.TableRequest{{Table: "emb", IDs: []uint64{1}, Rows: make([]float32, 4)}}, nil},
		{"dense buffer not the whole vector", nil, []ams.DenseRequest{{Name: "mlp", Values: make([]float32, 2)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := l.PullRows(ctx, 1, tc.tables, tc.dense, true); !errors.Is(err, ams.ErrBadRequest) {
				t.Errorf("pull = %v, want ams.ErrBadRequest", err)
			}
			if err := l.PushRows(ctx, 1, ams.Origin{}, tc.tables, tc.dense); !errors.Is(err, ams.ErrBadRequest) {
				t.Errorf("push = %v, want ams.ErrBadRequest", err)
			}
		})
	}
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Tables[0].Rows != 0 {
		t.Fatalf("refused calls created %d rows", st[0].Tables[0].Rows)
	}
	if err := l.PullRows(ctx, 1, nil, []ams.DenseRequest{{Name: "nope", Values: make([]float32, 3)}}, false); !errors.Is(err, ams.ErrUnknownDense) {
		t.Fatalf("pull of an unknown vector = %v, want ams.ErrUnknownDense", err)
	}
}
