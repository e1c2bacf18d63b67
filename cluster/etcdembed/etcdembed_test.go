package etcdembed_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/tests/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakOptions()...)
}

// leakOptions ignores goroutines that etcd's and gRPC's packages start once
// per process and never stop, and peer connections closing.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		// A multi-member cluster's peer connections (etcd's rafthttp over
		// net/http) outlive the members' Close by a moment: the transport
		// keeps them idle until the other side's close is read.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
	}
}

func start(t *testing.T) *etcdembed.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func client(t *testing.T, srv *etcdembed.Server) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestPutGet(t *testing.T) {
	srv := start(t)
	cli := client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get /k = %v", resp.Kvs)
	}
	cli.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestTwoServers(t *testing.T) {
	a, b := start(t), start(t)
	if a.Endpoints()[0] == b.Endpoints()[0] {
		t.Fatalf("both servers on %v", a.Endpoints())
	}
	ca, cb := client(t, a), client(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, c := range []*clientv3.Client{ca, cb} {
		if _, err := c.Put(ctx, "/who", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []*clientv3.Client{ca, cb} {
		resp, err := c.Get(ctx, "/who")
		if err != nil {
			t.Fatal(err)
		}
		if got := string(resp.Kvs[0].Value); got != fmt.Sprint(i) {
			t.Errorf("server %d holds /who=%s, want %d", i, got, i)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	_, err := etcdembed.Start(context.Background(), etcdembed.Options{})
	if err == nil {
		t.Fatal("Start without Dir succeeded")
	}
}

// TestThreeMembers forms a three-member cluster (as the Helm chart's
// bundled etcd does) and reads on one member what another wrote.
func TestThreeMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The six addresses are picked free and closed before etcd binds them,
	// so a test running beside this one may take one in between: that
	// attempt fails with EADDRINUSE and the cluster is formed again on
	// fresh addresses. Any other error fails the test.
	var srvs []*etcdembed.Server
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if srvs, err = startThree(ctx, t); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		t.Logf("attempt %d: %v; retrying on fresh addresses", attempt, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	put := client(t, srvs[0])
	if _, err := put.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := client(t, srvs[2]).Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("member 2 read %v, %v; want v", resp, err)
	}
	members, err := put.MemberList(ctx)
	if err != nil || len(members.Members) != 3 {
		t.Fatalf("member list %v, %v; want 3 members", members, err)
	}
}

// startThree starts a three-member cluster on fresh loopback addresses.
// On error it stops the members that did start, or that wait for the
// failed one to join.
func startThree(ctx context.Context, t *testing.T) ([]*etcdembed.Server, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var peers, clients [3]string
	for i := range peers {
		peers[i], clients[i] = testutil.FreeAddr(t), testutil.FreeAddr(t)
	}
	initial := fmt.Sprintf("m0=http://%s,m1=http://%s,m2=http://%s", peers[0], peers[1], peers[2])
	srvs := make([]*etcdembed.Server, 3)
	errs := make(chan error, 3)
	for i := range srvs {
		go func() {
			var err error
			srvs[i], err = etcdembed.Start(ctx, etcdembed.Options{Dir: t.TempDir(), Name: fmt.Sprintf("m%d", i),
				ClientAddr: clients[i], PeerAddr: peers[i], InitialCluster: initial, UnsafeNoFsync: true})
			errs <- err
		}()
	}
	var first error
	for range srvs {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	if first != nil {
		for _, s := range srvs {
			if s != nil {
				s.Close()
			}
		}
		return nil, first
	}
	for _, s := range srvs {
		t.Cleanup(func() { s.Close() })
	}
	return srvs, nil
}
