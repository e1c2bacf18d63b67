package scheduler_test

import (
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// restartable is a shard process at a fixed address that the test can
// replace by a new, empty one, as a shard restarted at once (a
// StatefulSet's pod) comes back while its predecessor's lease still lives.
type restartable struct {
	t    *testing.T
	id   string
	addr string
	sh   *shard.Shard // the shard serving now
	stop func()
}

func startRestartable(t *testing.T, id string) *restartable {
	r := &restartable{t: t, id: id}
	r.start("127.0.0.1:0")
	t.Cleanup(func() { r.stop() })
	return r
}

// start starts the shard at addr. Its store root is the system's
// temporary directory, where the tests' snapshot and export stores are
// (t.TempDir).
func (r *restartable) start(addr string) {
	sh := shard.New(shard.Options{ID: r.id, Stripes: 1, Blank: true, Stores: []string{os.TempDir()}})
	gs := shard.NewGRPCServer(sh)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr, r.sh = lis.Addr().String(), sh
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	r.stop = func() {
		gs.Stop()
		<-done
		sh.Close()
	}
}

// restart replaces the shard by an empty one at the same address.
func (r *restartable) restart() {
	r.stop()
	r.start(r.addr)
}

// TestShardRestartedWithinLeaseSpoilsNoSnapshot is issue 20's first item
// reproduced: a shard restarted under its id before its old lease expires
// comes up empty at the same address. It must take no part in a snapshot
// at the cluster's version: the snapshot fails (the shard serves no
// version until the scheduler restores it), and the store keeps only the
// good snapshot, with no files of the failed one. Before the fix the
// empty shard answered at the cluster's version and the scheduler recorded
// a snapshot with two thirds of the rows, part of the dense vector and no
// checkpoint of the workers whose keys it held.
func TestShardRestartedWithinLeaseSpoilsNoSnapshot(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	const p = "/xps/restart-within-lease"
	store := t.TempDir()
	opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 3, Partitions: 12,
		LeaseTTL: time.Minute, TickInterval: 50 * time.Millisecond, Logger: testLogger(t)}
	opts.Config.Snapshot.Store = store
	s, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var shards []*restartable
	for _, id := range []string{"ams-0", "ams-1", "ams-2"} {
		r := startRestartable(t, id)
		shards = append(shards, r)
		// The lease outlives the test: the scheduler never sees the
		// restart, as within a real lease's TTL.
		reg, err := membership.Register(testCtx(t), cli, p, membership.Member{Kind: membership.KindAMS, ID: id, Addr: r.addr}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Close()
	}
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	m, err := testutil.Conn(cli, p).WaitShardMap(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the initial snapshot", func() bool {
		seqs, err := snapshot.Snapshots(st)
		return err == nil && len(seqs) == 1
	})
	trainSome(t, m)
	conn := testutil.Conn(cli, p)
	good, err := conn.RequestSnapshot(testCtx(t), false)
	if err != nil {
		t.Fatal(err)
	}

	shards[1].restart()
	res, err := conn.RequestSnapshot(testCtx(t), false)
	if err == nil {
		t.Fatalf("a snapshot with an empty restarted shard succeeded: %+v", res)
	}
	t.Logf("the snapshot after the restart failed, as it must: %v", err)
	seqs, err := snapshot.Snapshots(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) == 0 || slices.Max(seqs) != good.Seq {
		t.Fatalf("snapshots in the store %v, want the good one %d newest", seqs, good.Seq)
	}
	if ents, err := st.List(snapshot.Dir(res.Seq)); err == nil && len(ents) > 0 {
		t.Fatalf("the failed snapshot %d left %d files", res.Seq, len(ents))
	}
}

// trainSome declares a table and a dense vector on the shards of m, pushes
// rows and stores a worker's checkpoint, as a worker would.
func trainSome(t *testing.T, m *ams.ShardMap) {
	cl, err := client.New(m)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	dense := client.Dense{Spec: ams.DenseSpec{Name: "mlp", Size: 9, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}}, Init: make([]float32, 9)}
	ctx := testCtx(t)
	if err := cl.Declare(ctx, []ams.TableSpec{spec}, []client.Dense{dense}); err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, 300)
	for i := range ids {
		ids[i] = uint64(i * 7919)
	}
	r := cl.NewRoute()
	if err := r.Add("emb", ids); err != nil {
		t.Fatal(err)
	}
	// One batch of one sample from each worker, and the checkpoints that
	// count them (a snapshot checks the two agree).
	var entries []client.StateEntry
	for _, w := range []string{"worker-0", "worker-1", "worker-2", "worker-3"} {
		origin := ams.Origin{Worker: w, Batch: 0, Samples: 1}
		if err := cl.PushBatch(ctx, origin, r, [][]float32{make([]float32, 2*len(ids))}, []client.Vector{{Name: "mlp", Values: make([]float32, 9)}}); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, client.StateEntry{Key: ams.CheckpointKey(w), Value: []byte(`{"applied":1,"batches":1}`)})
	}
	if err := cl.PutState(ctx, entries); err != nil {
		t.Fatal(err)
	}
}
