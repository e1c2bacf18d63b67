package ctrtrain

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
)

// TestSyncThroughput measures sync mode against asynchronous training in
// the same run: two workers of one process on a local cluster of 2 shards,
// the default job's generated data and model, XPS_SYNC_BENCH samples (skipped when unset), one epoch,
// batch 256, the modes alternated XPS_SYNC_BENCH_RUNS times (default 3).
// It prints one line per run: wall seconds, samples/s, test AUC.
//
//	XPS_SYNC_BENCH=200000 go test ./job/ctrtrain -run TestSyncThroughput -v
func TestSyncThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("XPS_SYNC_BENCH"))
	if n <= 0 {
		t.Skip("set XPS_SYNC_BENCH=SAMPLES to measure sync mode against async")
	}
	runs := 3
	if v, err := strconv.Atoi(os.Getenv("XPS_SYNC_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	for run := range runs {
		for _, syncMode := range []bool{false, true} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/sync-bench", Config: config.Config{Job: config.JobConfig{Workers: 2}}})
			if err != nil {
				t.Fatal(err)
			}
			var cfg config.Config // the default job: the XDL-shaped generated data and model
			cfg.EnsureDefaults()
			cfg.Data.TrainSamples, cfg.Data.TestSamples = n, 20000
			cfg.Train.Epochs, cfg.Train.BatchSize = 1, 256
			cfg.Train.Sync = syncMode
			var wg sync.WaitGroup
			res := make([]JobResult, 2)
			errs := make([]error, 2)
			start := time.Now()
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i], errs[i] = RunJob(ctx, job.Options{Config: withWorkers(cfg, 2), Etcd: lc.Etcd(), Prefix: lc.Prefix(), Index: i})
				}()
			}
			wg.Wait()
			wall := time.Since(start)
			lc.Close()
			cancel()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			mode := "async"
			if syncMode {
				mode = "sync"
			}
			train := max(res[0].Seconds, res[1].Seconds)
			t.Logf("run %d %-5s: wall %.1fs, training %.1fs, %.0f samples/s (both workers), test AUC %.4f",
				run+1, mode, wall.Seconds(), train, float64(res[0].Samples+res[1].Samples)/train, res[0].TestAUC)
		}
	}
}
