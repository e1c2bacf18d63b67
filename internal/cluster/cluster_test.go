package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/internal/cluster"
	"github.com/xdlgo/xps/internal/etcdembed"
	"github.com/xdlgo/xps/internal/testutil"
)

// endpoints of the etcd server shared by the tests of this package; each
// test works under its own prefix.
var endpoints []string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cluster-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	endpoints = srv.Endpoints()
	code := m.Run()
	srv.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

var prefixSeq atomic.Int64

// newPrefix returns a prefix no other test uses.
func newPrefix(t *testing.T) string {
	return fmt.Sprintf("/xps/test-%d", prefixSeq.Add(1))
}

func newClient(t *testing.T) *clientv3.Client { return testutil.EtcdClient(t, endpoints) }

func testCtx(t *testing.T) context.Context { return testutil.Ctx(t, 20*time.Second) }

var eventually = testutil.Eventually

func getKey(t *testing.T, cli *clientv3.Client, key string) []byte {
	t.Helper()
	resp, err := cli.Get(testCtx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	return resp.Kvs[0].Value
}

func TestKeys(t *testing.T) {
	p, err := cluster.Prefix("default")
	if err != nil || p != cluster.DefaultPrefix {
		t.Fatalf("Prefix(default) = %q, %v", p, err)
	}
	for _, bad := range []string{"", "a/b", "sp ace", strings.Repeat("x", 129)} {
		if _, err := cluster.Prefix(bad); !errors.Is(err, cluster.ErrBadName) {
			t.Errorf("Prefix(%q): err %v, want ErrBadName", bad, err)
		}
	}
	key := cluster.MemberKey(p, "ams", "ams-0")
	if key != "/xps/default/members/ams/ams-0" {
		t.Fatalf("MemberKey = %q", key)
	}
	if k, id, ok := cluster.ParseMemberKey(p, key); !ok || k != "ams" || id != "ams-0" {
		t.Fatalf("ParseMemberKey(%q) = %q %q %v", key, k, id, ok)
	}
	if _, _, ok := cluster.ParseMemberKey(p, cluster.LeftKey(p, "ams", "x")); ok {
		t.Fatal("ParseMemberKey accepted a left key")
	}
	if k, id, ok := cluster.ParseLeftKey(p, cluster.LeftKey(p, "worker", "w")); !ok || k != "worker" || id != "w" {
		t.Fatalf("ParseLeftKey = %q %q %v", k, id, ok)
	}
	for _, bad := range []string{p + "/members/ams", p + "/members/ams/", p + "/members/ams/a/b", p + "/membersx/ams/a"} {
		if _, _, ok := cluster.ParseMemberKey(p, bad); ok {
			t.Errorf("ParseMemberKey accepted %q", bad)
		}
	}
	if a, b := cluster.EventKey(p, 9), cluster.EventKey(p, 10); a >= b {
		t.Fatalf("event keys do not sort: %q >= %q", a, b)
	}
}

func TestMemberValidate(t *testing.T) {
	for _, m := range []cluster.Member{{Kind: "ams"}, {Kind: "db", ID: "x"}, {Kind: "worker", ID: "a/b"}} {
		if err := m.Validate(); !errors.Is(err, cluster.ErrBadMember) {
			t.Errorf("%+v: err %v, want ErrBadMember", m, err)
		}
	}
	if err := (cluster.Member{Kind: "scheduler", ID: "host-1:2"}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestRegisterListClose(t *testing.T) {
	cli := newClient(t)
	ctx := testCtx(t)
	p := newPrefix(t)
	a, err := cluster.Register(ctx, cli, p, cluster.Member{Kind: "ams", ID: "a", Addr: "h:1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cluster.Register(ctx, cli, p, cluster.Member{Kind: "worker", ID: "w"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a.Member().PID != os.Getpid() || a.Member().Started.IsZero() {
		t.Fatalf("PID and Started not filled in: %+v", a.Member())
	}
	if a.TTL() < time.Second {
		t.Fatalf("TTL %v", a.TTL())
	}

	// A second registration of the same member is refused.
	if _, err := cluster.Register(ctx, cli, p, cluster.Member{Kind: "ams", ID: "a"}, time.Second); !errors.Is(err, cluster.ErrMemberExists) {
		t.Fatalf("duplicate Register: err %v, want ErrMemberExists", err)
	}

	all, err := cluster.ListMembers(ctx, cli, p, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].String() != "ams/a" || all[1].String() != "worker/w" {
		t.Fatalf("ListMembers = %+v", all)
	}
	if !all[0].Started.Equal(a.Member().Started) || all[0].Addr != "h:1" {
		t.Fatalf("stored member %+v, registered %+v", all[0], a.Member())
	}
	shards, err := cluster.ListMembers(ctx, cli, p, "ams")
	if err != nil || len(shards) != 1 {
		t.Fatalf("ListMembers(ams) = %+v, %v", shards, err)
	}
	if _, err := cluster.ListMembers(ctx, cli, p, "bogus"); !errors.Is(err, cluster.ErrBadName) {
		t.Fatalf("ListMembers(bogus): err %v", err)
	}

	// Graceful leave: member key gone, left marker written, Lost stays open.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if v := getKey(t, cli, cluster.MemberKey(p, "ams", "a")); v != nil {
		t.Fatalf("member key still holds %s", v)
	}
	left := getKey(t, cli, cluster.LeftKey(p, "ams", "a"))
	if left == nil || !bytes.Contains(left, []byte(`"left"`)) {
		t.Fatalf("left marker %s", left)
	}
	if m, err := cluster.DecodeMember("ams", "a", left); err != nil || m.Addr != "h:1" {
		t.Fatalf("decoding left marker: %+v, %v", m, err)
	}
	select {
	case <-a.Lost():
		t.Fatal("Close closed Lost")
	default:
	}

	// Registering again clears the stale left marker.
	a2, err := cluster.Register(ctx, cli, p, cluster.Member{Kind: "ams", ID: "a", Addr: "h:2"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v := getKey(t, cli, cluster.LeftKey(p, "ams", "a")); v != nil {
		t.Fatalf("stale left marker kept: %s", v)
	}
	for _, r := range []*cluster.Registration{a2, w} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if all, err := cluster.ListMembers(ctx, cli, p, ""); err != nil || len(all) != 0 {
		t.Fatalf("after Close: %+v, %v", all, err)
	}
}

// TestLost stops a member's keep-alive by closing its client: Lost closes,
// etcd expires the lease and deletes the key, and no left marker is written.
func TestLost(t *testing.T) {
	watcher := newClient(t)
	dying := newClient(t)
	p := newPrefix(t)
	r, err := cluster.Register(testCtx(t), dying, p, cluster.Member{Kind: "ams", ID: "x"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dying.Close()
	select {
	case <-r.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after the client was closed")
	}
	eventually(t, 15*time.Second, "the lease to expire", func() bool {
		return getKey(t, watcher, cluster.MemberKey(p, "ams", "x")) == nil
	})
	if err := r.Close(); err == nil {
		t.Log("Close after loss returned nil") // allowed: the lease is gone anyway
	}
	if v := getKey(t, watcher, cluster.LeftKey(p, "ams", "x")); v != nil {
		t.Fatalf("left marker written for a lost member: %s", v)
	}
}

func TestShardMap(t *testing.T) {
	cli := newClient(t)
	ctx := testCtx(t)
	p := newPrefix(t)
	if _, err := cluster.GetShardMap(ctx, cli, p); !errors.Is(err, cluster.ErrNoShardMap) {
		t.Fatalf("GetShardMap on empty prefix: err %v", err)
	}
	if err := cluster.PublishShardMap(ctx, cli, p, &ams.ShardMap{Partitions: 2}); !errors.Is(err, ams.ErrBadShardMap) {
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
		m, err := cluster.WaitShardMap(ctx, cli, p)
		got <- result{m, err}
	}()
	// A garbage value is skipped; the valid map that follows is returned.
	if _, err := cli.Put(ctx, cluster.ShardMapKey(p), "{not json"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.PublishShardMap(ctx, cli, p, want); err != nil {
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
	if m, err := cluster.WaitShardMap(ctx, cli, p); err != nil || !reflect.DeepEqual(m, want) {
		t.Fatalf("WaitShardMap on a published map = %+v, %v", m, err)
	}
	if m, err := cluster.GetShardMap(ctx, cli, p); err != nil || !reflect.DeepEqual(m, want) {
		t.Fatalf("GetShardMap = %+v, %v", m, err)
	}

	// Waiting for a newer version times out, naming the map it saw.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = cluster.WaitShardMapVersion(short, cli, p, 2)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "version 1 < 2") {
		t.Fatalf("WaitShardMapVersion(2): err %v", err)
	}
}

func TestEvents(t *testing.T) {
	cli := newClient(t)
	ctx := testCtx(t)
	p := newPrefix(t)
	m := cluster.Member{Kind: "ams", ID: "a"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := []cluster.Event{
		{Time: t0, Type: cluster.EventJoined, Member: &m},
		{Time: t0, Type: cluster.EventState, State: "SERVING", Version: 1},
		{Time: t0, Type: cluster.EventLeaseExpired, Member: &m},
	}
	for i, e := range in {
		// seq 8, 9, 10: keys must still sort numerically.
		if err := cluster.PutEvent(ctx, cli, p, uint64(8+i), e); err != nil {
			t.Fatal(err)
		}
	}
	out, err := cluster.ListEvents(ctx, cli, p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("ListEvents = %+v, want %+v", out, in)
	}
}

func TestDial(t *testing.T) {
	cli, err := cluster.Dial(testCtx(t), endpoints, nil)
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if _, err := cluster.Dial(testCtx(t), nil, nil); err == nil {
		t.Fatal("Dial with no endpoints succeeded")
	}
}

func TestZapLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	z := cluster.ZapLogger(l, slog.LevelWarn).With(zap.String("comp", "etcd"))
	z.Info("quiet")
	z.Warn("loud", zap.Int("n", 3), zap.Strings("urls", []string{"u1"}))
	z.Error("bad")
	s := buf.String()
	if strings.Contains(s, "quiet") {
		t.Errorf("info entry forwarded below min level: %s", s)
	}
	for _, want := range []string{"level=WARN msg=loud comp=etcd n=3 urls=[u1]", "level=ERROR msg=bad comp=etcd"} {
		if !strings.Contains(s, want) {
			t.Errorf("log %q lacks %q", s, want)
		}
	}
	cluster.ZapLogger(nil, slog.LevelInfo).Error("dropped") // must not panic
}

func TestBarrier(t *testing.T) {
	ctx := testCtx(t)
	cli := newClient(t)
	prefix := newPrefix(t)
	var regs []*cluster.Registration
	for _, id := range []string{"w0", "w1"} {
		r, err := cluster.Register(ctx, cli, prefix, cluster.Member{Kind: cluster.KindWorker, ID: id}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		regs = append(regs, r)
	}
	arrived := make(chan error, 1)
	go func() { arrived <- regs[0].Barrier(ctx, "final", 2) }()
	select {
	case err := <-arrived:
		t.Fatalf("the barrier let one of two through: %v", err)
	case <-time.After(300 * time.Millisecond): // still blocked, as it must be
	}
	if err := regs[1].Barrier(ctx, "final", 2); err != nil {
		t.Fatal(err)
	}
	if err := <-arrived; err != nil {
		t.Fatal(err)
	}
	// A cancelled wait returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := regs[0].Barrier(cctx, "other", 2); err == nil {
		t.Fatal("a barrier with a cancelled context returned nil")
	}
}

// TestRegisterAfterKill: a member whose process died (its client gone, its
// lease not revoked) and is started again at once registers as soon as the
// dead run's lease expires, rather than failing with ErrMemberExists.
func TestRegisterAfterKill(t *testing.T) {
	dying := newClient(t)
	p := newPrefix(t)
	old, err := cluster.Register(testCtx(t), dying, p, cluster.Member{Kind: "ams", ID: "k"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dying.Close() // as kill -9: the lease is left to expire
	<-old.Lost()
	r, err := cluster.Register(testCtx(t), newClient(t), p, cluster.Member{Kind: "ams", ID: "k"}, time.Second)
	if err != nil {
		t.Fatalf("restart within the lease TTL: %v", err)
	}
	r.Close()
}
