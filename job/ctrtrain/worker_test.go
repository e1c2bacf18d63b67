package ctrtrain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/tests/testutil"
)

func smallConfig() config.Config {
	c := config.Config{}
	c.Model.Tables = nil
	c.Model.Hidden = []int{16, 8}
	c.Train.BatchSize = 64
	c.Train.Epochs = 2
	c.Data = config.DataConfig{TrainSamples: 8000, TestSamples: 2000,
		Config: datagen.Config{Fields: 6, UserFields: 2, Vocab: 300, MeanBag: 2}}
	c.EnsureDefaults()
	c.Model.Tables[0].Dim = 4
	return c
}

// streamedConfig is smallConfig for libFFM files written by writeGenFiles
// with genConfig(seed)'s fields, in batches of 32, the files streamed in
// order (no shuffle), so that reader positions are file offsets.
func streamedConfig(seed uint64) config.Config {
	c := smallConfig()
	c.Train.Format = "libffm"
	c.Train.BatchSize = 32
	c.Model.Fields = genConfig(seed).Fields
	f := false
	c.Train.Shuffle = &f
	return c
}

// TestTrainsGeneratedData runs a whole job on the one-process cluster and
// checks that the model learns the hidden teacher.
func TestTrainsGeneratedData(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/worker-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	var progress strings.Builder
	cfg := smallConfig()
	cfg.Train.EvalEvery = 50
	res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 16000 || res.Epochs != 2 || res.Shards != 2 || res.Fields != 6 {
		t.Fatalf("result %+v", res)
	}
	if res.BestAUC == nil || res.TestAUC < 0.6 || float64(res.TestAUC) > *res.BestAUC+0.02 {
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
	whole := []reader.FileSplit{{Path: train}}
	// Stop (the default): the error names file, line and reason.
	_, err := LoadData(job.Options{Config: withJob(cfg, []string{train}, nil)}, whole)
	if !errors.Is(err, reader.ErrMalformed) || !strings.Contains(err.Error(), "train.libffm:2") || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("stop policy: err = %v, want a malformed-line error naming train.libffm:2", err)
	}
	// Skip: the line is counted and the rest is read.
	cfg.Train.OnError = "skip"
	d, err := LoadData(job.Options{Config: withJob(cfg, []string{train}, nil)}, whole)
	if err != nil {
		t.Fatal(err)
	}
	src, err := d.Train(1, reader.Position{})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := readAll(src)
	if err != nil || len(gs) != 2 || src.Stats().Skipped != 1 {
		t.Fatalf("skip policy: %d groups, %+v, err %v; want 2 samples, 1 skipped", len(gs), src.Stats(), err)
	}
	if d.Shape.Fields != 2 {
		t.Fatalf("shape %+v, want 2 fields", d.Shape)
	}
	d, err = LoadData(job.Options{Config: withJob(cfg, []string{train}, nil)}, []reader.FileSplit{{Path: filepath.Join(dir, "missing")}})
	if err == nil {
		t.Fatalf("a missing file loaded without error: %+v", d)
	}
}

// TestLoadDataEmpty checks that training or test files without a sample
// are an error naming them, whether the training data is streamed or held
// in memory; an empty file among others is not, nor is an empty share of
// a worker of several.
func TestLoadDataEmpty(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	good := write("good.libffm", "1 0:a:1 1:b:1\n0 0:a:1 1:c:1\n")
	empty := write("empty.libffm", "")
	blank := write("blank.libffm", "# only a comment\n\n")
	bad := write("bad.libffm", "1 0:a:1 1:x:oops\n0 0:a\n")
	for _, tc := range []struct {
		name        string
		train, test []string
		workers     int
		want        string // "": no error
	}{
		{name: "empty-train", train: []string{empty}, test: []string{good}, want: "training data: file " + empty + " holds no samples"},
		{name: "blank-train", train: []string{blank}, want: "training data: file " + blank + " holds no samples"},
		{name: "empty-trains", train: []string{empty, blank}, test: []string{good},
			want: "training data: files " + empty + ", " + blank + " hold no samples"},
		{name: "malformed-train", train: []string{bad}, test: []string{good},
			want: "training data: file " + bad + " holds no samples (2 malformed lines skipped under train.on_error: skip)"},
		{name: "empty-test", train: []string{good}, test: []string{empty}, want: "test data: file " + empty + " holds no samples"},
		{name: "empty-among-others", train: []string{empty, good}, test: []string{good}},
		{name: "empty-share", train: []string{empty}, test: []string{good}, workers: 2},
	} {
		for _, shuffle := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/shuffle=%v", tc.name, shuffle), func(t *testing.T) {
				cfg := withWorkers(withJob(smallConfig(), tc.train, tc.test), tc.workers)
				cfg.Train.Shuffle, cfg.Train.OnError = &shuffle, "skip"
				splits := make([]reader.FileSplit, len(tc.train))
				for i, p := range tc.train {
					splits[i] = reader.FileSplit{Path: p}
				}
				d, err := LoadData(job.Options{Config: cfg}, splits)
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("err = %v, want none", err)
				case tc.want == "" && d.Shape.Fields != 2:
					t.Fatalf("shape %+v, want 2 fields", d.Shape)
				case tc.want != "" && (!errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), tc.want)):
					t.Fatalf("err = %v, want ErrNoData saying %q", err, tc.want)
				}
			})
		}
	}
}

// TestLoadDataFieldTooLarge checks that a field too large for a model is
// named with the file and line it is on, whether the training data is
// streamed or held in memory (shuffled), and in the test data.
func TestLoadDataFieldTooLarge(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	good := write("good.libffm", "1 0:a:1 1:b:1\n0 0:a:1 1:c:1\n")
	// Line 3 holds field 5000, line 4 field 4096: the larger is named.
	bad := write("bad.libffm", "1 0:a:1 1:b:1\n# a comment\n0 0:a:1 5000:c:1\n1 4096:a:1\n")
	for _, tc := range []struct {
		name        string
		train, test string
		shuffle     bool
		want        string
	}{
		{name: "streamed", train: bad, want: "field 5000 at " + bad + " line 3: the model would have 5001 fields"},
		{name: "shuffled", train: bad, shuffle: true, want: "field 5000 at " + bad + " line 3: the model would have 5001 fields"},
		{name: "test", train: good, test: bad, want: "field 5000 at " + bad + " line 3: the model would have 5001 fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Train.Shuffle = &tc.shuffle
			var test []string
			if tc.test != "" {
				test = []string{tc.test}
			}
			_, err := LoadData(job.Options{Config: withJob(cfg, []string{tc.train}, test)}, []reader.FileSplit{{Path: tc.train}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
	cfg := smallConfig()
	cfg.Model.Fields = 5000
	_, err := LoadData(job.Options{Config: withJob(cfg, []string{good}, nil)}, []reader.FileSplit{{Path: good}})
	if err == nil || !strings.Contains(err.Error(), "the config gives the model 5000 fields") {
		t.Fatalf("model.fields 5000: err = %v, want it to blame the config", err)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	cfg := smallConfig()
	open := func(int) (reader.Source, error) { return newMemorySource(nil, false, 0, 0, reader.Position{}), nil }
	if _, err := New(nil, Options{Config: cfg, Train: open}); !errors.Is(err, ErrNoData) {
		t.Fatalf("no fields: %v, want ErrNoData", err)
	}
	if _, err := New(nil, Options{Config: cfg, Shape: ctr.Shape{Fields: 2}}); !errors.Is(err, ErrNoData) {
		t.Fatalf("no training source: %v, want ErrNoData", err)
	}
	cfg.Model.FieldTables = []string{"emb", "emb", "emb"}
	if _, err := New(nil, Options{Config: cfg, Shape: ctr.Shape{Fields: 2}, Train: open}); err == nil {
		t.Fatal("three named fields for a two-field model: no error")
	}
	if _, err := New(nil, Options{Config: smallConfig(), Shape: ctr.Shape{Fields: 100000}, Train: open}); err == nil || !strings.Contains(err.Error(), "fields") {
		t.Fatalf("a field number of 100000: %v, want an error about fields", err)
	}
	var sh shapeFinder
	g := new(reader.Group)
	g.Reset(1)
	g.AddLine(0, 0, []uint32{100000}, []uint64{1}, []float32{1})
	g.AddLabels(1)
	sh.add(g)
	if _, err := sh.shape(smallConfig(), false); err == nil || !strings.Contains(err.Error(), "field 100000: the model would have 100001 fields") {
		t.Fatalf("data with field 100000: %v, want an error about fields", err)
	}
	// A group of several lines is named by its first line.
	g.Reset(2)
	g.AddLine(1, 0, []uint32{200000}, []uint64{1}, []float32{1})
	g.AddLine(0, 0, []uint32{1}, []uint64{1}, []float32{1})
	g.AddLabels(1)
	g.Pos, g.Line = reader.Position{File: "train.txt", Offset: 40}, 5
	sh.add(g)
	if _, err := sh.shape(smallConfig(), false); err == nil || !strings.Contains(err.Error(), "field 200000 in the group at train.txt line 5:") {
		t.Fatalf("data with field 200000: %v, want an error naming the group", err)
	}
}

// TestStopsWhenLeaseLost revokes a running worker's lease: the job must stop
// with an error that says so, not train on as a member the cluster dropped.
func TestStopsWhenLeaseLost(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	// RejoinWait off: a lost lease is the worker's death (with the wait
	// on, a worker back in its life serves on: TestLeaseLostWorkerResumes).
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 1, Prefix: "/xps/lease-test", RejoinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := smallConfig()
	cfg.Train.Epochs = 1000 // far more than the test lets it train
	done := make(chan error, 1)
	var res JobResult
	go func() {
		var err error
		res, err = RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
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
		// The cluster also rolls back, and without a snapshot gives up:
		// either may stop the worker first.
		if err == nil || (!errors.Is(err, job.ErrLeaseLost) && !errors.Is(err, controlplane.ErrClusterFailed)) {
			t.Fatalf("RunJob after its lease was revoked = %v, want an error about the lost lease", err)
		}
		// The cluster failed (no snapshot to roll back to): the summary
		// says the run is not exactly-once (issue 20, item 3).
		if v := res.ExactlyOnce; errors.Is(err, controlplane.ErrClusterFailed) &&
			(!errors.Is(err, job.ErrNotExactlyOnce) || v == nil || v.Exact || !strings.Contains(v.Problem, "failed")) {
			t.Fatalf("RunJob on a failed cluster = %v, account %+v: want it NOT exactly-once", err, v)
		}
	case <-ctx.Done():
		t.Fatal("the worker kept training after its lease was revoked")
	}
	// A worker started again on the failed cluster refuses to train on it.
	testutil.Eventually(t, time.Minute, "the cluster FAILED", func() bool {
		r, ok, err := lc.Conn().LastResume(ctx)
		return err == nil && ok && r.Failed
	})
	again, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	if !errors.Is(err, controlplane.ErrClusterFailed) || again.Samples != 0 {
		t.Fatalf("a worker started on the failed cluster: %v, %d samples trained", err, again.Samples)
	}
	// It never built a client, and its account says the model is not
	// exactly-once all the same: the cluster failed (the first worker
	// meets this case when the cluster fails before it built its client).
	if v := again.ExactlyOnce; !errors.Is(err, job.ErrNotExactlyOnce) || v == nil || v.Exact || !strings.Contains(v.Problem, "failed") {
		t.Fatalf("a worker started on the failed cluster = %v, account %+v: want it NOT exactly-once", err, v)
	}
}

// runWorkers runs n worker jobs of opts (Index and Count set for each) at
// once, worker i starting once worker i-1 has written joinAfter progress
// lines of batches (0: all at once; or ended), and fails the test, with the
// workers' progress, if any fails.
func runWorkers(t *testing.T, ctx context.Context, n, joinAfter int, opts job.Options) []JobResult {
	t.Helper()
	return startWorkers(t, ctx, n, joinAfter, opts, nil)()
}

// startWorkers starts n worker jobs of opts (Index and Count set for each;
// FS fsys(i) when fsys is set), worker i once worker i-1 has written
// joinAfter progress lines of batches (0: all at once; keyed to progress,
// never to the clock), and returns a function that waits for them and
// fails the test, with the workers' progress, if any failed. The test's
// end waits for them too (cancel ctx first).
func startWorkers(t *testing.T, ctx context.Context, n, joinAfter int, opts job.Options, fsys func(i int) reader.FS) func() []JobResult {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	results := make([]JobResult, n)
	errs := make([]error, n)
	progress := make([]*batchLines, n)
	ended := make([]chan struct{}, n)
	for i := range progress {
		progress[i], ended[i] = newBatchLines(joinAfter), make(chan struct{})
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ended[i])
			if i > 0 && joinAfter > 0 {
				select {
				case <-progress[i-1].reached:
				case <-ended[i-1]: // it wrote fewer lines: the test says what it expected
				case <-ctx.Done():
				}
			}
			o := opts
			o.Index, o.Config.Job.Workers, o.Progress = i, n, progress[i]
			if fsys != nil {
				o.FS = fsys(i)
			}
			results[i], errs[i] = RunJob(ctx, o)
		}()
	}
	return func() []JobResult {
		t.Helper()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				for j := range progress {
					t.Logf("worker %d: %v\n%s", j, errs[j], progress[j].String())
				}
				t.Fatalf("worker %d: %v", i, err)
			}
		}
		return results
	}
}

// withJob returns cfg with the job's training and test files set.
func withJob(cfg config.Config, train, test []string) config.Config {
	cfg.Job.Train, cfg.Job.Test = train, test
	return cfg
}

// withWorkers returns cfg for a job of n workers.
func withWorkers(cfg config.Config, n int) config.Config {
	cfg.Job.Workers = n
	return cfg
}

// writeFile writes body to the file name in dir and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
