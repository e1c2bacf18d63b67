package testutil

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
)

// Ctx returns a context that ends after d or when the test ends.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// JobCtx returns a context for work whose length depends on the
// machine's speed (a training job): it ends jobMargin before the test
// binary's own deadline (go test -timeout), or at once when the test has
// none left, and ends when the test
// ends. No guess
// of a loaded machine's speed can fail the test; a hang still fails it
// with the test's own message (its progress output), before go test's
// panic.
func JobCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if at, ok := d.Deadline(); ok {
			ctx, cancel = context.WithDeadline(context.Background(), at.Add(-jobMargin))
		}
	}
	t.Cleanup(cancel)
	return ctx
}

// jobMargin is what JobCtx leaves of the test binary's time for the
// test to report a hang.
const jobMargin = 30 * time.Second

// Eventually polls cond every 20ms until it holds, failing the test with
// "timed out ... waiting for what" after d.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Reaches polls value every 20ms until it equals want. It fails the test
// only when value stops moving for stall (the work is stuck, not slow: a
// loaded machine that trains at a third of the speed still reaches want)
// or when it passes want. what names the wait in the failure; detail, if
// not nil, adds what the test has seen (its progress output).
func Reaches(t testing.TB, stall time.Duration, what string, want int64, value func() int64, detail func() string) {
	t.Helper()
	last, moved := value(), time.Now()
	for last != want {
		if last > want {
			t.Fatalf("waiting for %s: %d passed the %d wanted%s", what, last, want, details(detail))
		}
		if time.Since(moved) > stall {
			t.Fatalf("waiting for %s: stuck at %d of %d for %v%s", what, last, want, stall, details(detail))
		}
		time.Sleep(20 * time.Millisecond)
		if v := value(); v != last {
			last, moved = v, time.Now()
		}
	}
}

func details(detail func() string) string {
	if detail == nil {
		return ""
	}
	return "\n" + detail()
}

// StartEtcd starts an embedded etcd for the test, closed when it ends.
func StartEtcd(t testing.TB) *etcdembed.Server {
	t.Helper()
	srv, err := etcdembed.Start(Ctx(t, 30*time.Second), etcdembed.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// EtcdClient connects to endpoints; the client is closed when the test ends.
func EtcdClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// SharedEtcd is one embedded etcd server for all the tests of a package,
// each test under a prefix of its own:
//
//	var etcd testutil.SharedEtcd
//
//	func TestMain(m *testing.M) { os.Exit(etcd.Run(m)) }
type SharedEtcd struct {
	endpoints []string
	prefixes  atomic.Int64
}

// Run is a TestMain body: it starts the server, runs the tests, stops the
// server and, when they passed, checks for leaked goroutines. It returns
// the exit code.
func (e *SharedEtcd) Run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "etcd-test")
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
	e.endpoints = srv.Endpoints()
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

// Endpoints returns the server's client endpoints.
func (e *SharedEtcd) Endpoints() []string { return e.endpoints }

// Client returns a client of the server, closed when the test ends.
func (e *SharedEtcd) Client(t testing.TB) *clientv3.Client { return EtcdClient(t, e.endpoints) }

// Prefix returns a cluster prefix no other test of the package uses.
func (e *SharedEtcd) Prefix() string { return fmt.Sprintf("/xps/test-%d", e.prefixes.Add(1)) }

// Conn returns the control plane of the cluster under prefix on cli. A bad
// prefix is a broken test and panics.
func Conn(cli *clientv3.Client, prefix string) *controlplane.Conn {
	c, err := controlplane.New(cli, prefix)
	if err != nil {
		panic(err)
	}
	return c
}

// FreeAddr returns a loopback address whose port is free now, for a
// server a test must name before it starts (an etcd cluster's peers, a
// StatefulSet-like fixed address). The port is drawn from below Linux's
// ephemeral range (32768-60999), not asked of the kernel with port 0: a
// port-0 pick and every outgoing connection's source port come from that
// range, so a port picked there and closed is soon taken again by some
// connection of a test running beside this one. Below it only another
// explicit pick can collide, and none does: a port is handed out once per
// test process (a test names several addresses before it starts any
// server, so a port free at each pick is not yet taken), and claimed for
// across the test processes go test runs side by side, until the test
// ends, by a file created exclusively in a directory they share.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(12768)
		claim, ok := claimPort(port)
		if !ok {
			continue
		}
		if claim != "" {
			t.Cleanup(func() { os.Remove(claim) })
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr
	}
	t.Fatal("testutil: no free loopback port in 200 tries")
	return ""
}

// portClaimTTL is how long a claim left by a test process that did not
// end cleanly keeps its port from the others: longer than any test runs.
const portClaimTTL = 30 * time.Minute

var portsMu sync.Mutex
var portsGiven = map[int]bool{}

// claimPort reports whether port is this process's to hand out: not given
// out by it before, and not claimed by another test process within
// portClaimTTL; it returns the claim file to remove when the test ends. A
// claim directory that cannot be made or written leaves only the
// in-process check.
func claimPort(port int) (claim string, ok bool) {
	portsMu.Lock()
	defer portsMu.Unlock()
	if portsGiven[port] {
		return "", false
	}
	portsGiven[port] = true
	dir := filepath.Join(os.TempDir(), "xps-test-ports")
	if os.MkdirAll(dir, 0o777) != nil {
		return "", true
	}
	file := filepath.Join(dir, fmt.Sprint(port))
	for range 2 {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err == nil {
			f.Close()
			return file, true
		}
		if !os.IsExist(err) {
			return "", true
		}
		st, err := os.Stat(file)
		if err != nil || time.Since(st.ModTime()) < portClaimTTL {
			return "", false
		}
		os.Remove(file) // a stale claim
	}
	return "", false
}

// Buffer is a bytes.Buffer safe for concurrent writers (a logger, a
// job's progress) and a reader (the test).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
