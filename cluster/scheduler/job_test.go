package scheduler_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotsNameTheirJob is issue 20's fourth item: a new job (a new
// cluster: a new etcd) on a snapshot store that holds another job's
// snapshots must not resume them silently. The first job's snapshots
// name it; a new job on the store is refused, naming the job and how to
// resume it; given that job's id it resumes; a job of another id is
// refused too.
func TestSnapshotsNameTheirJob(t *testing.T) {
	const p = "/xps/job-ids"
	store := t.TempDir()
	addrs := []string{startShard(t, "ams-0"), startShard(t, "ams-1")}
	run := func(id string) (*scheduler.Scheduler, *clientv3.Client, func()) {
		t.Helper()
		srv := startEtcd(t) // a new cluster each time: what etcd held is gone
		cli := newClient(t, srv)
		opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 2, Partitions: 8, LeaseTTL: 2 * time.Second,
			TickInterval: 50 * time.Millisecond, Logger: testLogger(t)}
		opts.Config.Snapshot.Store = store
		opts.Config.Job.ID = id
		s, err := scheduler.New(cli, opts)
		if err != nil {
			t.Fatal(err)
		}
		var regs []*membership.Registration
		for i, a := range addrs {
			regs = append(regs, register(t, cli, p, membership.KindAMS, []string{"ams-0", "ams-1"}[i], a))
		}
		return s, cli, func() {
			s.Close()
			for _, r := range regs {
				r.Close()
			}
			srv.Close()
		}
	}

	// The first job: its id in etcd and in its snapshot.
	s, cli, stop := run("")
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	st, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	var first *snapshot.Manifest
	eventually(t, 10*time.Second, "the initial snapshot", func() bool {
		first, _, err = snapshot.Latest(st)
		return err == nil
	})
	conn := testutil.Conn(cli, p)
	rec, ok, err := conn.GetJob(testCtx(t))
	if err != nil || !ok || !strings.HasPrefix(rec.ID, "job-") || first.Job != rec.ID {
		t.Fatalf("job record %+v (%v, %v); the snapshot names job %q", rec, ok, err, first.Job)
	}
	// A mark in the model, and a snapshot of it.
	mark := []client.StateEntry{{Key: "reader/mark", Value: []byte(`"first job"`)}}
	withClient(t, conn, func(c *client.Client) error { return c.PutState(testCtx(t), mark) })
	if res, err := conn.RequestSnapshot(testCtx(t), false); err != nil {
		t.Fatalf("snapshot: %+v, %v", res, err)
	}
	stop()

	// A new job on the same store: refused, naming the job to resume.
	for _, id := range []string{"", "another-job"} {
		s, _, stop = run(id)
		checkRefusedStore(t, s, id, rec.ID)
		stop()
	}

	// Given the first job's id, a new cluster resumes it, and removes an
	// attempt a leader gone left incomplete.
	abandoned := halfSnapshot(t, store, first.Seq+100)
	s, cli, stop = run(rec.ID)
	defer stop()
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	withClient(t, testutil.Conn(cli, p), func(c *client.Client) error {
		got, err := c.GetState(testCtx(t), "reader/mark")
		if err == nil && (len(got) != 1 || string(got[0].Value) != `"first job"`) {
			err = fmt.Errorf("the resumed model holds %v, not the first job's mark", got)
		}
		return err
	})
	if _, err := os.Stat(filepath.Join(store, abandoned)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the abandoned attempt %s is still in the store: %v", abandoned, err)
	}
}

// halfSnapshot writes the directory of snapshot seq in store with a file
// and no manifest, as an attempt a dead leader abandoned leaves it, and
// returns the directory's name.
func halfSnapshot(t *testing.T, store string, seq uint64) string {
	t.Helper()
	dir := snapshot.Dir(seq)
	if err := os.MkdirAll(filepath.Join(store, dir, "tables"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, dir, "tables", "part"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkRefusedStore checks that s, a scheduler of job.id id on a store
// holding job other's snapshots, stopped with ErrForeignSnapshots naming
// other.
func checkRefusedStore(t *testing.T, s *scheduler.Scheduler, id, other string) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("job.id %q: the scheduler runs on a store of job %s (state %v)", id, other, s.Status())
	}
	if err := s.Err(); !errors.Is(err, scheduler.ErrForeignSnapshots) || !strings.Contains(err.Error(), other) {
		t.Fatalf("job.id %q: scheduler ended with %v, want ErrForeignSnapshots naming %s", id, err, other)
	}
}

// withClient runs fn with a client of the shard map conn's cluster
// serves.
func withClient(t *testing.T, conn *controlplane.Conn, fn func(*client.Client) error) {
	t.Helper()
	m, err := conn.WaitServing(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(m)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := fn(c); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseLostLeadsAgain revokes the leading scheduler's lease, as an
// etcd outage longer than the TTL ends it: the scheduler must not stop
// (before the fix it ended with ErrLostRegistration, and the job had no
// scheduler) but register again, lead again and take the cluster over.
func TestLeaseLostLeadsAgain(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	const p = "/xps/lease-lost-leads"
	for _, id := range []string{"ams-0", "ams-1"} {
		r := register(t, cli, p, membership.KindAMS, id, startShard(t, id))
		defer r.Close()
	}
	s := startServing(t, cli, scheduler.Options{Prefix: p, ID: "sched-1", Shards: 2, Partitions: 8, LeaseTTL: time.Second,
		TickInterval: 50 * time.Millisecond, Logger: testLogger(t)})
	key := membership.MemberKey(p, membership.KindScheduler, "sched-1")
	resp, err := cli.Get(testCtx(t), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the scheduler's member key: %v, %v", resp, err)
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	if _, err := cli.Revoke(testCtx(t), lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "leading and SERVING again under a new lease", func() bool {
		resp, err := cli.Get(testCtx(t), key)
		if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) == lease {
			return false
		}
		now := clientv3.LeaseID(resp.Kvs[0].Lease)
		// The election key, under the new lease: a new term.
		el, err := cli.Get(testCtx(t), controlplane.LeaderKey(p), clientv3.WithPrefix())
		return err == nil && len(el.Kvs) == 1 && clientv3.LeaseID(el.Kvs[0].Lease) == now &&
			s.Leader() && s.Status().Phase == clusterfsm.Serving
	})
	select {
	case <-s.Done():
		t.Fatalf("the scheduler stopped: %v", s.Err())
	default:
	}
}

// TestShardRejoinsInItsLife revokes a serving shard's lease while its
// process lives on, as a network cut or an etcd outage does: the shard
// registers again in the same life (membership.Keep), and the cluster,
// paused meanwhile, must serve on at the same version, restoring nothing
// (issue 20: an outage costs a pause, not a restore). A shard back as
// another life (restarted, empty) is restored.
func TestShardRejoinsInItsLife(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	const p = "/xps/rejoin"
	var shards []*restartable
	var kept []*membership.Kept
	for _, id := range []string{"ams-0", "ams-1"} {
		r := startRestartable(t, id)
		shards = append(shards, r)
		k, err := membership.Keep(testCtx(t), cli, p, membership.Member{Kind: membership.KindAMS, ID: id, Addr: r.addr}, time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		kept = append(kept, k)
	}
	opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 2, Partitions: 8, LeaseTTL: 2 * time.Second,
		TickInterval: 50 * time.Millisecond, Logger: testLogger(t), RejoinWait: time.Minute}
	opts.Config.Snapshot.Store = t.TempDir()
	s := startServing(t, cli, opts)
	v := s.Status().Version
	st, err := snapshot.OpenDir(opts.Config.Snapshot.Store)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the initial snapshot", func() bool {
		_, _, err := snapshot.Latest(st)
		return err == nil
	})

	// Cut off and back: the same life.
	if _, err := cli.Revoke(testCtx(t), kept[1].Current().Lease()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "registered again", func() bool { return kept[1].Registrations() == 2 })
	eventually(t, 30*time.Second, "SERVING again", func() bool {
		return s.Status().Phase == clusterfsm.Serving && hasEvent(t, cli, p, "state DEGRADED")
	})
	if got := s.Status().Version; got != v {
		t.Fatalf("the cluster serves version %d after the shard came back in its life; want %d, no restore (events %v)", got, v, events(t, cli, p))
	}

	// Back as another life: restored at a new version.
	kept[1].Abandon()
	shards[1].restart()
	k, err := membership.Keep(testCtx(t), cli, p, membership.Member{Kind: membership.KindAMS, ID: "ams-1", Addr: shards[1].addr}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	eventually(t, 30*time.Second, "restored at a new version", func() bool {
		st := s.Status()
		return st.Phase == clusterfsm.Serving && st.Version > v
	})
}

// startServing starts a scheduler of opts (with a snapshot store of its
// own when opts has none), stopped when the test ends, and waits until
// the cluster serves.
func startServing(t *testing.T, cli *clientv3.Client, opts scheduler.Options) *scheduler.Scheduler {
	t.Helper()
	if opts.Config.Snapshot.Store == "" {
		opts.Config.Snapshot.Store = t.TempDir()
	}
	s, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	return s
}
