package shard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
)

// testCluster is n in-process shards with a shard map, as the AMS runs them.
type testCluster struct {
	m       *ams.ShardMap
	shards  []*Shard
	version uint64 // of requests; 0 means 1
}

func (c *testCluster) v() uint64 { return max(c.version, 1) }

const (
	snapDenseSize  = 103
	snapPartitions = 64
)

var snapSpec = ams.TableSpec{Name: "emb", Dim: 5, Optimizer: ams.OptimizerSpec{Name: "adam", LR: 0.01},
	Init: ams.InitSpec{Kind: "uniform", Scale: 0.1, Seed: 9}}

func newTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return newTestClusterOf(t, n, snapSpec)
}

// newTestClusterOf is newTestCluster with another spec of table "emb" (of
// snapSpec's Dim).
func newTestClusterOf(t *testing.T, n int, spec ams.TableSpec) *testCluster {
	t.Helper()
	c := &testCluster{}
	var ids []string
	tierDirs := []string{t.TempDir()} // for a tiered spec
	for i := range n {
		s := New(Options{ID: fmt.Sprintf("ams-%d", i), Stripes: 3, Partitions: snapPartitions, TierDirs: tierDirs,
			Now: func() time.Time { return time.Unix(1_700_000_000, 0) }}) // rows compare bit for bit
		t.Cleanup(func() { s.Close() })
		c.shards = append(c.shards, s)
		ids = append(ids, s.ID())
		lo, hi := ams.DenseRange(snapDenseSize, i, n)
		dspec := ams.DenseSpec{Name: "mlp", Size: snapDenseSize, Optimizer: ams.OptimizerSpec{Name: "adam", LR: 0.01}}
		init := make([]float32, hi-lo)
		for k := range init {
			init[k] = float32(lo + k)
		}
		if _, err := s.Declare(1, []ams.TableSpec{spec}, []DenseDecl{{Spec: dspec, Lo: lo, Hi: hi, Init: init}}); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if c.m, err = ams.NewShardMap(1, snapPartitions, ids, ids); err != nil {
		t.Fatal(err)
	}
	return c
}

// ownership is what slot i of the cluster's map restores.
func (c *testCluster) ownership(i int) Ownership {
	n := len(c.shards)
	return Ownership{Index: i, Shards: n, Partitions: c.m.Partitions,
		Row:       func(table string, id uint64) bool { return c.m.ShardOf(table, id) == i },
		State:     func(key string) bool { return ams.StateShard(key, n) == i },
		Partition: func(p uint32) bool { return int(c.m.Assign[p]) == i }}
}

// do pulls ids (creating missing rows) or pushes grads to them, each on
// the shard the map routes it to; a pull returns the rows in ids' order.
func (c *testCluster) do(t *testing.T, ids []uint64, grads []float32, push bool) []float32 {
	t.Helper()
	d := snapSpec.Dim
	out := make([]float32, len(ids)*d)
	for k, s := range c.shards {
		var sid []uint64
		var pos []int
		for i, id := range ids {
			if c.m.ShardOf("emb", id) == k {
				sid, pos = append(sid, id), append(pos, i)
			}
		}
		buf := make([]float32, len(sid)*d)
		if push {
			for j, i := range pos {
				copy(buf[j*d:(j+1)*d], grads[i*d:(i+1)*d])
			}
			if err := s.Push(c.v(), []ams.TableRequest{{Table: "emb", IDs: sid, Rows: buf}}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := s.Pull(c.v(), []ams.TableRequest{{Table: "emb", IDs: sid, Rows: buf}}, true); err != nil {
			t.Fatal(err)
		}
		for j, i := range pos {
			copy(out[i*d:(i+1)*d], buf[j*d:(j+1)*d])
		}
	}
	return out
}

// dense pulls the whole dense vector, range by range.
func (c *testCluster) dense(t *testing.T) []float32 {
	t.Helper()
	var values []float32
	for _, s := range c.shards {
		_, _, v, err := s.PullDense(c.v(), "mlp")
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v...)
	}
	return values
}

func (c *testCluster) pushDense(t *testing.T, grad []float32) {
	t.Helper()
	for i, s := range c.shards {
		lo, hi := ams.DenseRange(snapDenseSize, i, len(c.shards))
		if err := s.PushDense(c.v(), "mlp", grad[lo:hi]); err != nil {
			t.Fatal(err)
		}
	}
}

// train pushes random gradients to ids and to the dense vector.
func (c *testCluster) train(t *testing.T, ids []uint64, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	g := make([]float32, len(ids)*snapSpec.Dim)
	for i := range g {
		g[i] = float32(rng.NormFloat64())
	}
	c.do(t, ids, g, true)
	dg := make([]float32, snapDenseSize)
	for i := range dg {
		dg[i] = float32(rng.NormFloat64())
	}
	c.pushDense(t, dg)
}

// TestSnapshotRestoreOntoMoreShards trains on 2 shards, snapshots them,
// restores onto 3 and onto 2, and trains on: every row survives with its
// values and optimizer state (the same further training gives the same
// rows as on the original), and the dense vector too.
func TestSnapshotRestoreOntoMoreShards(t *testing.T) {
	ts := newTrainedSnapshot(t)
	for _, n := range []int{3, 2, 1} {
		t.Run(fmt.Sprintf("onto-%d", n), func(t *testing.T) { ts.checkRestoreOnto(t, n) })
	}
	ts.checkTrainOnAfterRestore(t)
	ts.checkFreshShardsRestore(t)
	ts.checkRestoreReplaces(t)
	ts.checkSnapshotDuringRestore(t)
}

// checkSnapshotDuringRestore writes snapshots of a shard while it is
// restored again and again (a snapshot the scheduler abandoned still runs
// on the shard when the restore comes): each write sees the model before
// or after a restore, never one half replaced (it panicked when a reset
// emptied the stripes' tables under it), and ends without error.
func (ts *trainedSnapshot) checkSnapshotDuringRestore(t *testing.T) {
	dst := newTestCluster(t, 2)
	ts.restoreFrom(t, dst)
	s := dst.shards[0]
	done := make(chan error)
	go func() {
		var err error
		for k := range 50 {
			if _, werr := s.WriteSnapshot(ts.store, uint64(100+k), 0); werr != nil && err == nil {
				err = werr
			}
		}
		done <- err
	}()
	for range 50 {
		if err := s.Restore(ts.store, ts.m, dst.ownership(0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("a snapshot written during restores: %v", err)
	}
}

// trainedSnapshot is a 2-shard cluster trained on ids, with reader
// positions in its state, and the snapshot of it committed to store.
type trainedSnapshot struct {
	store     snapshot.Store
	src       *testCluster
	ids       []uint64
	positions map[string]string // state key -> value
	m         *snapshot.Manifest
}

func newTrainedSnapshot(t *testing.T) *trainedSnapshot {
	store, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := &trainedSnapshot{store: store, src: newTestCluster(t, 2), ids: make([]uint64, 5000)}
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range ts.ids {
		ts.ids[i] = rng.Uint64()
	}
	ts.src.do(t, ts.ids, nil, false) // create the rows
	ts.src.train(t, ts.ids, 1)
	ts.src.train(t, ts.ids[:2500], 2)
	ts.positions = putReaderPositions(t, ts.src)

	const seq = 7
	m := &snapshot.Manifest{Seq: seq, Version: 1, Shards: 2}
	for i, s := range ts.src.shards {
		part, err := s.WriteSnapshot(store, seq, i)
		if err != nil {
			t.Fatal(err)
		}
		checkParts(t, part, i, 3)
		if err := m.Add(part); err != nil {
			t.Fatal(err)
		}
	}
	if err := snapshot.Commit(store, m); err != nil {
		t.Fatal(err)
	}
	if ts.m, _, err = snapshot.Latest(store); err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, f := range ts.m.Tables[0].Files {
		rows += f.Rows
	}
	if rows != int64(len(ts.ids)) {
		t.Fatalf("snapshot holds %d rows, trained %d", rows, len(ts.ids))
	}
	return ts
}

// putReaderPositions puts 20 reader positions in c's state, each on the
// shard that owns its key, and returns them by key.
func putReaderPositions(t *testing.T, c *testCluster) map[string]string {
	t.Helper()
	positions := map[string]string{}
	for p := range 20 {
		key := fmt.Sprintf("reader/kafka://ctr/%d", p)
		positions[key] = fmt.Sprintf(`{"file":"kafka://ctr/%d","offset":%d,"index":0}`, p, 100*p)
		sh := c.shards[ams.StateShard(key, len(c.shards))]
		if err := sh.PutState(1, []StateEntry{{Key: key, Value: []byte(positions[key])}}); err != nil {
			t.Fatal(err)
		}
	}
	return positions
}

// restoreFrom restores every shard of c from ts's snapshot, each with the
// ownership of its slot.
func (ts *trainedSnapshot) restoreFrom(t *testing.T, c *testCluster) {
	t.Helper()
	for i, s := range c.shards {
		if err := s.Restore(ts.store, ts.m, c.ownership(i)); err != nil {
			t.Fatal(err)
		}
	}
}

// checkRestoreOnto restores the snapshot onto n shards: every row, the
// dense vector and every reader position come back.
func (ts *trainedSnapshot) checkRestoreOnto(t *testing.T, n int) {
	dst := newTestCluster(t, n)
	ts.restoreFrom(t, dst)
	var total int
	for _, s := range dst.shards {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		total += int(st.Tables[0].Rows)
	}
	if total != len(ts.ids) {
		t.Fatalf("restored %d rows onto %d shards, want %d", total, n, len(ts.ids))
	}
	if a, b := ts.src.do(t, ts.ids, nil, false), dst.do(t, ts.ids, nil, false); !slices.Equal(a, b) {
		t.Fatal("restored rows differ from the snapshot's")
	}
	if !slices.Equal(ts.src.dense(t), dst.dense(t)) {
		t.Fatal("restored dense values differ")
	}
	// Every reader position is back, on the shard that owns its key now.
	for key, want := range ts.positions {
		got, err := dst.shards[ams.StateShard(key, n)].GetState(1, key) // key is a prefix of others
		i := slices.IndexFunc(got, func(e StateEntry) bool { return e.Key == key })
		if err != nil || i < 0 || string(got[i].Value) != want {
			t.Fatalf("state %s after the restore: %v; want %s", key, err, want)
		}
	}
}

// checkTrainOnAfterRestore trains on after a restore onto 2 shards (same
// ranges: the dense optimizer state comes back too): the same pushes give
// the same model. It trains ts.src on.
func (ts *trainedSnapshot) checkTrainOnAfterRestore(t *testing.T) {
	dst := newTestCluster(t, 2)
	ts.restoreFrom(t, dst)
	ts.src.train(t, ts.ids, 3)
	dst.train(t, ts.ids, 3)
	if a, b := ts.src.do(t, ts.ids, nil, false), dst.do(t, ts.ids, nil, false); !slices.Equal(a, b) {
		t.Fatal("training on after the restore gives other rows: the optimizer state was not restored")
	}
	if !slices.Equal(ts.src.dense(t), dst.dense(t)) {
		t.Fatal("training on after the restore gives another dense vector")
	}
}

// checkFreshShardsRestore restores fresh shards (a replacement process:
// nothing declared) at a new version: tables and dense ranges come from
// the manifest, the older version is refused from then on, and training
// goes on as on declared shards restored.
func (ts *trainedSnapshot) checkFreshShardsRestore(t *testing.T) {
	restored := newTestCluster(t, 2)
	blank := &testCluster{m: restored.m}
	for i := range 2 {
		s := New(Options{ID: fmt.Sprintf("ams-%d", i), Stripes: 2})
		t.Cleanup(func() { s.Close() })
		blank.shards = append(blank.shards, s)
	}
	for i, s := range blank.shards {
		if err := s.advanceVersion(3); err != nil {
			t.Fatal(err)
		}
		if err := s.Restore(ts.store, ts.m, blank.ownership(i)); err != nil {
			t.Fatal(err)
		}
		if err := s.advanceVersion(2); !errors.Is(err, ams.ErrStaleVersion) {
			t.Fatalf("going back to version 2 = %v, want ams.ErrStaleVersion", err)
		}
	}
	blank.version = 3
	ts.restoreFrom(t, restored)
	restored.train(t, ts.ids, 2)
	blank.train(t, ts.ids, 2)
	if a, b := restored.do(t, ts.ids, nil, false), blank.do(t, ts.ids, nil, false); !slices.Equal(a, b) {
		t.Fatal("fresh shards restored and trained on hold other rows")
	}
	if !slices.Equal(restored.dense(t), blank.dense(t)) {
		t.Fatal("fresh shards restored and trained on hold another dense vector")
	}
}

// checkRestoreReplaces checks that a restore leaves the shard holding
// the snapshot and nothing else: a table declared with another spec takes
// the snapshot's, and a table, a dense vector and a state entry the
// snapshot lacks are gone (a rollback to a snapshot taken before the
// model was declared leaves an empty shard, not a half-declared one).
func (ts *trainedSnapshot) checkRestoreReplaces(t *testing.T) {
	other := New(Options{ID: "x", Stripes: 2})
	defer other.Close()
	bad := snapSpec
	bad.Dim = 7
	late := ams.TableSpec{Name: "late", Dim: 3, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}}
	lateDense := DenseDecl{Spec: ams.DenseSpec{Name: "late-dense", Size: 4, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}}, Lo: 0, Hi: 4}
	if _, err := other.Declare(1, []ams.TableSpec{bad, late}, []DenseDecl{lateDense}); err != nil {
		t.Fatal(err)
	}
	if err := other.PutState(1, []StateEntry{{Key: "reader/late", Value: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	all := Ownership{Row: func(string, uint64) bool { return true }, State: func(string) bool { return true }}
	if err := other.Restore(ts.store, ts.m, all); err != nil {
		t.Fatalf("Restore over other declarations: %v", err)
	}
	if spec, err := other.TableSpec(snapSpec.Name); err != nil || spec.Dim != snapSpec.Dim {
		t.Errorf("table %q after the restore: %+v, %v; want the snapshot's dim %d", snapSpec.Name, spec, err, snapSpec.Dim)
	}
	if _, err := other.TableSpec("late"); !errors.Is(err, ams.ErrUnknownTable) {
		t.Errorf("a table the snapshot lacks, after the restore: %v, want ams.ErrUnknownTable", err)
	}
	if _, _, _, err := other.PullDense(1, "late-dense"); !errors.Is(err, ams.ErrUnknownDense) {
		t.Errorf("a dense vector the snapshot lacks, after the restore: %v, want ams.ErrUnknownDense", err)
	}
	if got, err := other.GetState(1, "reader/late"); err != nil || len(got) != 0 {
		t.Errorf("a state entry the snapshot lacks, after the restore: %v, %v", got, err)
	}
}

// checkParts checks that shard i of stripes stripes wrote each table as
// min(stripes, GOMAXPROCS) parts, numbered from 0, holding its rows
// between them.
func checkParts(t *testing.T, part snapshot.Part, i, stripes int) {
	t.Helper()
	want := min(stripes, runtime.GOMAXPROCS(0))
	for _, e := range part.Tables {
		if len(e.Files) != want {
			t.Fatalf("table %q: %d files, want %d parts", e.Name, len(e.Files), want)
		}
		for p, f := range e.Files {
			if f.Name != snapshot.TablePartName(e.Name, i, p) {
				t.Fatalf("table %q part %d is %q, want %q", e.Name, p, f.Name, snapshot.TablePartName(e.Name, i, p))
			}
		}
	}
}
