package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestStandbyTakesOver runs two schedulers: one leads and forms the
// cluster, the other waits; when the leader stops (cleanly, then by losing
// its etcd client as a killed process would), the standby takes over and
// keeps serving.
func TestStandbyTakesOver(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	const p = "/xps/election"
	clients := map[*scheduler.Scheduler]*clientv3.Client{}
	start := func(id string) *scheduler.Scheduler {
		c := newClient(t, srv) // its own client: closing it kills this scheduler alone
		s, err := scheduler.New(c, scheduler.Options{Prefix: p, ID: id, Shards: 1, Partitions: 8,
			LeaseTTL: time.Second, TickInterval: 50 * time.Millisecond, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(); c.Close() })
		clients[s] = c
		return s
	}
	a := start("sched-a")
	eventually(t, 5*time.Second, "sched-a to lead", a.Leader)
	b := start("sched-b")
	reg := register(t, cli, p, membership.KindAMS, "ams-0", startShard(t, "ams-0"))
	defer reg.Close()
	if _, err := testutil.Conn(cli, p).WaitShardMap(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the standby stays a standby
	if b.Leader() {
		t.Fatal("two leaders")
	}
	if st := b.Status(); st.Phase != clusterfsm.Forming {
		t.Fatalf("the standby drives the cluster: %v", st)
	}

	// The leader leaves: the standby leads and serves.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "sched-b to lead", b.Leader)
	eventually(t, 5*time.Second, "sched-b to serve", func() bool {
		return b.Status().Phase == clusterfsm.Serving
	})

	// A third scheduler waits; the leader dies (its client goes away and
	// its lease expires): the third takes over.
	c := start("sched-c")
	time.Sleep(200 * time.Millisecond)
	if c.Leader() {
		t.Fatal("sched-c leads while sched-b does")
	}
	clients[b].Close()
	<-b.Done()
	eventually(t, 10*time.Second, "sched-c to lead after sched-b died", c.Leader)
	eventually(t, 5*time.Second, "sched-c to serve", func() bool {
		return c.Status().Phase == clusterfsm.Serving
	})
}

// TestLoneSchedulerRestarts: the only scheduler stops and a new one starts:
// it adopts the serving cluster from etcd (the same shard map, the same
// version) instead of forming a new one.
func TestLoneSchedulerRestarts(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	const p = "/xps/lone-restart"
	start := func(id string) *scheduler.Scheduler {
		s, err := scheduler.New(cli, scheduler.Options{Prefix: p, ID: id, Shards: 2, Partitions: 8,
			LeaseTTL: time.Second, TickInterval: 50 * time.Millisecond, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := start("sched-a")
	for i := range 2 {
		id := fmt.Sprintf("ams-%d", i)
		reg := register(t, cli, p, membership.KindAMS, id, startShard(t, id))
		defer reg.Close()
	}
	m, err := testutil.Conn(cli, p).WaitShardMap(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "sched-a to serve", func() bool { return a.Status().Phase == clusterfsm.Serving })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := start("sched-b")
	eventually(t, 5*time.Second, "sched-b to serve", func() bool { return b.Status().Phase == clusterfsm.Serving })
	if st := b.Status(); st.Version != m.Version {
		t.Fatalf("the restarted scheduler serves version %d; the cluster served %d", st.Version, m.Version)
	}
	got, err := testutil.Conn(cli, p).GetShardMap(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != m.Version || !slices.Equal(got.Shards, m.Shards) || !slices.Equal(got.Addrs, m.Addrs) {
		t.Fatalf("shard map after the restart %+v, before %+v", got, m)
	}
}
