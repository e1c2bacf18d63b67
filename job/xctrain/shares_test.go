package xctrain

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// runWorkers runs the SLIDE job on n workers (goroutines of this process,
// each serving its share over loopback gRPC) of a new cluster with opts'
// snapshot policy, and returns their results.
func runWorkers(t *testing.T, ctx context.Context, n int, cfg config.Config, prefix string) []JobResult {
	t.Helper()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: prefix,
		Config: config.Config{Job: config.JobConfig{Workers: n}, Snapshot: cfg.Snapshot}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	res, errs := make([]JobResult, n), make([]error, n)
	logs := make([]syncLog, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cfg
			c.Job.Workers = n
			res[i], errs[i] = RunJob(ctx, job.Options{Config: c, Index: i, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &logs[i]})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for j := range logs {
				t.Logf("worker %d: %v\n%s", j, errs[j], logs[j].String())
			}
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	return res
}

// syncLog is a progress writer safe for concurrent use.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSharesAcrossWorkers: with 2 and 3 workers the layer is split into
// one share per worker, trained in rounds over gRPC (2 workers also with
// the dense model-parallel exchange): every sample of every epoch is
// trained once by one worker, worker 0 evaluates over every share, the
// shares stay balanced, and the model is about as good as one worker's on
// the same data.
func TestSharesAcrossWorkers(t *testing.T) {
	ctx := testutil.JobCtx(t)
	dir := t.TempDir()
	const nTrain = 4000
	train := writeXC(t, dir, "train.txt", smallWorld, 0, nTrain)
	test := writeXC(t, dir, "test.txt", smallWorld, 1, 1000)
	cfg := withJob(smallConfig(), []string{train}, []string{test}, 1)
	cfg.Train.ProgressEvery = time.Second
	one := runWorkers(t, ctx, 1, cfg, "/xps/xctrain-shares-1")[0]
	for _, c := range []struct {
		W        int
		exchange string
	}{{2, "sparse"}, {3, "sparse"}, {2, "dense"}} {
		W := c.W
		if raceEnabled && W == 3 {
			continue // the race build checks two workers' exchanges: three run the same code
		}
		cfg := cfg
		cfg.Model.Output.Exchange = c.exchange
		res := runWorkers(t, ctx, W, cfg, fmt.Sprintf("/xps/xctrain-shares-%d-%s", W, c.exchange))
		var samples int64
		for i, r := range res {
			samples += r.Samples
			if r.Owners != W || r.OwnerImbalance > 1.5 || r.StepBytes <= 0 {
				t.Fatalf("%d workers: worker %d: owners %d, imbalance %.2f, step bytes %d", W, i, r.Owners, r.OwnerImbalance, r.StepBytes)
			}
			if i > 0 && r.Test.Samples != 0 {
				t.Fatalf("%d workers: worker %d evaluated", W, i)
			}
			if r.LayerBytes >= one.LayerBytes {
				t.Fatalf("%d workers: worker %d holds %d bytes of the layer, one worker %d", W, i, r.LayerBytes, one.LayerBytes)
			}
		}
		if want := int64(cfg.Train.Epochs * nTrain); samples != want {
			t.Fatalf("%d workers trained %d samples, want %d", W, samples, want)
		}
		e, e1 := res[0].Test, one.Test
		if e.Samples != 1000 || e.Dense == nil || e.Sparse == nil {
			t.Fatalf("%d workers: worker 0's evaluation %+v", W, e)
		}
		t.Logf("%d workers: dense %v, sparse %v; one worker: dense %v, sparse %v", W, *e.Dense, *e.Sparse, *e1.Dense, *e1.Sparse)
		// Dense inference over these small sparsely trained layers swings
		// from run to run with the asynchronous pushes (P@1 0.044-0.147
		// over 18 runs of 2 and 3 workers, 0.082-0.107 for one worker):
		// the better of the W workers' two inferences, the one a user
		// would serve, is compared with one worker's dense inference
		// (its sparse inference is calibrated, theirs is not: the shares
		// are in other processes).
		if best := max(e.Dense.P1, e.Sparse.P1); best < e1.Dense.P1-0.05 {
			t.Fatalf("%d workers: P@1 %.4f (dense %.4f, sparse %.4f), one worker's dense %.4f", W, best, e.Dense.P1, e.Sparse.P1, e1.Dense.P1)
		}
	}
}

// TestSharesLeaseLostRollsBack: a worker of a layer split between 2
// workers loses its lease after a snapshot holds both shares, and comes
// back in the same life while the cluster serves on at the same version.
// Its share is gone while the other's went on, so it leaves as a dead
// worker: the cluster rolls every share back to the snapshot, both resume
// from it and the job ends exactly once.
func TestSharesLeaseLostRollsBack(t *testing.T) {
	ctx := testutil.JobCtx(t)
	dir := t.TempDir()
	train := writeXC(t, dir, "train.txt", smallWorld, 0, 6000)
	snaps := filepath.Join(dir, "snapshots")
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/xctrain-shares-lease", LeaseTTL: time.Second,
		Config: config.Config{Job: config.JobConfig{Workers: 2}, Snapshot: snapshot.Policy{Store: snaps, Every: -1, EverySamples: 2000}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := withJob(smallConfig(), []string{train}, nil, 2)
	cfg.Train.Epochs = 8 // far more than the test needs before its fault
	cfg.Snapshot = snapshot.Policy{Store: snaps}
	res, errs := make([]JobResult, 2), make([]error, 2)
	logs := make([]syncLog, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = RunJob(ctx, job.Options{Config: cfg, Index: i, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &logs[i]})
		}()
	}
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testutil.Eventually(t, 2*time.Minute, "a complete snapshot holding both shares", func() bool {
		return testutil.SnapshotNames(t, store, ShareFile(0, 2), ShareFile(1, 2))
	})
	resp, err := lc.Etcd().Get(ctx, lc.Prefix()+"/members/worker/worker-1")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("worker 1's registration: %v, %v", resp, err)
	}
	if _, err := lc.Etcd().Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || res[i].ExactlyOnce == nil || !res[i].ExactlyOnce.Exact || res[i].Restores < 1 {
			t.Fatalf("worker %d: %v, exactly once %+v, %d restores\n%s", i, errs[i], res[i].ExactlyOnce, res[i].Restores, logs[i].String())
		}
	}
	if !strings.Contains(logs[1].String(), "leaving as a dead worker") {
		t.Fatalf("worker 1 did not leave as a dead worker:\n%s", logs[1].String())
	}
}

// TestSharesPeerLeftEndsJob: when a worker of a split layer has left the
// cluster cleanly (its job ended on an error), the other worker's rounds
// cannot go on and no rollback comes for a clean leave: it ends with an
// error naming the worker, instead of waiting for its share forever.
// Worker 1 here is what such a worker leaves in etcd: its share's address
// (nothing listens there any more) and its clean leave.
func TestSharesPeerLeftEndsJob(t *testing.T) {
	ctx := testutil.JobCtx(t)
	dir := t.TempDir()
	train := writeXC(t, dir, "train.txt", smallWorld, 0, 2000)
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/xctrain-shares-left",
		Config: config.Config{Job: config.JobConfig{Workers: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone.Close() // an address nothing listens on
	addr, _ := json.Marshal(controlplane.OwnerAddr{Addr: gone.Addr().String(), Version: 1})
	for k, v := range map[string]string{
		controlplane.OwnerAddrKey(lc.Prefix(), 1):                            string(addr),
		controlplane.LeftKey(lc.Prefix(), membership.KindWorker, "worker-1"): "left",
	} {
		if _, err := lc.Etcd().Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	var log syncLog
	cfg := withJob(smallConfig(), []string{train}, nil, 2)
	_, err = RunJob(ctx, job.Options{Config: cfg, Index: 0, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &log})
	if err == nil || !strings.Contains(err.Error(), "[worker-1] left the job") || strings.Contains(err.Error(), "restore") {
		t.Fatalf("worker 0 with worker 1 gone: %v\n%s", err, log.String())
	}
}
