package cluster_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/tests/testutil"
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

// TestStartReportsTheSchedulersRefusal: a cluster whose scheduler refuses
// the job (a snapshot store of another job) fails to start with the
// scheduler's reason, instead of waiting for ever for a cluster that will
// never serve (issue 48: worker -local hung).
func TestStartReportsTheSchedulersRefusal(t *testing.T) {
	ctx := testutil.Ctx(t, time.Minute)
	var cfg config.Config
	cfg.Snapshot.Store = t.TempDir()
	cfg.Job.ID = "first-job"
	first, err := cluster.Start(ctx, cluster.Options{Prefix: "/xps/refusal-1", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the first job's first snapshot", func() bool {
		m, _ := filepath.Glob(filepath.Join(cfg.Snapshot.Store, "snap-*", "manifest.json"))
		return len(m) > 0
	})
	first.Close()   // its first snapshot, of job first-job, stays in the store
	cfg.Job.ID = "" // a new job on that store
	lc, err := cluster.Start(ctx, cluster.Options{Prefix: "/xps/refusal-2", Config: cfg})
	if err == nil {
		lc.Close()
		t.Fatal("a cluster of a new job on another job's snapshot store started")
	}
	if ctx.Err() != nil || !strings.Contains(err.Error(), "holds snapshots of job first-job") {
		t.Fatalf("the refusal: %v (ctx %v), want the scheduler's reason naming job first-job", err, ctx.Err())
	}
}

// TestBadCheckpointIsRefused is issue 48's first probe case: a PutState of
// bytes that are no checkpoint, under a worker's checkpoint key, was
// stored, and every later snapshot failed on it (the final one too, so the
// model was not saved). Now the shards refuse it, store nothing, and the
// next snapshot is written.
func TestBadCheckpointIsRefused(t *testing.T) {
	ctx := testutil.Ctx(t, time.Minute)
	var cfg config.Config
	cfg.Snapshot.Store = t.TempDir()
	lc, err := cluster.Start(ctx, cluster.Options{Prefix: "/xps/bad-checkpoint", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	m, err := lc.Conn().WaitServing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(m)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = cl.PutState(ctx, []client.StateEntry{{Key: ams.CheckpointKey("worker-0"), Value: []byte("\x00not a checkpoint")}})
	if !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("a value that is no checkpoint under a checkpoint key: %v, want ErrBadRequest", err)
	}
	if entries, err := cl.GetState(ctx, ams.StateReaderPrefix); err != nil || len(entries) != 0 {
		t.Fatalf("the shards hold %v (%v), want nothing stored", entries, err)
	}
	if r, err := lc.Conn().RequestSnapshot(ctx, false); err != nil || r.Error != "" {
		t.Fatalf("the snapshot after the refused write: %+v, %v", r, err)
	}
}
