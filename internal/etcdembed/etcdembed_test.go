package etcdembed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/xdlgo/xps/internal/etcdembed"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakOptions()...)
}

// leakOptions ignores goroutines that etcd's and gRPC's packages start once
// per process and never stop.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
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
