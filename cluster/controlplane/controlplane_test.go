package controlplane_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/tests/testutil"
)

// etcd is the server shared by the tests of this package; each test works
// under its own prefix.
var etcd testutil.SharedEtcd

func TestMain(m *testing.M) { os.Exit(etcd.Run(m)) }

func newPrefix(*testing.T) string { return etcd.Prefix() }

func newClient(t *testing.T) *clientv3.Client { return etcd.Client(t) }

func testCtx(t *testing.T) context.Context { return testutil.Ctx(t, 20*time.Second) }

// register registers members of kind with ids in c's cluster; they leave
// when the test ends.
func register(t *testing.T, cli *clientv3.Client, c *controlplane.Conn, kind string, ids ...string) []*membership.Registration {
	t.Helper()
	var regs []*membership.Registration
	for _, id := range ids {
		r, err := membership.Register(testCtx(t), cli, c.Prefix(), membership.Member{Kind: kind, ID: id}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		regs = append(regs, r)
	}
	return regs
}

// newConn returns a Conn of a cluster no other test uses.
func newConn(t *testing.T) (*controlplane.Conn, *clientv3.Client) {
	cli := newClient(t)
	c, err := controlplane.New(cli, newPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
	return c, cli
}

func TestNew(t *testing.T) {
	cli := newClient(t)
	if c, err := controlplane.New(cli, ""); err != nil || c.Prefix() != membership.DefaultPrefix {
		t.Fatalf("New(cli, \"\") = %v, %v", c, err)
	}
	for _, bad := range []string{"xps", "/xps/", "/xps/a/"} {
		if _, err := controlplane.New(cli, bad); !errors.Is(err, membership.ErrBadName) {
			t.Errorf("New(%q): err %v, want ErrBadName", bad, err)
		}
	}
	if _, err := controlplane.New(nil, "/xps/x"); err == nil {
		t.Error("New without a client succeeded")
	}
	p := "/xps/default"
	if a, b := controlplane.EventKey(p, 9), controlplane.EventKey(p, 10); a >= b {
		t.Fatalf("event keys do not sort: %q >= %q", a, b)
	}
}

func TestShardMap(t *testing.T) {
	c, cli := newConn(t)
	ctx := testCtx(t)
	p := c.Prefix()
	if _, err := c.GetShardMap(ctx); !errors.Is(err, controlplane.ErrNoShardMap) {
		t.Fatalf("GetShardMap on empty prefix: err %v", err)
	}
	if err := c.PublishShardMap(ctx, &ams.ShardMap{Partitions: 2}); !errors.Is(err, ams.ErrBadShardMap) {
		t.Fatalf("publishing an invalid map: err %v", err)
	}

	want, err := ams.NewShardMap(1, 8, []string{"a", "b"}, []string{"h:1", "h:2"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		m   *ams.ShardMap
		err error
	}
	got := make(chan result, 1)
	go func() {
		m, err := c.WaitShardMap(ctx)
		got <- result{m, err}
	}()
	// A garbage value is skipped; the valid map that follows is returned.
	if _, err := cli.Put(ctx, controlplane.ShardMapKey(p), "{not json"); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishShardMap(ctx, want); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !reflect.DeepEqual(r.m, want) {
		t.Fatalf("WaitShardMap = %+v, want %+v", r.m, want)
	}
	// Already published: returns at once.
	if m, err := c.WaitShardMap(ctx); err != nil || !reflect.DeepEqual(m, want) {
		t.Fatalf("WaitShardMap on a published map = %+v, %v", m, err)
	}
	if m, err := c.GetShardMap(ctx); err != nil || !reflect.DeepEqual(m, want) {
		t.Fatalf("GetShardMap = %+v, %v", m, err)
	}

	// Waiting for a newer version times out, naming the map it saw.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = c.WaitShardMapVersion(short, 2)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "version 1 < 2") {
		t.Fatalf("WaitShardMapVersion(2): err %v", err)
	}
}

func TestEvents(t *testing.T) {
	c, _ := newConn(t)
	ctx := testCtx(t)
	m := membership.Member{Kind: "ams", ID: "a"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := []controlplane.Event{
		{Time: t0, Type: controlplane.EventJoined, Member: &m},
		{Time: t0, Type: controlplane.EventState, State: "SERVING", Version: 1},
		{Time: t0, Type: controlplane.EventLeaseExpired, Member: &m},
	}
	for i, e := range in {
		// seq 8, 9, 10: keys must still sort numerically.
		if err := c.PutEvent(ctx, uint64(8+i), e); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ListEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("ListEvents = %+v, want %+v", out, in)
	}
}

// TestBarrier: a barrier of 2 holds the first member until the second
// arrives; keys under the barriers' prefix that are not arrivals of a
// member of the barrier's kind at that barrier (written by hand, or by
// any client of a cluster without TLS) do not count.
func TestBarrier(t *testing.T) {
	ctx := testCtx(t)
	c, cli := newConn(t)
	regs := register(t, cli, c, membership.KindWorker, "w0", "w1")
	dir := controlplane.BarriersPrefix(c.Prefix())
	junk := func(keys ...string) {
		for _, k := range keys {
			if _, err := cli.Put(ctx, k, "{}"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Before the first arrival (its first count) and while it waits (the
	// counts its watch makes).
	junk(dir+"final", dir+"/final", dir+"worker.w1/other")
	arrived := make(chan error, 1)
	go func() { arrived <- c.Barrier(ctx, regs[0], "final", 2) }()
	for _, more := range [][]string{nil, {dir + "worker.w1/final/x", controlplane.BarrierKey(c.Prefix(), membership.KindAMS, "a0", "final")}} {
		junk(more...)
		select {
		case err := <-arrived:
			t.Fatalf("the barrier let one of two through: %v", err)
		case <-time.After(300 * time.Millisecond): // still blocked, as it must be
		}
	}
	if err := c.Barrier(ctx, regs[1], "final", 2); err != nil {
		t.Fatal(err)
	}
	if err := <-arrived; err != nil {
		t.Fatal(err)
	}
	// A cancelled wait returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Barrier(cctx, regs[0], "other", 2); err == nil {
		t.Fatal("a barrier with a cancelled context returned nil")
	}
}
