package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/ams/stream"
)

// startShards serves n shards over real gRPC on loopback and returns a
// shard map for them. The shards write and read snapshots and exports
// under stores only (shard.Options.Stores).
func startShards(t testing.TB, n int, version uint64, stores ...string) (*ams.ShardMap, []*shard.Shard) {
	t.Helper()
	var ids, addrs []string
	var shards []*shard.Shard
	for i := 0; i < n; i++ {
		s := shard.New(shard.Options{ID: fmt.Sprintf("ams-%d", i), Stripes: 3, Version: version, Stores: stores})
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := shard.NewGRPCServer(s)
		mux := stream.NewMux(lis, shard.StreamHandler(s), nil) // the data plane's TCP streams, as amsnode serves them
		go gs.Serve(mux)
		t.Cleanup(func() { gs.Stop(); mux.Wait(); s.Close() })
		ids = append(ids, s.ID())
		addrs = append(addrs, lis.Addr().String())
		shards = append(shards, s)
	}
	m, err := ams.NewShardMap(version, 64, ids, addrs)
	if err != nil {
		t.Fatal(err)
	}
	return m, shards
}

func newClient(t *testing.T, m *ams.ShardMap) *client.Client {
	t.Helper()
	c, err := client.New(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPullPushRoundTrip(t *testing.T) {
	m, shards := startShards(t, 2, 1)
	c := newClient(t, m)
	spec := declareRoundTrip(t, c)
	ids := make([]uint64, 200)
	for i := range ids {
		ids[i] = uint64(i) * 7919
	}
	rows := checkPullCreates(t, c, shards, spec, ids)
	checkSGDPush(t, c, ids, rows)
	checkPullWithoutCreate(t, c, spec, ids)
}

// declareRoundTrip declares tables emb (dim 4, SGD lr 0.5, uniform) and
// user (dim 2, SGD lr 1, ones) through c, and checks that declaring again
// is a no-op and a conflicting spec is refused. It returns emb's spec.
func declareRoundTrip(t *testing.T, c *client.Client) ams.TableSpec {
	ctx := context.Background()
	spec := ams.TableSpec{Name: "emb", Dim: 4, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.5},
		Init: ams.InitSpec{Kind: "uniform", Scale: 0.1, Seed: 3}}
	other := ams.TableSpec{Name: "user", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1},
		Init: ams.InitSpec{Kind: "constant", Value: 1}}
	if err := c.Declare(ctx, []ams.TableSpec{spec, other}, nil); err != nil {
		t.Fatal(err)
	}
	// Declaring again is a no-op; a conflicting spec is refused.
	if err := c.Declare(ctx, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatalf("re-declare: %v", err)
	}
	bad := spec
	bad.Dim = 8
	if err := c.Declare(ctx, []ams.TableSpec{bad}, nil); !errors.Is(err, ams.ErrConflict) {
		t.Fatalf("conflicting declare = %v, want ams.ErrConflict", err)
	}
	return spec
}

// checkPullCreates pulls ids of emb and three ids of user with create: the
// rows are the initializers' and spread over both shards. It returns emb's
// rows.
func checkPullCreates(t *testing.T, c *client.Client, shards []*shard.Shard, spec ams.TableSpec, ids []uint64) []float32 {
	ctx := context.Background()
	rows := make([]float32, len(ids)*4)
	uids := []uint64{0, 1, 2}
	urows := make([]float32, 6)
	tables := []client.Table{{Name: "emb", IDs: ids, Rows: rows}, {Name: "user", IDs: uids, Rows: urows}}
	if err := c.Pull(ctx, tables, nil, true); err != nil {
		t.Fatal(err)
	}
	// Rows come back in id order, equal to the deterministic initializer.
	want := make([]float32, 4)
	for k, id := range ids {
		spec.Init.Fill(id, want)
		for j := range want {
			if rows[k*4+j] != want[j] {
				t.Fatalf("id %d col %d: pulled %v, want init %v", id, j, rows[k*4+j], want[j])
			}
		}
	}
	for _, v := range urows {
		if v != 1 {
			t.Fatalf("user rows %v, want all 1", urows)
		}
	}
	// Both shards got rows: routing spreads ids.
	for _, s := range shards {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Tables[0].Rows == 0 {
			t.Fatalf("shard %s holds no rows of emb", st.ID)
		}
	}
	return rows
}

// checkSGDPush pushes gradients g to ids of emb, whose rows were rows: SGD
// moves them by -lr*g (lr 0.5).
func checkSGDPush(t *testing.T, c *client.Client, ids []uint64, rows []float32) {
	ctx := context.Background()
	grads := make([]float32, len(rows))
	for i := range grads {
		grads[i] = float32(i%5) - 2
	}
	if err := c.Push(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: grads}}, nil); err != nil {
		t.Fatal(err)
	}
	after := make([]float32, len(rows))
	if err := c.Pull(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: after}}, nil, false); err != nil {
		t.Fatal(err)
	}
	for i := range after {
		if want := rows[i] - 0.5*grads[i]; math.Abs(float64(after[i]-want)) > 1e-6 {
			t.Fatalf("value %d after push = %v, want %v", i, after[i], want)
		}
	}
}

// checkPullWithoutCreate checks that, without create, an unknown id reads
// as its initial value and is not created: the shards still hold ids'
// rows only.
func checkPullWithoutCreate(t *testing.T, c *client.Client, spec ams.TableSpec, ids []uint64) {
	ctx := context.Background()
	got := make([]float32, 4)
	if err := c.Pull(ctx, []client.Table{{Name: "emb", IDs: []uint64{123456789}, Rows: got}}, nil, false); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 4)
	spec.Init.Fill(123456789, want)
	if !slices.Equal(got, want) {
		t.Fatalf("missing row without create = %v, want its initial value %v", got, want)
	}
	stats, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range stats {
		total += int(s.Tables[0].Rows)
	}
	if total != len(ids) {
		t.Fatalf("rows over shards = %d, want %d", total, len(ids))
	}
}

func TestDenseSplitAcrossShards(t *testing.T) {
	ctx := context.Background()
	m, _ := startShards(t, 3, 1)
	c := newClient(t, m)
	const n = 1001
	init := make([]float32, n)
	for i := range init {
		init[i] = float32(i)
	}
	d := client.Dense{Spec: ams.DenseSpec{Name: "mlp", Size: n, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.1}}, Init: init}
	if err := c.Declare(ctx, nil, []client.Dense{d}); err != nil {
		t.Fatal(err)
	}
	// A second declaration with other initial values keeps the first.
	d2 := d
	d2.Init = make([]float32, n)
	if err := c.Declare(ctx, nil, []client.Dense{d2}); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := c.PullDense(ctx, "mlp", got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != init[i] {
			t.Fatalf("dense[%d] = %v, want %v", i, got[i], init[i])
		}
	}
	grad := make([]float32, n)
	for i := range grad {
		grad[i] = 1
	}
	if err := c.PushDense(ctx, "mlp", grad); err != nil {
		t.Fatal(err)
	}
	if err := c.PullDense(ctx, "mlp", got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if want := init[i] - 0.1; math.Abs(float64(got[i]-want)) > 1e-4 {
			t.Fatalf("dense[%d] after push = %v, want %v", i, got[i], want)
		}
	}
	// The same through the merged sparse+dense requests of a training step.
	if err := c.Push(ctx, nil, []client.Vector{{Name: "mlp", Values: grad}}); err != nil {
		t.Fatal(err)
	}
	merged := make([]float32, n)
	if err := c.Pull(ctx, nil, []client.Vector{{Name: "mlp", Values: merged}}, false); err != nil {
		t.Fatal(err)
	}
	for i := range merged {
		if want := init[i] - 0.2; math.Abs(float64(merged[i]-want)) > 1e-4 {
			t.Fatalf("dense[%d] after a merged push = %v, want %v", i, merged[i], want)
		}
	}
	// A merged pull of an unknown vector fails.
	if err := c.Pull(ctx, nil, []client.Vector{{Name: "nope", Values: merged}}, false); !errors.Is(err, ams.ErrUnknownDense) {
		t.Fatalf("merged pull of an unknown vector = %v, want ams.ErrUnknownDense", err)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	m, _ := startShards(t, 2, 1)
	c := newClient(t, m)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	// A client of another cluster version is refused, and nothing is applied.
	stale := *m
	stale.Version = 2
	sc := newClient(t, &stale)
	if err := sc.Declare(ctx, []ams.TableSpec{{Name: "emb2", Dim: 2}}, nil); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("stale declare = %v, want ams.ErrStaleVersion", err)
	}
	if err := sc.Pull(ctx, nil, []client.Vector{{Name: "x", Values: make([]float32, 1)}}, false); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("stale pull = %v, want ams.ErrStaleVersion", err)
	}
	stats, _ := c.Stats(ctx)
	if len(stats[0].Tables) != 1 {
		t.Fatalf("stale declare was applied: %v", stats[0].Tables)
	}
	// Unknown tables.
	if err := c.Pull(ctx, []client.Table{{Name: "nope", IDs: []uint64{1}, Rows: make([]float32, 2)}}, nil, true); !errors.Is(err, ams.ErrUnknownTable) {
		t.Fatalf("pull unknown table = %v, want ErrUnknownTable", err)
	}
	// Buffers that do not match ids x dim.
	if err := c.Pull(ctx, []client.Table{{Name: "emb", IDs: []uint64{1}, Rows: make([]float32, 3)}}, nil, true); !errors.Is(err, ams.ErrDimMismatch) {
		t.Fatalf("pull with bad buffer = %v, want ErrDimMismatch", err)
	}
	// A push whose dense part is bad applies nothing, its rows included.
	if err := c.Push(ctx, []client.Table{{Name: "emb", IDs: []uint64{42}, Rows: []float32{1, 1}}},
		[]client.Vector{{Name: "nope", Values: make([]float32, 4)}}); err == nil {
		t.Fatal("a push with an unknown dense vector succeeded")
	}
	stats, _ = c.Stats(ctx)
	if rows := stats[0].Tables[0].Rows + stats[1].Tables[0].Rows; rows != 0 {
		t.Fatalf("a refused push created %d rows", rows)
	}
	if err := c.PullDense(ctx, "nope", make([]float32, 4)); !errors.Is(err, ams.ErrUnknownDense) {
		t.Fatalf("pull unknown dense = %v, want ams.ErrUnknownDense", err)
	}
}

// TestConcurrentPullPush hammers one shard map from several goroutines; the
// race detector checks the stripe ownership scheme.
func TestConcurrentPullPush(t *testing.T) {
	ctx := context.Background()
	m, _ := startShards(t, 2, 1)
	c := newClient(t, m)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 8, Optimizer: ams.OptimizerSpec{Name: "adagrad", LR: 0.1}}}, nil); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			ids := make([]uint64, 300)
			for i := range ids {
				ids[i] = uint64(i*3 + g) // overlapping ids across goroutines
			}
			rows := make([]float32, len(ids)*8)
			for it := 0; it < 20; it++ {
				if err := c.Pull(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: rows}}, nil, true); err != nil {
					errs <- err
					return
				}
				if err := c.Push(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: rows}}, nil); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestDenseScheduleOverTheWire: a dense vector declared with a
// learning-rate schedule (a warm-up of 4 steps) over gRPC moves by the
// rate times the schedule's scale at each push, on every shard.
func TestDenseScheduleOverTheWire(t *testing.T) {
	ctx := context.Background()
	m, _ := startShards(t, 2, 1)
	c := newClient(t, m)
	const n = 10
	spec := ams.DenseSpec{Name: "mlp", Size: n, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.1},
		Schedule: ams.LRSchedule{WarmupSteps: 4}}
	if err := c.Declare(ctx, nil, []client.Dense{{Spec: spec, Init: make([]float32, n)}}); err != nil {
		t.Fatal(err)
	}
	grad := make([]float32, n)
	for i := range grad {
		grad[i] = 1
	}
	want := 0.0
	got := make([]float32, n)
	for step := 1; step <= 6; step++ {
		if err := c.PushDense(ctx, "mlp", grad); err != nil {
			t.Fatal(err)
		}
		want -= 0.1 * min(float64(step)/4, 1)
		if err := c.PullDense(ctx, "mlp", got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(float64(got[i])-want) > 1e-5 {
				t.Fatalf("after push %d: dense[%d] = %v, want %v (the warm-up's rate)", step, i, got[i], want)
			}
		}
	}
}
