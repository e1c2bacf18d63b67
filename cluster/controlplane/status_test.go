package controlplane_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
)

// TestStatusProtocol puts progress reports and snapshot and export results
// and follows them with WatchStatus: the stored ones first, then each one
// written.
func TestStatusProtocol(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	regs := register(t, cli, c, membership.KindWorker, "worker-0", "worker-1")
	if err := c.PutProgress(ctx, regs[0], map[string]int{"samples": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutSnapshotResult(ctx, controlplane.SnapshotResult{Seq: 3, Applied: 100}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []controlplane.StatusUpdate
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.WatchStatus(wctx, func(u controlplane.StatusUpdate) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, u)
		})
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	eventuallyT(t, "the stored report and snapshot result", func() bool { return count() == 2 })
	if err := c.PutProgress(ctx, regs[1], map[string]int{"samples": 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutExportResult(ctx, controlplane.ExportResult{Seq: 1, Kind: "full"}); err != nil {
		t.Fatal(err)
	}
	eventuallyT(t, "the new report and export result", func() bool { return count() == 4 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("WatchStatus after its context ended: %v", err)
	}
	var workers []string
	var snap, exp bool
	for _, u := range got {
		switch {
		case u.Worker != "":
			var p struct{ Samples int }
			if err := json.Unmarshal(u.Progress, &p); err != nil || u.Rev == 0 {
				t.Fatalf("report %s: %s (rev %d): %v", u.Worker, u.Progress, u.Rev, err)
			}
			workers = append(workers, u.Worker)
		case u.Snapshot != nil:
			snap = u.Snapshot.Seq == 3 && u.Snapshot.Applied == 100
		case u.Export != nil:
			exp = u.Export.Seq == 1 && u.Export.Kind == "full"
		}
	}
	if len(workers) != 2 || workers[0] != "worker-0" || workers[1] != "worker-1" || !snap || !exp {
		t.Fatalf("updates: workers %v, snapshot %v, export %v", workers, snap, exp)
	}
}

// TestMemberStatuses lists members with their leases, sees a worker's
// progress report go with its lease, and reads the leader.
func TestMemberStatuses(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	regs := register(t, cli, c, membership.KindWorker, "worker-0", "worker-1")
	if err := c.PutProgress(ctx, regs[0], map[string]int{"samples": 1}); err != nil {
		t.Fatal(err)
	}
	ms, err := c.MemberStatuses(ctx)
	if err != nil || len(ms) != 2 || ms[0].ID != "worker-0" || ms[1].ID != "worker-1" {
		t.Fatalf("MemberStatuses = %+v, %v", ms, err)
	}
	for _, m := range ms {
		if m.TTL != 5*time.Second || m.Left <= 0 || m.Left > m.TTL {
			t.Fatalf("member %s: lease TTL %v, left %v", m.ID, m.TTL, m.Left)
		}
	}
	// A report goes with its worker's lease.
	regs[0].Close()
	eventuallyT(t, "worker-0's report to go with its lease", func() bool {
		resp, err := cli.Get(ctx, controlplane.ProgressKey(c.Prefix(), "worker-0"))
		return err == nil && len(resp.Kvs) == 0
	})

	// No scheduler campaigns: no leader; then the first candidate leads.
	if id, ok, err := c.Leader(ctx); ok || err != nil {
		t.Fatalf("Leader with no candidate = %q, %v, %v", id, ok, err)
	}
	sched := register(t, cli, c, membership.KindScheduler, "s1")[0]
	l, err := c.Elect(ctx, sched, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)
	if id, ok, err := c.Leader(ctx); id != "s1" || !ok || err != nil {
		t.Fatalf("Leader = %q, %v, %v; want s1", id, ok, err)
	}
}
