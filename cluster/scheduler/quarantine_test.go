package scheduler_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestForgedRecordsNeitherWedgeNorFoolASnapshot is issue 48's probe, on a
// plaintext cluster: anyone who can write etcd wrote a member record of a
// worker the job does not have (under a lease of its own) and an
// acknowledgement of a pause not yet requested for the job's real worker.
// Before, the snapshot waited for the ghost worker until its pause timeout
// and failed (the probe's 44 s wedge), or took the forged acknowledgement
// for the worker's and cut the snapshot while the worker still pushed. Now
// the scheduler quarantines both records (reported, ignored) and the
// snapshot waits for the real worker's pause only: the worker acknowledges
// only once both reports are out, and the snapshot must succeed after it.
func TestForgedRecordsNeitherWedgeNorFoolASnapshot(t *testing.T) {
	const p = "/xps/forged"
	train := filepath.Join(t.TempDir(), "train.libffm")
	if err := os.WriteFile(train, []byte("1 0:1:1\n0 0:2:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, cli, _, _ := startStoreCluster(t, p, func(o *scheduler.Options) {
		o.SnapshotPauseTimeout = 2 * time.Minute
		o.Config.Job.Train, o.Config.Job.Workers = []string{train}, 1
	})
	conn := testutil.Conn(cli, p)
	defer register(t, cli, p, membership.KindWorker, "worker-0", "").Close()
	gate := make(chan struct{})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	acked := gatedAcker(ctx, conn, "worker-0", gate)
	forge(t, cli, p)

	result := make(chan controlplane.SnapshotResult, 1)
	go func() {
		r, err := conn.RequestSnapshot(ctx, false)
		if err != nil {
			r.Error = err.Error()
		}
		result <- r
	}()
	deadline := time.After(time.Minute)
	for s.Quarantined() < 2 {
		select {
		case r := <-result:
			t.Fatalf("the snapshot ended (%+v) before the worker paused; %d records quarantined", r, s.Quarantined())
		case <-deadline:
			t.Fatalf("%d records quarantined after a minute; want the ghost worker's and the forged acknowledgement", s.Quarantined())
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(gate)
	r := <-result
	if r.Error != "" || r.Workers != 1 {
		t.Fatalf("the snapshot after the worker's pause: %+v; want one written, pausing worker-0 alone", r)
	}
	if !hasEvent(t, cli, p, controlplane.EventQuarantined) {
		t.Errorf("no %q event: %v", controlplane.EventQuarantined, events(t, cli, p))
	}
	cancel()
	<-acked
}

// gatedAcker acknowledges each pause for worker once gate is closed, as
// the worker would at a batch boundary; the channel has WatchPauses' end.
func gatedAcker(ctx context.Context, conn *controlplane.Conn, worker string, gate <-chan struct{}) <-chan error {
	acked := make(chan error, 1)
	go func() {
		acked <- conn.WatchPauses(ctx, 0, func(seq uint64) error {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			return conn.AckPause(ctx, worker, seq)
		})
	}()
	return acked
}

// forge writes the probe's records into cluster p: a ghost worker-7 under
// a lease of the forger's own, and worker-0's acknowledgement of pause
// 1<<40.
func forge(t *testing.T, cli *clientv3.Client, p string) {
	t.Helper()
	lease, err := cli.Grant(testCtx(t), 60)
	if err != nil {
		t.Fatal(err)
	}
	ghost := membership.MemberKey(p, membership.KindWorker, "worker-7")
	if _, err := cli.Put(testCtx(t), ghost, `{"kind":"worker","id":"worker-7","pid":4242}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(testCtx(t), controlplane.PauseAckKey(p, "worker-0"), "1099511627776"); err != nil {
		t.Fatal(err)
	}
}
