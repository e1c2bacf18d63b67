package scheduler_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/tests/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

var startEtcd = testutil.StartEtcd

func newClient(t *testing.T, srv *etcdembed.Server) *clientv3.Client {
	return testutil.EtcdClient(t, srv.Endpoints())
}

func testCtx(t *testing.T) context.Context { return testutil.Ctx(t, 30*time.Second) }

var eventually = testutil.Eventually

// events renders the recorded events as "type member" or "state STATE".
func events(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	evs, err := testutil.Conn(cli, prefix).ListEvents(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		switch {
		case e.Member != nil:
			out = append(out, e.Type+" "+e.Member.String())
		case e.Type == controlplane.EventState:
			out = append(out, "state "+e.State)
		default:
			out = append(out, e.Type)
		}
	}
	return out
}

func hasEvent(t *testing.T, cli *clientv3.Client, prefix, want string) bool {
	for _, e := range events(t, cli, prefix) {
		if e == want {
			return true
		}
	}
	return false
}

// startShard serves a blank shard on loopback gRPC, as a shard process
// does (the scheduler begins or restores it), and returns its address.
func startShard(t *testing.T, id string) string { return startRestartable(t, id).addr }

func register(t *testing.T, cli *clientv3.Client, prefix, kind, id, addr string) *membership.Registration {
	t.Helper()
	r, err := membership.Register(testCtx(t), cli, prefix, membership.Member{Kind: kind, ID: id, Addr: addr}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestScheduler(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	const p = "/xps/it"
	s, err := scheduler.New(cli, scheduler.Options{
		Prefix: p, ID: "sched-1", Shards: 2, Partitions: 16,
		LeaseTTL: 2 * time.Second, TickInterval: 50 * time.Millisecond, Logger: testLogger(t),
		RejoinWait: -1, // a lost lease is a death at once (TestShardRejoinsInItsLife waits)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Status(); st.Phase != clusterfsm.Forming {
		t.Fatalf("initial status %v", st)
	}

	cliA, regA, regB := checkTwoShardsServe(t, srv, s, cli, p)
	defer regB.Close()
	checkWorkerLeave(t, cli, p)
	checkShardLossFails(t, s, cli, cliA, regA, p)
	checkSchedulerClose(t, s, cli, p)
	_ = regA.Close() // the lease is gone; only stops the goroutine
}

// checkTwoShardsServe registers two shards, ams-1 and ams-0, one by
// one once the scheduler s watches (so that the events come in a known
// order), each with its own client so that one can die alone: s publishes
// a map of both and serves. It returns ams-1's client and both
// registrations.
func checkTwoShardsServe(t *testing.T, srv *etcdembed.Server, s *scheduler.Scheduler, cli *clientv3.Client, p string) (
	cliA *clientv3.Client, regA, regB *membership.Registration) {
	eventually(t, 5*time.Second, "the scheduler to see itself", func() bool {
		return hasEvent(t, cli, p, "joined scheduler/sched-1")
	})
	cliA, cliB := newClient(t, srv), newClient(t, srv)
	addr1, addr0 := startShard(t, "ams-1"), startShard(t, "ams-0")
	regA = register(t, cliA, p, membership.KindAMS, "ams-1", addr1)
	regB = register(t, cliB, p, membership.KindAMS, "ams-0", addr0)

	m, err := testutil.Conn(cli, p).WaitShardMap(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.Version != 1 || m.Partitions != 16 ||
		!reflect.DeepEqual(m.Shards, []string{"ams-0", "ams-1"}) ||
		!reflect.DeepEqual(m.Addrs, []string{addr0, addr1}) {
		t.Fatalf("published map %+v", m)
	}
	eventually(t, 5*time.Second, "SERVING", func() bool {
		return s.Status().Phase == clusterfsm.Serving
	})
	return cliA, regA, regB
}

// checkWorkerLeave checks that a worker that leaves gracefully is reported
// as a clean leave.
func checkWorkerLeave(t *testing.T, cli *clientv3.Client, p string) {
	w := register(t, cli, p, membership.KindWorker, "worker-0", "")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the worker's leave", func() bool { return hasEvent(t, cli, p, "left worker/worker-0") })
}

// checkShardLossFails kills shard ams-1 (registered as regA): its client
// cliA goes away without a left marker. Without a snapshot store its rows
// cannot come back: the cluster goes DEGRADED, then gives up (FAILED). It
// checks every event of TestScheduler.
func checkShardLossFails(t *testing.T, s *scheduler.Scheduler, cli, cliA *clientv3.Client, regA *membership.Registration, p string) {
	cliA.Close()
	select {
	case <-regA.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed for the dead shard")
	}
	eventually(t, 20*time.Second, "the lease expiry report", func() bool {
		return hasEvent(t, cli, p, "lease-expired ams/ams-1")
	})
	eventually(t, 5*time.Second, "FAILED", func() bool {
		return s.Status().Phase == clusterfsm.Failed
	})
	// Status changes before the state event is written to etcd: wait for
	// the event too before comparing the whole list.
	eventually(t, 5*time.Second, "the FAILED event", func() bool { return hasEvent(t, cli, p, "state FAILED") })

	got := events(t, cli, p)
	want := []string{
		"joined scheduler/sched-1",
		"joined ams/ams-1",
		"joined ams/ams-0",
		"state RESTORING", // the new cluster's shards begin empty
		"shardmap",
		"state SERVING",
		"joined worker/worker-0",
		"left worker/worker-0",
		"lease-expired ams/ams-1",
		"state DEGRADED",
		"state FAILED",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkSchedulerClose closes s: Done is closed, Err is nil, and the
// scheduler left its left marker.
func checkSchedulerClose(t *testing.T, s *scheduler.Scheduler, cli *clientv3.Client, p string) {
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done open after Close")
	}
	if s.Err() != nil {
		t.Fatalf("Err after Close: %v", s.Err())
	}
	resp, err := cli.Get(testCtx(t), membership.LeftKey(p, membership.KindScheduler, "sched-1"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("scheduler left no marker: %v %v", resp, err)
	}
}

// TestSchedulerSyncAndLoss starts the scheduler after the shards registered
// (the initial sync path), then kills the scheduler's own client: it must stop
// on its own with ErrLostRegistration.
func TestSchedulerSyncAndLoss(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	p := membership.DefaultPrefix
	for _, id := range []string{"b", "a", "c"} {
		r := register(t, cli, p, membership.KindAMS, id, startShard(t, id))
		defer r.Close()
	}
	schedCli := newClient(t, srv)
	s, err := scheduler.New(schedCli, scheduler.Options{Shards: 3, Partitions: 3, LeaseTTL: time.Second,
		TickInterval: 50 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := testutil.Conn(cli, p).WaitShardMap(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Shards, []string{"a", "b", "c"}) || !reflect.DeepEqual(m.Assign, []uint16{0, 1, 2}) {
		t.Fatalf("published map %+v", m)
	}

	schedCli.Close()
	select {
	case <-s.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("scheduler still running after its client was closed")
	}
	if !errors.Is(s.Err(), scheduler.ErrLostRegistration) {
		t.Fatalf("Err = %v, want ErrLostRegistration", s.Err())
	}
	if err := s.Close(); !errors.Is(err, scheduler.ErrLostRegistration) {
		t.Fatalf("Close = %v, want it to report ErrLostRegistration", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := scheduler.Options{Prefix: "nope/", ID: "a/b", Shards: 0, LeaseTTL: -1, Partitions: 100_000_000}
	o.EnsureDefaults()
	err := o.Validate()
	if !errors.Is(err, scheduler.ErrBadConfig) {
		t.Fatalf("err %v, want ErrBadConfig", err)
	}
	for _, want := range []string{"prefix", "id", "Shards", "LeaseTTL", "Partitions 100000000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	ok := scheduler.Options{Shards: 2}
	ok.EnsureDefaults()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.Prefix != membership.DefaultPrefix || ok.Partitions != 4096 || ok.LeaseTTL != 5*time.Second || ok.ID == "" {
		t.Fatalf("defaults %+v", ok)
	}
	if _, err := scheduler.New(nil, scheduler.Options{}); !errors.Is(err, scheduler.ErrBadConfig) {
		t.Fatalf("New with no Shards: %v", err)
	}
}
