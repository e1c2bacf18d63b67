package controlplane_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
)

// TestOwnerAddrs: WaitOwnerAddrs waits for every worker's address of the
// attempt's version or later (an older one does not count), and an
// address goes with its worker's lease.
func TestOwnerAddrs(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	regs := register(t, cli, c, membership.KindWorker, "worker-0", "worker-1")
	if err := c.PutOwnerAddr(ctx, regs[0], 0, controlplane.OwnerAddr{Addr: "a:1", Version: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutOwnerAddr(ctx, regs[1], 1, controlplane.OwnerAddr{Addr: "b:1", Version: 1}); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() {
		addrs, err := c.WaitOwnerAddrs(ctx, 2, 2)
		if err != nil {
			t.Error(err)
		}
		done <- addrs
	}()
	select {
	case a := <-done:
		t.Fatalf("WaitOwnerAddrs returned %v with worker 1's address of version 1", a)
	case <-time.After(50 * time.Millisecond): // not a guess at speed: it must wait until the put below
	}
	if err := c.PutOwnerAddr(ctx, regs[1], 1, controlplane.OwnerAddr{Addr: "b:2", Version: 2}); err != nil {
		t.Fatal(err)
	}
	if a := <-done; !slices.Equal(a, []string{"a:1", "b:2"}) {
		t.Fatalf("WaitOwnerAddrs = %v", a)
	}
	// Worker 1 leaves: its address goes; a wait at version 2 waits again.
	if left, err := c.WorkersLeft(ctx, []string{"worker-0", "worker-1"}); err != nil || len(left) != 0 {
		t.Fatalf("WorkersLeft before a leave = %v, %v", left, err)
	}
	regs[1].Close()
	if left, err := c.WorkersLeft(ctx, []string{"worker-0", "worker-1"}); err != nil || !slices.Equal(left, []string{"worker-1"}) {
		t.Fatalf("WorkersLeft after worker-1 left = %v, %v", left, err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if a, err := c.WaitOwnerAddrs(short, 2, 2); err == nil {
		t.Fatalf("WaitOwnerAddrs after worker 1 left = %v", a)
	}
}
