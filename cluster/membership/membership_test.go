package membership_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

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
	p, err := membership.Prefix("default")
	if err != nil || p != membership.DefaultPrefix {
		t.Fatalf("Prefix(default) = %q, %v", p, err)
	}
	for _, bad := range []string{"", "a/b", "sp ace", strings.Repeat("x", 129)} {
		if _, err := membership.Prefix(bad); !errors.Is(err, membership.ErrBadName) {
			t.Errorf("Prefix(%q): err %v, want ErrBadName", bad, err)
		}
	}
	key := membership.MemberKey(p, "ams", "ams-0")
	if key != "/xps/default/members/ams/ams-0" {
		t.Fatalf("MemberKey = %q", key)
	}
	if k, id, ok := membership.ParseMemberKey(p, key); !ok || k != "ams" || id != "ams-0" {
		t.Fatalf("ParseMemberKey(%q) = %q %q %v", key, k, id, ok)
	}
	if _, _, ok := membership.ParseMemberKey(p, membership.LeftKey(p, "ams", "x")); ok {
		t.Fatal("ParseMemberKey accepted a left key")
	}
	if k, id, ok := membership.ParseLeftKey(p, membership.LeftKey(p, "worker", "w")); !ok || k != "worker" || id != "w" {
		t.Fatalf("ParseLeftKey = %q %q %v", k, id, ok)
	}
	for _, bad := range []string{p + "/members/ams", p + "/members/ams/", p + "/members/ams/a/b", p + "/membersx/ams/a"} {
		if _, _, ok := membership.ParseMemberKey(p, bad); ok {
			t.Errorf("ParseMemberKey accepted %q", bad)
		}
	}
}

func TestMemberValidate(t *testing.T) {
	for _, m := range []membership.Member{{Kind: "ams"}, {Kind: "db", ID: "x"}, {Kind: "worker", ID: "a/b"}} {
		if err := m.Validate(); !errors.Is(err, membership.ErrBadMember) {
			t.Errorf("%+v: err %v, want ErrBadMember", m, err)
		}
	}
	if err := (membership.Member{Kind: "scheduler", ID: "host-1:2"}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestRegisterListClose(t *testing.T) {
	cli := newClient(t)
	ctx := testCtx(t)
	p := newPrefix(t)
	a, err := membership.Register(ctx, cli, p, membership.Member{Kind: "ams", ID: "a", Addr: "h:1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w, err := membership.Register(ctx, cli, p, membership.Member{Kind: "worker", ID: "w"}, time.Second)
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
	if _, err := membership.Register(ctx, cli, p, membership.Member{Kind: "ams", ID: "a"}, time.Second); !errors.Is(err, membership.ErrMemberExists) {
		t.Fatalf("duplicate Register: err %v, want ErrMemberExists", err)
	}

	checkListMembers(t, ctx, cli, p, a)
	checkGracefulLeave(t, cli, p, a)
	checkRegisterAgain(t, ctx, cli, p, w)
}

// checkListMembers checks the members under p: ams/a, registered as a,
// and worker/w.
func checkListMembers(t *testing.T, ctx context.Context, cli *clientv3.Client, p string, a *membership.Registration) {
	all, err := membership.ListMembers(ctx, cli, p, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].String() != "ams/a" || all[1].String() != "worker/w" {
		t.Fatalf("ListMembers = %+v", all)
	}
	if !all[0].Started.Equal(a.Member().Started) || all[0].Addr != "h:1" {
		t.Fatalf("stored member %+v, registered %+v", all[0], a.Member())
	}
	shards, err := membership.ListMembers(ctx, cli, p, "ams")
	if err != nil || len(shards) != 1 {
		t.Fatalf("ListMembers(ams) = %+v, %v", shards, err)
	}
	if _, err := membership.ListMembers(ctx, cli, p, "bogus"); !errors.Is(err, membership.ErrBadName) {
		t.Fatalf("ListMembers(bogus): err %v", err)
	}
}

// checkGracefulLeave closes a, registered as ams/a at h:1: its member key
// is gone, its left marker written, and Lost stays open.
func checkGracefulLeave(t *testing.T, cli *clientv3.Client, p string, a *membership.Registration) {
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if v := getKey(t, cli, membership.MemberKey(p, "ams", "a")); v != nil {
		t.Fatalf("member key still holds %s", v)
	}
	left := getKey(t, cli, membership.LeftKey(p, "ams", "a"))
	if left == nil || !bytes.Contains(left, []byte(`"left"`)) {
		t.Fatalf("left marker %s", left)
	}
	if m, err := membership.DecodeMember("ams", "a", left); err != nil || m.Addr != "h:1" {
		t.Fatalf("decoding left marker: %+v, %v", m, err)
	}
	select {
	case <-a.Lost():
		t.Fatal("Close closed Lost")
	default:
	}
}

// checkRegisterAgain registers ams/a again after checkGracefulLeave: the
// stale left marker is cleared. Then it closes it and w, the last member.
func checkRegisterAgain(t *testing.T, ctx context.Context, cli *clientv3.Client, p string, w *membership.Registration) {
	a2, err := membership.Register(ctx, cli, p, membership.Member{Kind: "ams", ID: "a", Addr: "h:2"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v := getKey(t, cli, membership.LeftKey(p, "ams", "a")); v != nil {
		t.Fatalf("stale left marker kept: %s", v)
	}
	// Abandoning w deletes its key at once, with no left marker: a death,
	// not a graceful leave; a later Close changes nothing.
	if err := w.Abandon(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close after Abandon: %v", err)
	}
	if v := getKey(t, cli, membership.MemberKey(p, "worker", "w")); v != nil {
		t.Fatalf("abandoned member key still holds %s", v)
	}
	if v := getKey(t, cli, membership.LeftKey(p, "worker", "w")); v != nil {
		t.Fatalf("abandoned member left a marker: %s", v)
	}
	if err := a2.Close(); err != nil {
		t.Fatal(err)
	}
	if all, err := membership.ListMembers(ctx, cli, p, ""); err != nil || len(all) != 0 {
		t.Fatalf("after Close: %+v, %v", all, err)
	}
}

// TestLost stops a member's keep-alive by closing its client: Lost closes,
// etcd expires the lease and deletes the key, and no left marker is written.
func TestLost(t *testing.T) {
	watcher := newClient(t)
	dying := newClient(t)
	p := newPrefix(t)
	r, err := membership.Register(testCtx(t), dying, p, membership.Member{Kind: "ams", ID: "x"}, time.Second)
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
		return getKey(t, watcher, membership.MemberKey(p, "ams", "x")) == nil
	})
	if err := r.Close(); err == nil {
		t.Log("Close after loss returned nil") // allowed: the lease is gone anyway
	}
	if v := getKey(t, watcher, membership.LeftKey(p, "ams", "x")); v != nil {
		t.Fatalf("left marker written for a lost member: %s", v)
	}
}

func TestDial(t *testing.T) {
	cli, err := membership.Dial(testCtx(t), etcd.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if _, err := membership.Dial(testCtx(t), nil, nil); err == nil {
		t.Fatal("Dial with no endpoints succeeded")
	}
	// Nothing listens there: an error naming the address within the
	// bound, not a silent wait.
	_, err = membership.Dial(testCtx(t), []string{"127.0.0.1:1"}, nil)
	if !errors.Is(err, membership.ErrUnreachable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Dial of an address nothing listens on = %v, want ErrUnreachable naming it", err)
	}
}

func TestZapLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	z := membership.ZapLogger(l, slog.LevelWarn).With(zap.String("comp", "etcd"))
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
	membership.ZapLogger(nil, slog.LevelInfo).Error("dropped") // must not panic
}

// TestRegisterAfterKill: a member whose process died (its client gone, its
// lease not revoked) and is started again at once registers as soon as the
// dead run's lease expires, rather than failing with ErrMemberExists.
func TestRegisterAfterKill(t *testing.T) {
	dying := newClient(t)
	p := newPrefix(t)
	old, err := membership.Register(testCtx(t), dying, p, membership.Member{Kind: "ams", ID: "k"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dying.Close() // as kill -9: the lease is left to expire
	<-old.Lost()
	r, err := membership.Register(testCtx(t), newClient(t), p, membership.Member{Kind: "ams", ID: "k"}, time.Second)
	if err != nil {
		t.Fatalf("restart within the lease TTL: %v", err)
	}
	r.Close()
}

// TestKeep revokes a kept registration's lease, as an etcd outage longer
// than the TTL ends it: the member is registered again, the same life,
// under a new lease; Close then leaves gracefully.
func TestKeep(t *testing.T) {
	cli := newClient(t)
	ctx := testCtx(t)
	p := newPrefix(t)
	k, err := membership.Keep(ctx, cli, p, membership.Member{Kind: "worker", ID: "w"}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := k.Current()
	if _, err := cli.Revoke(ctx, first.Lease()); err != nil {
		t.Fatal(err)
	}
	<-first.Lost()
	deadline := time.Now().Add(30 * time.Second)
	for k.Registrations() != 2 {
		if time.Now().After(deadline) {
			t.Fatal("not registered again within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := k.Current()
	if second.Lease() == first.Lease() || second.Member().PID != first.Member().PID || !second.Member().Started.Equal(first.Member().Started) {
		t.Fatalf("registered again as %+v (lease %x), was %+v (lease %x)", second.Member(), second.Lease(), first.Member(), first.Lease())
	}
	if v := getKey(t, cli, membership.MemberKey(p, "worker", "w")); v == nil {
		t.Fatal("no member key after registering again")
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if v := getKey(t, cli, membership.LeftKey(p, "worker", "w")); v == nil {
		t.Fatal("Close left no marker")
	}
}
