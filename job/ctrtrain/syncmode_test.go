package ctrtrain

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestSyncMode trains two workers in sync mode: every shard applies one
// push per round (the average of the workers' parts), not one per batch
// of each worker, so the shards' push counts are the rounds: as many as
// the batches of the worker with more of them. The model learns, and its
// history holds every sample once per epoch.
func TestSyncMode(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/sync-test", Config: config.Config{Job: config.JobConfig{Workers: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := smallConfig()
	cfg.Train.Sync = true
	cfg.Train.BatchSize = 32 // a round averages two batches: as many samples per step as one worker's 64
	var wg sync.WaitGroup
	results := make([]JobResult, 2)
	errs := make([]error, 2)
	logs := make([]testutil.Buffer, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = RunJob(ctx, job.Options{Config: withWorkers(cfg, 2), Etcd: lc.Etcd(), Prefix: lc.Prefix(), Index: i, Progress: &logs[i]})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, logs[i].String())
		}
	}
	b0, b1 := results[0].Batches, results[1].Batches
	if b0 == b1 {
		t.Logf("both workers had %d batches (the test is weaker: the split was even)", b0)
	}
	for _, n := range lc.Nodes() {
		st, err := n.Shard().Stats()
		if err != nil {
			t.Fatal(err)
		}
		if int64(st.Pushes) != max(b0, b1) {
			t.Errorf("shard %s applied %d pushes; the workers had %d and %d batches: want one per round, %d", st.ID, st.Pushes, b0, b1, max(b0, b1))
		}
	}
	if got, want := results[0].Applied+results[1].Applied, int64(cfg.Train.Epochs*cfg.Data.TrainSamples); got != want {
		t.Errorf("the model's history holds %d samples, want %d", got, want)
	}
	for i, r := range results {
		if r.TestAUC < 0.6 {
			t.Errorf("worker %d: test AUC %.4f: the model did not learn\n%s", i, r.TestAUC, logs[i].String())
		}
	}
	if a, b := results[0].TestAUC, results[1].TestAUC; a != b {
		t.Errorf("the workers evaluated different models: AUC %.6f and %.6f", a, b)
	}
	if !strings.Contains(logs[0].String(), "eval after epoch 2") {
		t.Errorf("progress lacks the final evaluation:\n%s", logs[0].String())
	}
}
