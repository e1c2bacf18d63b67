package scheduler_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestSaveOnStop is issue 57's cluster stop: a scheduler stopped while
// the cluster serves snapshots the model first when the workers'
// checkpoints count samples the last snapshot does not hold (a worker
// that stopped stored its checkpoint and left; before, everything since
// the last periodic snapshot was lost with the shards), and takes none
// when nothing was applied since (the bounded job's final model), nor
// without a snapshot store.
func TestSaveOnStop(t *testing.T) {
	const p = "/xps/save-on-stop"
	s, cli, opts, st := startStoreCluster(t, p, nil)
	conn := testutil.Conn(cli, p)
	// A worker stopped: its checkpoint (of a sync-mode job, whose
	// pushes name no batch) counts 500 samples the model does not hold in
	// any snapshot.
	withClient(t, conn, func(c *client.Client) error {
		return checkpoint.Store(testCtx(t), c, "worker-0", checkpoint.Checkpoint{Sync: true, Epoch: 1, Batch: 5, Applied: 500})
	})
	r, taken, err := s.SaveOnStop(testCtx(t))
	if err != nil || !taken || r.Applied != 500 {
		t.Fatalf("the stop's snapshot: %+v, taken %v, %v; want one holding the 500 samples", r, taken, err)
	}
	man, _, err := snapshot.Latest(st)
	if err != nil || man.Seq != r.Seq || checkpoint.AppliedIn(man.Readers) != 500 {
		t.Fatalf("the store's newest snapshot %+v (%v); want the stop's, %d, with 500 samples applied", man, err, r.Seq)
	}
	// Stopped again with nothing applied since: no second copy.
	again, taken, err := s.SaveOnStop(testCtx(t))
	if err != nil || taken || again.Seq != r.Seq {
		t.Fatalf("a stop with nothing new: %+v, taken %v, %v; want none taken and the last one named", again, taken, err)
	}
	// Without a store nothing is taken, and nothing fails.
	noStore := opts
	noStore.Config.Snapshot.Store = ""
	noStore.ID, noStore.Prefix = "sched-2", "/xps/save-on-stop-none"
	s2, err := scheduler.New(cli, noStore)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, taken, err := s2.SaveOnStop(testCtx(t)); taken || err != nil {
		t.Fatalf("without a store: taken %v, %v", taken, err)
	}
}

// startStoreCluster starts etcd, two blank shards and a scheduler of
// cluster p with a snapshot store that snapshots on request only (opts
// changed by edit, when given), and returns once the cluster serves and
// its initial snapshot is stored; everything stops with the test.
func startStoreCluster(t *testing.T, p string, edit func(*scheduler.Options)) (*scheduler.Scheduler, *clientv3.Client, scheduler.Options, snapshot.Store) {
	t.Helper()
	store := t.TempDir()
	srv := startEtcd(t)
	cli := newClient(t, srv)
	addrs := []string{startShard(t, "ams-0"), startShard(t, "ams-1")}
	opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 2, Partitions: 8, LeaseTTL: 2 * time.Second,
		TickInterval: 50 * time.Millisecond, Logger: testLogger(t)}
	opts.Config.Snapshot.Store = store
	opts.Config.Snapshot.Every = -time.Second // on request only
	if edit != nil {
		edit(&opts)
	}
	s, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i, a := range addrs {
		r := register(t, cli, p, membership.KindAMS, []string{"ams-0", "ams-1"}[i], a)
		t.Cleanup(func() { r.Close() })
	}
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	st, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the initial snapshot", func() bool { _, _, err := snapshot.Latest(st); return err == nil })
	return s, cli, opts, st
}
