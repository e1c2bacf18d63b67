package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/snapshot"
)

// TestSnapshotOverGRPC trains on 2 shards over gRPC, snapshots them with
// their reader positions, restores the snapshot onto 3 new shards, and
// checks rows, dense values and positions.
func TestSnapshotOverGRPC(t *testing.T) {
	gs := newGRPCSnapshot(t)
	dst, m3, a := gs.checkRestoreOntoThree(t)
	gs.checkRestoreSameLayout(t, a)
	gs.checkRestoreRefusals(t, dst, m3)
}

var (
	// snapOrigin is the one batch of worker w the snapshot holds.
	snapOrigin   = ams.Origin{Worker: "w", Batch: 0, Samples: 7, Digest: 9}
	grpcSnapSpec = ams.TableSpec{Name: "emb", Dim: 4, Optimizer: ams.OptimizerSpec{Name: "adagrad", LR: 0.1},
		Init: ams.InitSpec{Kind: "uniform", Scale: 0.1, Seed: 3}}
	grpcSnapDense = []client.Dense{{Spec: ams.DenseSpec{Name: "mlp", Size: 10, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.1}},
		Init: []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}}
)

// grpcSnapshot is 2 shards served over gRPC, trained on ids through src,
// with two reader positions, and their snapshot 1 in dir.
type grpcSnapshot struct {
	dir string
	m2  *ams.ShardMap
	src *client.Client
	ids []uint64
}

func newGRPCSnapshot(t *testing.T) *grpcSnapshot {
	ctx := context.Background()
	gs := &grpcSnapshot{dir: t.TempDir(), ids: make([]uint64, 3000)}
	gs.m2, _ = startShards(t, 2, 1, gs.dir)
	gs.src = newClient(t, gs.m2)
	if err := gs.src.Declare(ctx, []ams.TableSpec{grpcSnapSpec}, grpcSnapDense); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range gs.ids {
		gs.ids[i] = rng.Uint64()
	}
	rows := make([]float32, len(gs.ids)*4)
	if err := gs.src.Pull(ctx, []client.Table{{Name: "emb", IDs: gs.ids, Rows: rows}}, nil, true); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i] = float32(rng.NormFloat64())
	}
	r := gs.src.NewRoute()
	if err := r.Add("emb", gs.ids); err != nil {
		t.Fatal(err)
	}
	if err := gs.src.PushBatch(ctx, snapOrigin, r, [][]float32{rows}, nil); err != nil {
		t.Fatal(err)
	}
	if err := gs.src.PushDense(ctx, "mlp", []float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	pos := []client.StateEntry{{Key: "reader/a", Value: []byte(`{"offset":1}`)}, {Key: "reader/b", Value: []byte(`{"offset":2}`)}}
	if err := gs.src.PutState(ctx, pos); err != nil {
		t.Fatal(err)
	}
	m, err := gs.src.WriteSnapshot(ctx, client.SnapshotOptions{Store: gs.dir, Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tables) != 1 || len(m.Readers) != 4 || len(m.Dense) != 2 {
		t.Fatalf("manifest: %+v", m)
	}
	// Each shard writes its rows as one file per stripe, part 0 among them.
	perShard := map[int]int{}
	for _, f := range m.Tables[0].Files {
		k, ok := snapshot.TableFileShard("emb", f.Name)
		if !ok {
			t.Fatalf("table file %q is no shard's", f.Name)
		}
		perShard[k]++
	}
	if len(perShard) != 2 || !slices.ContainsFunc(m.Tables[0].Files, func(f snapshot.FileMeta) bool { return f.Name == snapshot.TableName("emb", 1) }) {
		t.Fatalf("table files %+v, want each of 2 shards' parts", m.Tables[0].Files)
	}
	for i := range 2 { // each shard's records of applied pushes
		if a, ok := m.Readers[ams.AppliedKey(i)]; !ok || string(a) != `{"w":{"ranges":[{"lo":0,"hi":1}],"samples":7,"digest":9}}` {
			t.Fatalf("manifest state %s = %s", ams.AppliedKey(i), a)
		}
	}
	store, _ := snapshot.OpenDir(gs.dir)
	if latest, _, err := snapshot.Latest(store); err != nil || latest.Seq != 1 {
		t.Fatalf("Latest = %v, %v", latest, err)
	}
	return gs
}

// checkRestoreOntoThree restores the snapshot onto 3 new shards and checks
// rows, dense values and positions. It returns the new shards' client and
// map, and the rows of ids at the snapshot.
func (gs *grpcSnapshot) checkRestoreOntoThree(t *testing.T) (*client.Client, *ams.ShardMap, []float32) {
	ctx, ids := context.Background(), gs.ids
	m3, _ := startShards(t, 3, 1, gs.dir)
	dst := newClient(t, m3)
	if err := dst.Declare(ctx, []ams.TableSpec{grpcSnapSpec}, grpcSnapDense); err != nil {
		t.Fatal(err)
	}
	n, err := dst.Restore(ctx, gs.dir, 1)
	if err != nil || n != int64(len(ids)) {
		t.Fatalf("Restore = %d rows, %v; want %d", n, err, len(ids))
	}
	a, b := make([]float32, len(ids)*4), make([]float32, len(ids)*4)
	if err := gs.src.Pull(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: a}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := dst.Pull(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: b}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatal("rows restored onto 3 shards differ")
	}
	da, db := make([]float32, 10), make([]float32, 10)
	gs.src.PullDense(ctx, "mlp", da)
	if err := dst.PullDense(ctx, "mlp", db); err != nil || !slices.Equal(da, db) {
		t.Fatalf("dense after the restore %v (%v), want %v", db, err, da)
	}
	got, err := dst.GetState(ctx, "reader/")
	if err != nil || len(got) != 2 || string(got[0].Value) != `{"offset":1}` || string(got[1].Value) != `{"offset":2}` {
		t.Fatalf("positions after the restore: %v, %v", got, err)
	}
	checkSnapApplied(t, dst, "onto 3 shards")
	return dst, m3, a
}

// checkRestoreSameLayout changes the source's rows, then restores onto the
// same layout at the next version (a rollback: each shard reads only its
// own file): the rows are a, those the shards had at the snapshot.
func (gs *grpcSnapshot) checkRestoreSameLayout(t *testing.T, a []float32) {
	ctx, ids := context.Background(), gs.ids
	if err := gs.src.Push(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: a}}, nil); err != nil { // changes after the snapshot
		t.Fatal(err)
	}
	next, err := ams.NewShardMap(gs.m2.Version+1, gs.m2.Partitions, gs.m2.Shards, gs.m2.Addrs)
	if err != nil {
		t.Fatal(err)
	}
	again := newClient(t, next)
	if n, err := again.Restore(ctx, gs.dir, 1); err != nil || n != int64(len(ids)) {
		t.Fatalf("Restore onto the same layout = %d rows, %v; want %d", n, err, len(ids))
	}
	if err := again.Declare(ctx, []ams.TableSpec{grpcSnapSpec}, grpcSnapDense); err != nil { // the client learns the dims
		t.Fatal(err)
	}
	b := make([]float32, len(ids)*4)
	if err := again.Pull(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: b}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatal("rows restored onto the same layout differ from the snapshot's")
	}
	checkSnapApplied(t, again, "onto the same layout")
}

// checkSnapApplied checks that every shard of c holds the records of the
// snapshot (snapOrigin's batch), and refuses to apply it again.
func checkSnapApplied(t *testing.T, c *client.Client, how string) {
	t.Helper()
	ctx := context.Background()
	recs, err := c.Applied(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	for s, a := range recs {
		if !a.Exactly(1) || a.Samples != 7 || a.Digest != 9 {
			t.Errorf("restored %s: shard %d records %s (%d samples, digest %d), want batch 0 of 7 samples, digest 9", how, s, a, a.Samples, a.Digest)
		}
	}
	r := c.NewRoute()
	if err := r.Add("emb", []uint64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.PushBatch(ctx, snapOrigin, r, [][]float32{make([]float32, 12)}, nil); !errors.Is(err, ams.ErrDuplicatePush) {
		t.Errorf("restored %s: the snapshot's batch pushed again: %v, want ams.ErrDuplicatePush", how, err)
	}
}

// checkRestoreRefusals checks, on the 3 shards of map m3 restored through
// dst, that a missing snapshot, a store outside the shards' roots and a
// client of another cluster version are refused, and that a restore at a
// new version starts it.
func (gs *grpcSnapshot) checkRestoreRefusals(t *testing.T, dst *client.Client, m3 *ams.ShardMap) {
	ctx := context.Background()
	// A snapshot that does not exist is refused.
	if _, err := dst.Restore(ctx, gs.dir, 9); err == nil {
		t.Error("Restore of a missing snapshot succeeded")
	}
	// So is a store outside the shards' roots, by the sentinel.
	if _, err := dst.Restore(ctx, gs.dir+"/../elsewhere", 1); !errors.Is(err, ams.ErrStoreNotAllowed) {
		t.Errorf("Restore from outside the shards' stores = %v, want ams.ErrStoreNotAllowed", err)
	}
	if _, err := dst.WriteSnapshot(ctx, client.SnapshotOptions{Store: "hdfs://127.0.0.1:1/snap", Seq: 3}); !errors.Is(err, ams.ErrStoreNotAllowed) {
		t.Errorf("snapshot into a foreign HDFS store = %v, want ams.ErrStoreNotAllowed", err)
	}
	// A client of another cluster version is refused by the shards.
	other, err := ams.NewShardMap(5, m3.Partitions, m3.Shards, m3.Addrs)
	if err != nil {
		t.Fatal(err)
	}
	oc := newClient(t, other)
	if _, err := oc.WriteSnapshot(ctx, client.SnapshotOptions{Store: gs.dir, Seq: 2}); !errors.Is(err, ams.ErrStaleVersion) {
		t.Errorf("snapshot from a client of version 5 = %v, want ErrStaleVersion", err)
	}
	// A restore at version 5 starts that version: the shards refuse
	// version 1 from then on, and serve 5.
	if _, err := oc.Restore(ctx, gs.dir, 1); err != nil {
		t.Fatalf("restore at version 5: %v", err)
	}
	if _, err := dst.Restore(ctx, gs.dir, 1); !errors.Is(err, ams.ErrStaleVersion) {
		t.Errorf("restore at version 1 after one at 5 = %v, want ErrStaleVersion", err)
	}
	if _, err := oc.GetState(ctx, "reader/"); err != nil {
		t.Errorf("reading state at version 5 after its restore: %v", err)
	}
}
