package cluster_test

import (
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/internal/testutil"
)

// TestResolver checks that the cluster resolves exactly its running
// shards' addresses, before and after a shard restarts on a new port, and
// none once closed.
func TestResolver(t *testing.T) {
	ctx := testutil.Ctx(t, time.Minute)
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/local-resolver-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	addrs := func() []string {
		var out []string
		for _, n := range lc.Nodes() {
			out = append(out, n.Addr())
		}
		return out
	}
	before := addrs()
	for _, a := range before {
		if lc.Local(a) == nil {
			t.Fatalf("shard at %s is not resolved", a)
		}
	}
	if lc.Local("127.0.0.1:1") != nil {
		t.Fatal("an address no shard listens on was resolved")
	}
	if err := lc.RestartShard(ctx, 0); err != nil {
		t.Fatal(err)
	}
	after := addrs()
	if lc.Local(before[0]) != nil {
		t.Fatalf("the stopped shard's address %s is still resolved", before[0])
	}
	if lc.Local(after[0]) == nil || lc.Local(after[1]) == nil {
		t.Fatalf("running shards %v are not all resolved", after)
	}
	if err := lc.Close(); err != nil {
		t.Fatal(err)
	}
	if lc.Local(after[1]) != nil {
		t.Fatal("a closed cluster still resolves its shards")
	}
	var none *cluster.Cluster
	if none.Local(after[1]) != nil {
		t.Fatal("a nil cluster resolved a shard")
	}
}
