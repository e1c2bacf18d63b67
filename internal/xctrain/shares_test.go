package xctrain

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/testutil"
	"github.com/xdlgo/xps/job"
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
	ctx := testutil.Ctx(t, 5*time.Minute)
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
		if e.Dense.P1 < e1.Dense.P1-0.05 {
			t.Fatalf("%d workers: dense P@1 %.4f, one worker %.4f", W, e.Dense.P1, e1.Dense.P1)
		}
	}
}
