package controlplane_test

import (
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestPauseResume runs the pause protocol between a scheduler's calls and a
// worker's Pauser: acknowledged at once while not training, held until the
// trainer pauses while training, a resume at a higher version is a
// restore, and a failure is final.
func TestPauseResume(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	register(t, cli, c, membership.KindWorker, "w0")
	if seq, err := c.LastPause(ctx); err != nil || seq != 0 {
		t.Fatalf("LastPause on a new cluster = %d, %v", seq, err)
	}
	pz, err := c.StartPauser(ctx, "w0", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pz.Close()
	pz.SetVersion(1)

	// Not training: acknowledged at once.
	if err := c.PutPause(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitPauseAcks(ctx, []string{"w0", "gone"}, 1, nil); err != nil {
		t.Fatal(err)
	}
	checkStartWaits(t, ctx, pz)
	if err := c.PutResume(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}

	// Training: the request waits for the trainer's pause.
	if err := pz.StartTraining(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.PutPause(ctx, 2); err != nil {
		t.Fatal(err)
	}
	eventuallyT(t, "the pauser to see request 2", pz.Requested)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = c.WaitPauseAcks(short, []string{"w0"}, 2, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitPauseAcks before the trainer paused: %v", err)
	}
	paused := make(chan error, 1)
	go func() { paused <- pz.Pause(ctx) }()
	if err := c.WaitPauseAcks(ctx, []string{"w0"}, 2, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.PutResume(ctx, 2, 2); err != nil { // resumed at version 2: a restore
		t.Fatal(err)
	}
	if err := <-paused; !errors.Is(err, controlplane.ErrRestored) {
		t.Fatalf("Pause resumed at a higher version: %v, want ErrRestored", err)
	}
	if r, err := c.WaitRestored(ctx, 1); err != nil || r.Version != 2 || r.Seq != 2 {
		t.Fatalf("WaitRestored(1) = %+v, %v", r, err)
	}
	if seq, err := c.LastPause(ctx); err != nil || seq != 2 {
		t.Fatalf("LastPause = %d, %v", seq, err)
	}

	// A failure is final.
	if err := c.PutFailed(ctx, "no snapshot"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitResume(ctx, 99); !errors.Is(err, controlplane.ErrClusterFailed) {
		t.Fatalf("WaitResume after a failure: %v", err)
	}
	if _, err := c.WaitRestored(ctx, 5); !errors.Is(err, controlplane.ErrClusterFailed) {
		t.Fatalf("WaitRestored after a failure: %v", err)
	}
	checkClearFailed(t, ctx, c)
	checkSnapshotTarget(t, ctx, c)
}

// checkSnapshotTarget: the snapshot target round-trips.
func checkSnapshotTarget(t *testing.T, ctx context.Context, c *controlplane.Conn) {
	t.Helper()
	if _, ok, err := c.GetSnapshotTarget(ctx); ok || err != nil {
		t.Fatalf("GetSnapshotTarget before any: %v, %v", ok, err)
	}
	want := controlplane.SnapshotTarget{Pause: 3, Seq: 7, Store: "/tmp/s"}
	if err := c.PutSnapshotTarget(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := c.GetSnapshotTarget(ctx); !ok || err != nil || got != want {
		t.Fatalf("GetSnapshotTarget = %+v, %v, %v", got, ok, err)
	}
}

func eventuallyT(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, what, cond)
}

func TestAssignment(t *testing.T) {
	c, _ := newConn(t)
	ctx := testCtx(t)
	if err := c.PutAssignment(ctx, "bad/name", nil); !errors.Is(err, membership.ErrBadName) {
		t.Fatalf("PutAssignment to a bad name: %v", err)
	}
	want := []reader.FileSplit{{Path: "a", Start: 0, End: 10}, {Path: "b"}}
	got := make(chan []reader.FileSplit, 1)
	go func() {
		s, err := c.WaitAssignment(ctx, "worker-1")
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	if err := c.PutAssignment(ctx, "worker-1", want); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !reflect.DeepEqual(s, want) {
		t.Fatalf("WaitAssignment = %v, want %v", s, want)
	}
	if err := c.PutAssignment(ctx, "worker-2", nil); err != nil {
		t.Fatal(err)
	}
	if s, err := c.WaitAssignment(ctx, "worker-2"); err != nil || s == nil || len(s) != 0 {
		t.Fatalf("an empty assignment = %#v, %v", s, err)
	}
}

// publishDeal publishes a as the scheduler does, from a read of the
// workers' done marks (none here at version 0).
func publishDeal(t *testing.T, ctx context.Context, c *controlplane.Conn, a controlplane.PartitionAssignment) {
	t.Helper()
	_, rev, err := c.PartitionsDone(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.PutPartitionAssignmentIf(ctx, a, rev); !ok || err != nil {
		t.Fatalf("PutPartitionAssignmentIf(generation %d) = %v, %v", a.Generation, ok, err)
	}
}

// TestPartitionDeal: a deal names every worker, acknowledgements release
// the scheduler's wait, and a newer deal ends it with ErrReassigned.
func TestPartitionDeal(t *testing.T) {
	c, _ := newConn(t)
	ctx := testCtx(t)
	a := controlplane.DealPartitions(1, "t", 5, []string{"w1", "w0", "w1"})
	if want := map[string][]int{"w0": {0, 2, 4}, "w1": {1, 3}}; !reflect.DeepEqual(a.Workers, want) {
		t.Fatalf("DealPartitions = %v, want %v", a.Workers, want)
	}
	if _, ok, err := c.GetPartitionAssignment(ctx); ok || err != nil {
		t.Fatalf("GetPartitionAssignment before any: %v, %v", ok, err)
	}
	publishDeal(t, ctx, c, a)
	if got, err := c.WaitPartitionAssignment(ctx, "w1", 1); err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("WaitPartitionAssignment = %+v, %v", got, err)
	}
	acked := make(chan error, 1)
	go func() { acked <- c.WaitPartitionAcks(ctx, a) }()
	for _, w := range []string{"w0", "w1"} {
		if err := c.AckPartitions(ctx, w, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reassigned := c.WatchReassigned(wctx, 1)
	b := controlplane.DealPartitions(2, "t", 5, []string{"w0", "w1", "w2"})
	go func() { acked <- c.WaitPartitionAcks(ctx, b) }()
	publishDeal(t, ctx, c, b)
	<-reassigned
	publishDeal(t, ctx, c, controlplane.DealPartitions(3, "t", 5, []string{"w0"}))
	if err := <-acked; !errors.Is(err, controlplane.ErrReassigned) {
		t.Fatalf("WaitPartitionAcks under a newer deal: %v, want ErrReassigned", err)
	}
}

// TestPartitionsDone: a worker marks its partitions done only under the
// current deal, marks of another cluster version do not count, and a deal
// made before a mark is not published after it.
func TestPartitionsDone(t *testing.T) {
	c, _ := newConn(t)
	ctx := testCtx(t)
	if _, err := c.MarkPartitionsDone(ctx, "w0", 1, 7); err == nil {
		t.Fatal("MarkPartitionsDone with no deal: no error")
	}
	a := controlplane.DealPartitions(1, "t", 4, []string{"w0", "w1"})
	publishDeal(t, ctx, c, a)
	done, rev, err := c.PartitionsDone(ctx, 7)
	if err != nil || len(done) != 0 {
		t.Fatalf("PartitionsDone before any mark = %v, %v", done, err)
	}
	if ok, err := c.MarkPartitionsDone(ctx, "w0", 1, 7); !ok || err != nil {
		t.Fatalf("MarkPartitionsDone under the current deal = %v, %v", ok, err)
	}
	// A deal made from the read before the mark would give w0 partitions.
	stale := controlplane.DealPartitions(2, "t", 4, []string{"w0", "w1", "w2"})
	if ok, err := c.PutPartitionAssignmentIf(ctx, stale, rev); ok || err != nil {
		t.Fatalf("PutPartitionAssignmentIf after a mark = %v, %v; want not published", ok, err)
	}
	if cur, _, _ := c.GetPartitionAssignment(ctx); cur.Generation != 1 {
		t.Fatalf("the deal is generation %d, want 1: the stale deal was published", cur.Generation)
	}
	done, rev, err = c.PartitionsDone(ctx, 7)
	if err != nil || !reflect.DeepEqual(done, map[string]bool{"w0": true}) {
		t.Fatalf("PartitionsDone = %v, %v; want w0", done, err)
	}
	if other, _, err := c.PartitionsDone(ctx, 8); err != nil || len(other) != 0 {
		t.Fatalf("PartitionsDone of another version = %v, %v; want none", other, err)
	}
	b := controlplane.DealPartitions(2, "t", 4, []string{"w1", "w2"})
	if ok, err := c.PutPartitionAssignmentIf(ctx, b, rev); !ok || err != nil {
		t.Fatalf("PutPartitionAssignmentIf = %v, %v", ok, err)
	}
	// w1 finished under deal 1, which deal 2 replaced: it marks nothing
	// and reads its partitions of deal 2 first.
	if ok, err := c.MarkPartitionsDone(ctx, "w1", 1, 7); ok || err != nil {
		t.Fatalf("MarkPartitionsDone under a replaced deal = %v, %v; want false", ok, err)
	}
	if done, _, _ := c.PartitionsDone(ctx, 7); done["w1"] {
		t.Fatal("w1 marked done under a replaced deal")
	}
}

// TestElect: one of two schedulers leads; when it resigns the other is
// elected; the cluster state round-trips.
func TestElect(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	regs := register(t, cli, c, membership.KindScheduler, "s0", "s1")
	l0, err := c.Elect(ctx, regs[0], "s0")
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	var l1 *controlplane.Leadership
	go func() {
		var err error
		l1, err = c.Elect(ctx, regs[1], "s1")
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("a second leader was elected: %v", err)
	case <-time.After(200 * time.Millisecond): // still campaigning, as it must
	}
	l0.Resign(ctx)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	l1.Resign(ctx)
	select {
	case <-regs[0].Lost():
		t.Fatal("resigning revoked the registration's lease")
	default:
	}

	if _, ok, err := c.GetClusterState(ctx); ok || err != nil {
		t.Fatalf("GetClusterState before any: %v, %v", ok, err)
	}
	want := controlplane.ClusterState{Phase: "SERVING", Version: 3, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := c.PutClusterState(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := c.GetClusterState(ctx); !ok || err != nil || !got.Time.Equal(want.Time) || got.Phase != want.Phase || got.Version != 3 {
		t.Fatalf("GetClusterState = %+v, %v, %v", got, ok, err)
	}
}

// TestRequestSnapshot plays the scheduler's side: it watches the request
// key and answers with a result; a failed attempt comes back as an error,
// and the result of an attempt begun before the request is not taken for
// its answer.
func TestRequestSnapshot(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	// answer watches for the next request from the current revision on (so
	// none is missed, whenever the request comes) and answers it with r.
	answer := func(r controlplane.SnapshotResult) {
		resp, err := cli.Get(ctx, controlplane.SnapshotRequestKey(c.Prefix()))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		wch := cli.Watch(wctx, controlplane.SnapshotRequestKey(c.Prefix()), clientv3.WithRev(resp.Header.Revision+1))
		go func() {
			defer cancel()
			for resp := range wch {
				// A stale result first (of an attempt begun before the
				// request), which RequestSnapshot must skip; then r,
				// naming the request's revision as the scheduler does.
				stale := controlplane.SnapshotResult{Seq: 99, Error: "stale"}
				r.Request = resp.Events[0].Kv.ModRevision
				for _, x := range []controlplane.SnapshotResult{stale, r} {
					if err := c.PutSnapshotResult(ctx, x); err != nil {
						t.Error(err)
					}
				}
				return
			}
		}()
	}
	answer(controlplane.SnapshotResult{Seq: 4, Rows: 10})
	res, err := c.RequestSnapshot(ctx, false)
	if err != nil || res.Seq != 4 || res.Rows != 10 {
		t.Fatalf("RequestSnapshot = %+v, %v", res, err)
	}
	answer(controlplane.SnapshotResult{Error: "no snapshot store"})
	if _, err := c.RequestSnapshot(ctx, false); err == nil || !strings.Contains(err.Error(), "no snapshot store") {
		t.Fatalf("a failed snapshot returned %v", err)
	}
}

// checkClearFailed checks, after a failure was put, that a new leader
// clears it to try again, and that ClearFailed keeps a resume.
func checkClearFailed(t *testing.T, ctx context.Context, c *controlplane.Conn) {
	t.Helper()
	if err := c.ClearFailed(ctx); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := c.LastResume(ctx); ok || err != nil {
		t.Fatalf("LastResume after ClearFailed = %+v, %v, %v", r, ok, err)
	}
	if err := c.PutResume(ctx, 3, 4); err != nil {
		t.Fatal(err)
	}
	if err := c.ClearFailed(ctx); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := c.LastResume(ctx); !ok || err != nil || r.Version != 4 {
		t.Fatalf("ClearFailed removed a resume: %+v, %v, %v", r, ok, err)
	}
}

// checkStartWaits: after a pause acknowledged while not training, the
// scheduler may be writing the snapshot, so training must not start
// before the resume (a cancelled StartTraining says it waited).
func checkStartWaits(t *testing.T, ctx context.Context, pz *controlplane.Pauser) {
	t.Helper()
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := pz.StartTraining(stopped); !errors.Is(err, context.Canceled) {
		t.Fatalf("StartTraining before the resume of an acknowledged pause: %v, want a wait (cancelled)", err)
	}
}
