package scheduler_test

import (
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestRollbackToPinned: a pinned snapshot outlives snapshot.keep, and a
// rollback request restores it at a new version, removes the snapshots
// after it from the store and answers with both; without a pinned
// snapshot the request is refused.
func TestRollbackToPinned(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	const p = "/xps/rollback"
	store := t.TempDir()
	s := startPinnedCluster(t, cli, p, store)
	conn := testutil.Conn(cli, p)
	m, err := conn.WaitShardMap(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	trainSome(t, m)
	if res, err := conn.RequestRollback(testCtx(t)); err == nil {
		t.Fatalf("a rollback with no pinned snapshot succeeded: %+v", res)
	}
	mark := func(v string) {
		cl, err := client.New(m)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.PutState(testCtx(t), []client.StateEntry{{Key: "test/mark", Value: []byte(`"` + v + `"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	mark("best")
	best, err := conn.RequestSnapshot(testCtx(t), true)
	if err != nil || !best.Pinned {
		t.Fatalf("pinned snapshot: %+v, %v", best, err)
	}
	mark("later")
	var later []uint64
	for range 2 {
		r, err := conn.RequestSnapshot(testCtx(t), false)
		if err != nil {
			t.Fatal(err)
		}
		later = append(later, r.Seq)
	}
	st, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	if seqs, _ := snapshot.Snapshots(st); !slices.Equal(seqs, []uint64{later[1], best.Seq}) {
		t.Fatalf("the store holds %v with keep 1, want the newest %d and the pinned %d", seqs, later[1], best.Seq)
	}

	res, err := conn.RequestRollback(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rollback: %+v", res)
	if res.Seq != best.Seq || res.Version <= m.Version || !slices.Equal(res.Removed, []uint64{later[1]}) {
		t.Fatalf("rollback restored %d at v%d removing %v; want %d above v%d removing [%d]",
			res.Seq, res.Version, res.Removed, best.Seq, m.Version, later[1])
	}
	if last, ok, err := conn.LastRollback(testCtx(t)); err != nil || !ok || last.Version != res.Version {
		t.Fatalf("LastRollback = %+v, %v, %v", last, ok, err)
	}
	eventually(t, 10*time.Second, "SERVING again", func() bool {
		st := s.Status()
		return st.Phase == clusterfsm.Serving && st.Version == res.Version
	})
	m2, err := conn.WaitShardMap(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(m2)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got, err := cl.GetState(testCtx(t), "test/")
	if err != nil || len(got) != 1 || string(got[0].Value) != `"best"` {
		t.Fatalf("after the rollback the model's mark is %+v (%v), want best", got, err)
	}
}

// startPinnedCluster starts a scheduler (snapshot.keep 1, store) and two shards
// under prefix p, and returns the scheduler once the cluster serves.
func startPinnedCluster(t *testing.T, cli *clientv3.Client, p, store string) *scheduler.Scheduler {
	opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 2, Partitions: 8,
		LeaseTTL: time.Minute, TickInterval: 50 * time.Millisecond, Logger: testLogger(t)}
	opts.Config.Snapshot.Store, opts.Config.Snapshot.Keep = store, 1
	s, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, id := range []string{"ams-0", "ams-1"} {
		r := startRestartable(t, id)
		reg, err := membership.Register(testCtx(t), cli, p, membership.Member{Kind: membership.KindAMS, ID: id, Addr: r.addr}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close() })
	}
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	return s
}
