package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/internal/config"
	"github.com/xdlgo/xps/internal/local"
	"github.com/xdlgo/xps/internal/testutil"
	"github.com/xdlgo/xps/reader"
)

func smallConfig() config.Config {
	c := config.Config{}
	c.Model.Tables = nil
	c.Model.Hidden = []int{16, 8}
	c.Train.BatchSize = 64
	c.Train.Epochs = 2
	c.Data = config.DataConfig{TrainSamples: 8000, TestSamples: 2000, Fields: 6, UserFields: 2, Vocab: 300, MeanBag: 2}
	c.EnsureDefaults()
	c.Model.Tables[0].Dim = 4
	return c
}

// TestTrainsGeneratedData runs a whole job on the one-process cluster and
// checks that the model learns the hidden teacher.
func TestTrainsGeneratedData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lc, err := local.Start(ctx, local.Options{Shards: 2, Prefix: "/xps/worker-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	var progress strings.Builder
	cfg := smallConfig()
	cfg.Train.EvalEvery = 50
	res, err := RunJob(ctx, JobOptions{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 16000 || res.Epochs != 2 || res.Shards != 2 || res.Fields != 6 {
		t.Fatalf("result %+v", res)
	}
	if res.BestAUC == nil || res.TestAUC < 0.6 || res.TestAUC > *res.BestAUC+0.02 {
		t.Fatalf("test AUC %.4f, best achievable %v: the model did not learn", res.TestAUC, res.BestAUC)
	}
	if len(res.Evals) < 3 {
		t.Fatalf("%d evaluations, want one every 50 batches plus one per epoch", len(res.Evals))
	}
	if !strings.Contains(progress.String(), "eval after epoch 2") {
		t.Fatalf("progress lacks the final evaluation:\n%s", progress.String())
	}
	// Both shards hold rows and the dense vector is split across them.
	for _, n := range lc.Nodes() {
		st, err := n.Shard().Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Tables[0].Rows == 0 || st.Pushes == 0 {
			t.Fatalf("shard %s: %+v", st.ID, st)
		}
	}
}

func TestLoadDataBadLines(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.libffm")
	body := "1 0:a:1 1:b:1\n0 0:a:1 1:x:oops\n1 0:c:1 1:b:1\n"
	if err := os.WriteFile(train, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	// Stop (the default): the error names file, line and reason.
	_, err := LoadData(JobOptions{Config: cfg, TrainFile: train})
	if !errors.Is(err, reader.ErrMalformed) || !strings.Contains(err.Error(), "train.libffm:2") || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("stop policy: err = %v, want a malformed-line error naming train.libffm:2", err)
	}
	// Skip: the line is counted and the rest is read.
	cfg.Train.OnError = "skip"
	d, err := LoadData(JobOptions{Config: cfg, TrainFile: train})
	if err != nil || d.Skipped != 1 || d.Train.Len() != 2 {
		t.Fatalf("skip policy: %+v, err %v; want 2 samples, 1 skipped", d, err)
	}
	// Worker 1 of 2 takes the second line only.
	d, err = LoadData(JobOptions{Config: cfg, TrainFile: train, Index: 1, Count: 2})
	if err != nil || d.Train.Len() != 0 {
		t.Fatalf("worker 1 of 2: %+v, err %v; want 0 samples (its only line is malformed)", d, err)
	}
	if _, err := LoadData(JobOptions{Config: cfg, TrainFile: filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("a missing file loaded without error")
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	cfg := smallConfig()
	if _, err := New(nil, reader.NewDataset(), nil, Options{Config: cfg}); !errors.Is(err, ErrNoData) {
		t.Fatalf("empty training set: %v, want ErrNoData", err)
	}
	ds := reader.NewDataset()
	ds.Append(1, []reader.Feature{{Field: 0, ID: 1, Value: 1}, {Field: 1, ID: 2, Value: 1}})
	cfg.Model.FieldTables = []string{"emb", "emb", "emb"}
	if _, err := New(nil, ds, nil, Options{Config: cfg}); err != nil {
		t.Fatalf("three named fields over two-field data: %v", err)
	}
	huge := reader.NewDataset()
	huge.Append(1, []reader.Feature{{Field: 100000, ID: 1, Value: 1}})
	if _, err := New(nil, huge, nil, Options{Config: smallConfig()}); err == nil || !strings.Contains(err.Error(), "fields") {
		t.Fatalf("a field number of 100000: %v, want an error about fields", err)
	}
	cfg.Model.Fields = 1
	cfg.Model.FieldTables = nil
	tr, err := New(nil, ds, nil, Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.newState(4)
	if err := tr.load(s, ds, []int32{0}); err == nil || !strings.Contains(err.Error(), "field 1") {
		t.Fatalf("a feature outside the model's fields: %v, want an error naming field 1", err)
	}
}

// TestStopsWhenLeaseLost revokes a running worker's lease: the job must stop
// with an error that says so, not train on as a member the cluster dropped.
func TestStopsWhenLeaseLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc, err := local.Start(ctx, local.Options{Shards: 1, Prefix: "/xps/lease-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := smallConfig()
	cfg.Train.Epochs = 1000 // far more than the test lets it train
	done := make(chan error, 1)
	go func() {
		_, err := RunJob(ctx, JobOptions{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
		done <- err
	}()
	key := lc.Prefix() + "/members/worker/worker-0"
	var lease clientv3.LeaseID
	testutil.Eventually(t, time.Minute, "the worker's registration", func() bool {
		resp, err := lc.Etcd().Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 1 {
			lease = clientv3.LeaseID(resp.Kvs[0].Lease)
		}
		return lease != 0
	})
	if _, err := lc.Etcd().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "lost its etcd lease") {
			t.Fatalf("RunJob after its lease was revoked = %v, want an error about the lost lease", err)
		}
	case <-ctx.Done():
		t.Fatal("the worker kept training after its lease was revoked")
	}
}
