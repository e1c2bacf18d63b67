package ctrtrain

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/parquetsrc"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestParquetStopResumeExactlyOnce trains on Parquet files as sample
// groups through small shuffle windows (blocks cut across row groups,
// read in a shuffled order), is stopped mid-epoch and resumed: the
// shards' records of what was applied, over both runs, sum to the digest
// of every sample of every epoch once (TrainDigest), as for text.
func TestParquetStopResumeExactlyOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	train := writeGen(t, t.TempDir(), 5, 2, 3000, "parquet")
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/parquet-resume-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := streamedConfig(5)
	cfg.Train.Format = "parquet"
	cfg.Train.Columns = parquetsrc.TokenColumns(genConfig(5).Fields, genConfig(5).UserFields, true)
	on := true
	cfg.Train.Shuffle = &on
	cfg.Train.ShuffleWindow = 40 << 10
	cfg.Train.ProgressEvery = time.Nanosecond
	cfg = withJob(cfg, train, nil)

	progress := newBatchLines(40)
	jctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := RunJob(jctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: progress})
		done <- err
	}()
	select {
	case <-progress.reached:
	case err := <-done:
		t.Fatalf("the first run ended before it was stopped: %v\n%s", err, progress.String())
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first run stopped: %v\n%s", err, progress.String())
	}
	var log testutil.Buffer
	res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &log})
	if err != nil {
		t.Fatalf("the second run: %v\n%s", err, log.String())
	}
	splits := make([]reader.FileSplit, len(train))
	for i, p := range train {
		splits[i] = reader.FileSplit{Path: p}
	}
	want, err := TrainDigest(cfg, splits, cfg.Train.Epochs)
	if err != nil {
		t.Fatal(err)
	}
	v := res.ExactlyOnce
	if v == nil || !v.Exact || v.Digest != want || v.Samples != int64(cfg.Train.Epochs*len(train)*3000) {
		t.Fatalf("the shards applied %+v; want exact, %d samples, digest %x\n%s", v, cfg.Train.Epochs*len(train)*3000, want, log.String())
	}
}
