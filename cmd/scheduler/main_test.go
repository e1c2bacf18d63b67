package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/tests/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	runCtx, stop := context.WithCancel(ctx)
	var logs testutil.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, []string{"-etcd", strings.Join(srv.Endpoints(), ","), "-cluster", "c1",
			"-id", "s1", "-shards", "1", "-partitions", "8", "-lease-ttl", "2s", "-log-level", "debug"}, &logs)
	}()

	reg, err := membership.Register(ctx, cli, "/xps/c1", membership.Member{Kind: membership.KindAMS, ID: "a", Addr: "h:1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	m, err := testutil.Conn(cli, "/xps/c1").WaitShardMap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Partitions != 8 || len(m.Shards) != 1 || m.Addrs[0] != "h:1" {
		t.Fatalf("map %+v", m)
	}

	// The map is in etcd before the scheduler logs its publication.
	testutil.Eventually(t, 10*time.Second, "the publication in the logs", func() bool {
		return strings.Contains(logs.String(), "shard map published")
	})
	stop() // as SIGTERM does
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	resp, err := cli.Get(ctx, membership.LeftKey("/xps/c1", membership.KindScheduler, "s1"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("no left marker after shutdown: %v %v\n%s", resp, err, logs.String())
	}
}

func TestRunFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-etcd is required"},
		{[]string{"-etcd", "x:1", "-log-level", "loud"}, "-log-level"},
		{[]string{"-etcd", "x:1", "-cluster", "a/b"}, "-cluster"},
		{[]string{"-shards", "x"}, "invalid value"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), tc.args, &out)
		if err == nil || !strings.Contains(err.Error()+out.String(), tc.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
	if err := run(context.Background(), []string{"-h"}, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}
