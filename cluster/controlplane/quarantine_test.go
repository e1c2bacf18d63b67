package controlplane_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
)

// TestPauseAcksResistForgedRecords is issue 48's probe of the pause
// protocol: records written by anyone with access to etcd (no process of
// the job) must neither block a snapshot's pause nor end it early.
//   - A worker's acknowledgement overwritten after it was made (the
//     probe's "pause acknowledgements of others") still counts: before,
//     the scheduler read only the latest value and waited out its pause
//     timeout while the worker sat paused.
//   - An acknowledgement of a pause not yet requested counts as none, and
//     is reported: before, it ended the wait at once, so the snapshot
//     could be cut while that worker still pushed.
//   - A member record attached to no lease (members register under one)
//     is no worker to wait for, and is reported.
func TestPauseAcksResistForgedRecords(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	register(t, cli, c, membership.KindWorker, "w0", "w1")
	var mu sync.Mutex
	var bad []string
	quarantine := func(b controlplane.BadRecord) {
		mu.Lock()
		defer mu.Unlock()
		bad = append(bad, b.Key)
	}
	reported := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bad)
	}

	// Pause 1: w0 acknowledges, then its record is overwritten with 0;
	// w1 acknowledges.
	if err := c.PutPause(ctx, 1); err != nil {
		t.Fatal(err)
	}
	put(t, cli, controlplane.PauseAckKey(c.Prefix(), "w0"), "1")
	put(t, cli, controlplane.PauseAckKey(c.Prefix(), "w0"), "0")
	put(t, cli, controlplane.PauseAckKey(c.Prefix(), "w1"), "1")
	if err := c.WaitPauseAcks(ctx, []string{"w0", "w1"}, 1, quarantine); err != nil {
		t.Fatalf("an acknowledgement overwritten after it was made: %v", err)
	}

	// Pause 2: a forged acknowledgement of pause 1000 for w0, written
	// before w0 pauses, and a lease-less member record of a worker w9.
	forged := controlplane.PauseAckKey(c.Prefix(), "w0")
	put(t, cli, forged, "1000")
	ghost := membership.MemberKey(c.Prefix(), membership.KindWorker, "w9")
	put(t, cli, ghost, `{"kind":"worker","id":"w9"}`)
	if err := c.PutPause(ctx, 2); err != nil {
		t.Fatal(err)
	}
	put(t, cli, controlplane.PauseAckKey(c.Prefix(), "w1"), "2")
	done := make(chan error, 1)
	go func() { done <- c.WaitPauseAcks(ctx, []string{"w0", "w1", "w9"}, 2, quarantine) }()
	// The wait reports both forged records and goes on waiting for w0:
	// the reports come first, w0's real acknowledgement after them.
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(reported(), forged) || !slices.Contains(reported(), ghost) {
		select {
		case err := <-done:
			t.Fatalf("the wait ended (%v) before w0 paused; reported %v", err, reported())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("reported %v; want %s and %s", reported(), forged, ghost)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the wait ended (%v) before w0 paused", err)
	default:
	}
	put(t, cli, controlplane.PauseAckKey(c.Prefix(), "w0"), "2")
	if err := <-done; err != nil {
		t.Fatalf("after w0's acknowledgement: %v", err)
	}
	if got := reported(); len(got) != 2 {
		t.Errorf("reported %v; want each forged record once", got)
	}
	// A wait that cannot end names the worker it waits for.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := c.PutPause(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitPauseAcks(short, []string{"w0"}, 3, quarantine); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pause 3 without acknowledgements: %v", err)
	}
}

func put(t *testing.T, cli *clientv3.Client, key, val string) {
	t.Helper()
	if _, err := cli.Put(testCtx(t), key, val); err != nil {
		t.Fatal(err)
	}
}
