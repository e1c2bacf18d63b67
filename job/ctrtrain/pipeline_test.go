package ctrtrain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/tests/testutil"
)

// startCluster starts a local cluster of shards under a prefix unique to the
// test, and a client of it; both are closed when the test ends.
func startCluster(t *testing.T, shards int) (*cluster.Cluster, *client.Client) {
	t.Helper()
	ctx := testutil.JobCtx(t)
	prefix := "/xps/" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	lc, err := cluster.Start(ctx, cluster.Options{Shards: shards, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	m, err := lc.Conn().WaitShardMap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return lc, cl
}

// genShape is the shape of genGroups' data: fields 0 and 1 describe the
// user (the level-1 line), 2 to 5 the item.
var genShape = ctr.Shape{Fields: 6, Levels: []int{1, 1, 0, 0, 0, 0}}

// genConfig is datagen's configuration for the tests' data: short user runs,
// so that groups are small and straddle batches of 64.
func genConfig(seed uint64) datagen.Config {
	return datagen.Config{Fields: 6, UserFields: 2, MeanBag: 2, Vocab: 300, SamplesPerUser: 6, Users: 500, Seed: seed}
}

// genGroups draws n samples as datagen's 2-level groups (one per user run).
func genGroups(t *testing.T, n int, seed uint64) []*reader.Group {
	t.Helper()
	gen, err := datagen.New(genConfig(seed))
	if err != nil {
		t.Fatal(err)
	}
	var out []*reader.Group
	g := new(reader.Group)
	for got := 0; got < n; got += g.NumSamples() {
		gen.NextGroup(g, n-got, nil)
		out = append(out, g.Clone())
	}
	return out
}

// pipelineConfig is a small model trained for one epoch, pipelined or not.
func pipelineConfig(pipeline bool) config.Config {
	cfg := smallConfig()
	cfg.Train.Epochs = 1
	cfg.Train.Pipeline = &pipeline
	return cfg
}

// memOpen opens groups as an in-memory source at every epoch.
func memOpen(groups []*reader.Group, shuffle bool) func(int) (reader.Source, error) {
	return func(epoch int) (reader.Source, error) {
		return newMemorySource(groups, shuffle, 7, uint64(epoch), reader.Position{}), nil
	}
}

// newTrainer builds a trainer and declares its model.
func newTrainer(t *testing.T, cl *client.Client, opts Options) *Trainer {
	t.Helper()
	if opts.Name == "" { // a worker of its own: the shards apply each worker's batch once
		opts.Name = strings.ReplaceAll(t.Name(), "/", "-")
	}
	tr, err := New(cl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Declare(testutil.Ctx(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	return tr
}

// waitGoroutines polls until no more than baseline goroutines run, failing
// with every goroutine's stack after a deadline.
func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for n := runtime.NumGoroutine(); n > baseline; n = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines 10s after Run returned, %d before it started:\n%s", n, baseline, buf)
		}
		<-tick.C
	}
}

// warmBaseline runs one short training to completion (so that connections
// and their goroutines exist) and returns the goroutine count after it.
func warmBaseline(t *testing.T, cl *client.Client, groups []*reader.Group) int {
	t.Helper()
	tr := newTrainer(t, cl, Options{Name: "warm-" + strings.ReplaceAll(t.Name(), "/", "-"), Config: pipelineConfig(true), Shape: genShape, Train: memOpen(groups[:20], false)})
	if _, err := tr.Run(testutil.Ctx(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	return runtime.NumGoroutine()
}

// firstWrite is a progress writer that signals its first line.
type firstWrite struct {
	once  sync.Once
	wrote chan struct{}
}

func newFirstWrite() *firstWrite { return &firstWrite{wrote: make(chan struct{})} }

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.wrote) })
	return len(p), nil
}

// failingSource passes through the groups of a source until it has given
// left of them, then fails with err, once gate (when set) is closed. It
// records whether it was closed.
type failingSource struct {
	reader.Source
	left   int
	err    error
	gate   <-chan struct{}
	closed bool
}

func (s *failingSource) Next(ctx context.Context, g *reader.Group) error {
	if s.left == 0 {
		if s.gate != nil {
			select {
			case <-s.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return s.err
	}
	s.left--
	return s.Source.Next(ctx, g)
}

func (s *failingSource) Close() error {
	s.closed = true
	return s.Source.Close()
}

// modes are the ways a run trains: pipelined at the default depth and at
// a deeper one (pulls of several batches in flight, handed to training in
// order), and sequential.
var modes = []mode{{"pipelined", true, 0}, {"pipelined-depth3", true, 3}, {"sequential", false, 0}}

type mode struct {
	name     string
	pipeline bool
	depth    int // train.prefetch_batches; 0: the default
}

// config is pipelineConfig in m.
func (m mode) config() config.Config {
	cfg := pipelineConfig(m.pipeline)
	if m.depth > 0 {
		cfg.Train.PrefetchBatches = &m.depth
	}
	return cfg
}

// TestRunCancelJoinsEveryGoroutine cancels a long training mid-run: Run must
// return context.Canceled promptly and leave no goroutine behind (stages,
// fetches, pushes).
func TestRunCancelJoinsEveryGoroutine(t *testing.T) {
	_, cl := startCluster(t, 2)
	groups := genGroups(t, 3000, 1)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			baseline := warmBaseline(t, cl, groups)
			cfg := m.config()
			cfg.Train.Epochs = 100000                 // far more than the test lets it train
			cfg.Train.ProgressEvery = time.Nanosecond // a line after every batch: gates wait on the first
			progress := newFirstWrite()
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: genShape, Train: memOpen(groups, true), Progress: progress})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				res Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := tr.Run(ctx)
				done <- result{res, err}
			}()
			select {
			case <-progress.wrote: // at least one batch trained
			case r := <-done:
				t.Fatalf("Run returned before it was cancelled: %+v, %v", r.res, r.err)
			case <-time.After(30 * time.Second):
				t.Fatal("no progress line after 30s")
			}
			cancel()
			cancelled := time.Now()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return within 10s of the cancellation")
			}
			if d := time.Since(cancelled); d > 5*time.Second {
				t.Errorf("Run returned %v after the cancellation", d)
			}
			if !errors.Is(r.err, context.Canceled) {
				t.Fatalf("Run after cancel = %v, want context.Canceled", r.err)
			}
			if r.res.Samples <= 0 || r.res.Position == (reader.Position{}) {
				t.Fatalf("cancelled after progress but the result shows none: %+v", r.res)
			}
			waitGoroutines(t, baseline)
		})
	}
}

// TestRunStopsOnSourceError makes the source fail after some groups: Run
// must return that error, close the source and join every goroutine.
func TestRunStopsOnSourceError(t *testing.T) {
	_, cl := startCluster(t, 1)
	groups := genGroups(t, 2000, 2)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			baseline := warmBaseline(t, cl, groups)
			bad := fmt.Errorf("%w: test: group 40 is corrupt", reader.ErrMalformed)
			var srcs []*failingSource
			open := func(epoch int) (reader.Source, error) {
				s := &failingSource{Source: newMemorySource(groups, false, 0, 0, reader.Position{}), left: 40, err: bad}
				srcs = append(srcs, s)
				return s, nil
			}
			cfg := m.config()
			cfg.Train.Epochs = 3
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: genShape, Train: open})
			res, err := tr.Run(testutil.Ctx(t, 30*time.Second))
			if !errors.Is(err, bad) || !errors.Is(err, reader.ErrMalformed) {
				t.Fatalf("Run = %v, want the source's error %v", err, bad)
			}
			if len(srcs) != 1 || !srcs[0].closed {
				t.Fatalf("%d sources opened (closed: %v), want one, closed", len(srcs), len(srcs) > 0 && srcs[0].closed)
			}
			if res.Epochs != 0 {
				t.Fatalf("result %+v claims finished epochs", res)
			}
			waitGoroutines(t, baseline)
		})
	}
}

// tagSamples returns copies of groups whose samples carry one more sparse
// field, field, holding a unique sample id.
func tagSamples(groups []*reader.Group, field uint32) []*reader.Group {
	var out []*reader.Group
	next := uint64(0)
	for _, src := range groups {
		g := new(reader.Group)
		g.Reset(2)
		fs, ids, vs := src.Levels[1].Line(0)
		g.AddLine(1, 0, fs, ids, vs)
		for i := 0; i < src.NumSamples(); i++ {
			fs, ids, vs := src.Levels[0].Line(i)
			fs = append(append([]uint32(nil), fs...), field)
			ids = append(append([]uint64(nil), ids...), next)
			vs = append(append([]float32(nil), vs...), 1)
			next++
			g.AddLine(0, src.Levels[0].Parent[i], fs, ids, vs)
			g.AddLabels(src.SampleLabels(i)...)
		}
		out = append(out, g)
	}
	return out
}

// tableRows sums the rows of a table over the shards.
func tableRows(t *testing.T, lc *cluster.Cluster, table string) int {
	t.Helper()
	rows := 0
	for _, n := range lc.Nodes() {
		st, err := n.Shard().Stats()
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range st.Tables {
			if ts.Name == table {
				rows += int(ts.Rows)
			}
		}
	}
	return rows
}

// TestRunTrainsEverySampleOncePerEpoch trains two shuffled epochs over
// memory, each sample carrying a unique id in a table of its own: the counts
// must be exact, every id must have been pulled (so each sample was trained
// on, none twice), and the final position must be the source's end.
func TestRunTrainsEverySampleOncePerEpoch(t *testing.T) {
	lc, cl := startCluster(t, 2)
	const total = 2500 // not a multiple of the batch size
	base := genGroups(t, total, 3)
	groups := tagSamples(base, 6)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cfg := m.config()
			cfg.Train.Epochs = 2
			sid := "sid-" + m.name
			cfg.Model.Tables = append(cfg.Model.Tables, ams.TableSpec{Name: sid, Dim: 1})
			cfg.Model.FieldTables = []string{"emb", "emb", "emb", "emb", "emb", "emb", sid}
			cfg.EnsureDefaults()
			shape := ctr.Shape{Fields: 7, Levels: []int{1, 1, 0, 0, 0, 0, 0}}
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: shape, Train: memOpen(groups, true)})
			res, err := tr.Run(testutil.JobCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			bs := int64(cfg.Train.BatchSize)
			if res.Samples != 2*total || res.Nodes[0] != res.Samples || res.Batches != 2*((total+bs-1)/bs) {
				t.Fatalf("%d samples in %d batches (nodes %v), want %d in %d", res.Samples, res.Batches, res.Nodes,
					2*total, 2*((total+bs-1)/bs))
			}
			if res.Nodes[1] >= res.Nodes[0] {
				t.Fatalf("nodes per level %v: the batches were not compressed", res.Nodes)
			}
			if want := (reader.Position{File: MemoryName, Offset: int64(len(groups))}); res.Position != want {
				t.Fatalf("position %v, want the source's end %v", res.Position, want)
			}
			if n := tableRows(t, lc, sid); n != total {
				t.Fatalf("%d sample ids pulled, want every one of the %d samples", n, total)
			}
		})
	}
}

// TestRunFilePositionIsSourceEnd trains on a sample-group file: every sample
// once, every byte read, and the final position is the source's own end.
func TestRunFilePositionIsSourceEnd(t *testing.T) {
	_, cl := startCluster(t, 2)
	const total = 2500
	path := filepath.Join(t.TempDir(), "train.group")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := datagen.New(genConfig(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.WriteGroups(f, total); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range modes {
		t.Run("file-"+m.name, func(t *testing.T) {
			cfg := m.config()
			cfg.Train.Format = "group"
			inOrder := false // stream the file (shuffling reads it into memory)
			cfg.Train.Shuffle = &inOrder
			data, err := LoadData(job.Options{Config: withJob(cfg, []string{path}, nil)}, []reader.FileSplit{{Path: path}})
			if err != nil {
				t.Fatal(err)
			}
			var last reader.Source
			open := func(epoch int) (reader.Source, error) {
				src, err := data.Train(epoch, reader.Position{})
				last = src
				return src, err
			}
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: data.Shape, Train: open})
			res, err := tr.Run(testutil.JobCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Samples != total || res.BytesRead != fi.Size() {
				t.Fatalf("%d samples, %d bytes read; want %d samples, %d bytes", res.Samples, res.BytesRead, total, fi.Size())
			}
			if _, ok := last.(*reader.FileSource); !ok {
				t.Fatalf("the training data is a %T, want a *reader.FileSource", last)
			}
			end := last.Position()
			if res.Position != end || end != (reader.Position{File: path, Offset: fi.Size()}) {
				t.Fatalf("position %v, the source ended at %v, the file has %d bytes", res.Position, end, fi.Size())
			}
		})
	}
}

// batchEnds returns the End of every batch of size bs over groups, read as
// an in-memory source reads them (in order): those of the batches filled by
// the first k groups, and those of every batch after Flush.
func batchEnds(t *testing.T, cfg config.Config, shape ctr.Shape, groups []*reader.Group, k int) (full, all []reader.Position) {
	t.Helper()
	l, err := ctr.NewLayout(cfg, shape)
	if err != nil {
		t.Fatal(err)
	}
	b, err := compress.NewBuilder(compress.Options{BatchSize: cfg.Train.BatchSize, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	src := newMemorySource(groups, false, 0, 0, reader.Position{})
	g := new(reader.Group)
	for i := range groups {
		if err := src.Next(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(g); err != nil {
			t.Fatal(err)
		}
		for bt := b.Take(); bt != nil; bt = b.Take() {
			all = append(all, bt.End)
		}
		if i == k-1 {
			full = append([]reader.Position(nil), all...)
		}
	}
	b.Flush()
	for bt := b.Take(); bt != nil; bt = b.Take() {
		all = append(all, bt.End)
	}
	return full, all
}

// TestRunPositionIsLastTrainedSample checks Result.Position against the End
// of the last batch trained, computed with package compress: after a whole
// epoch, and after a source failure that leaves the last full batch ending
// inside a group.
func TestRunPositionIsLastTrainedSample(t *testing.T) {
	_, cl := startCluster(t, 1)
	const total, k = 1500, 41 // total is not a multiple of 64
	groups := genGroups(t, total, 5)
	cfg := pipelineConfig(true)
	full, all := batchEnds(t, cfg, genShape, groups, k)
	if n := len(full); n == 0 || full[n-1].Index == 0 || all[len(all)-1].Index != 0 {
		t.Fatalf("test data: the batches of the first %d groups end at %v: want the last inside a group", k, full)
	}
	bs := int64(cfg.Train.BatchSize)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cfg := m.config()
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: genShape, Train: memOpen(groups, false)})
			res, err := tr.Run(testutil.JobCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Samples != total || res.Batches != int64(len(all)) || res.Position != all[len(all)-1] {
				t.Fatalf("%d samples in %d batches ending at %v; want %d in %d ending at %v",
					res.Samples, res.Batches, res.Position, total, len(all), all[len(all)-1])
			}
		})
		t.Run(m.name+"-failed", func(t *testing.T) {
			cfg := m.config()
			cfg.Train.ProgressEvery = time.Nanosecond // a line after every batch: gates wait on the first
			bad := fmt.Errorf("%w: test", reader.ErrMalformed)
			// The source fails once a batch has been trained, so that the
			// pipeline too trains some before it stops.
			progress := newFirstWrite()
			open := func(int) (reader.Source, error) {
				return &failingSource{Source: newMemorySource(groups, false, 0, 0, reader.Position{}), left: k, err: bad,
					gate: progress.wrote}, nil
			}
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: genShape, Train: open, Progress: progress})
			res, err := tr.Run(testutil.JobCtx(t))
			if !errors.Is(err, bad) {
				t.Fatalf("Run = %v, want %v", err, bad)
			}
			// Sequential mode trains every full batch before the failure; the
			// pipeline may stop before some of them, but the position must
			// be the end of the last batch it counted.
			trained := res.Samples / bs
			t.Logf("%d of %d full batches trained before the failure", trained, len(full))
			switch {
			case res.Samples%bs != 0 || trained == 0 || trained > int64(len(full)):
				t.Fatalf("%d samples trained: not whole batches of the first %d groups (%d)", res.Samples, k, len(full))
			case !m.pipeline && trained != int64(len(full)):
				t.Fatalf("%d batches trained, want the %d full batches before the failure", trained, len(full))
			case res.Position != full[trained-1]:
				t.Fatalf("position %v after %d batches, want %v", res.Position, trained, full[trained-1])
			}
		})
	}
}

// TestRunRejectsBadLabel trains on sample-group data with a label outside
// [0, 1]: Run must fail with ErrBadLabel in both modes.
func TestRunRejectsBadLabel(t *testing.T) {
	_, cl := startCluster(t, 1)
	for _, label := range []string{"3", "-0.5"} {
		path := filepath.Join(t.TempDir(), "train.group")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		gen, err := datagen.New(genConfig(6))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gen.WriteGroups(f, 300); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "group 2\n1 - - 0:1 1:2\n0 0 1 2:1 3:1 4:1 5:1\n0 0 %s 2:2 3:2 4:2 5:2\n", label)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			t.Run(m.name+"-label"+label, func(t *testing.T) {
				cfg := m.config()
				cfg.Train.Format = "group"
				data, err := LoadData(job.Options{Config: withJob(cfg, []string{path}, nil)}, []reader.FileSplit{{Path: path}})
				if err != nil {
					t.Fatal(err)
				}
				tr := newTrainer(t, cl, Options{Config: cfg, Shape: data.Shape, Train: data.FromStart()})
				res, err := tr.Run(testutil.JobCtx(t))
				if !errors.Is(err, ErrBadLabel) {
					t.Fatalf("Run on a label of %s = %v (result %+v), want ErrBadLabel", label, err, res)
				}
				if res.Samples >= 302 {
					t.Fatalf("%d samples trained, including the bad one", res.Samples)
				}
			})
		}
	}
}

// noNextSource is a source that forgets to say where its groups end.
type noNextSource struct{ reader.Source }

func (s noNextSource) Next(ctx context.Context, g *reader.Group) error {
	err := s.Source.Next(ctx, g)
	g.Next = reader.Position{}
	return err
}

// TestRunRefusesGroupsWithoutNext: a group without the position after it
// (a custom source's slip) stops the job with the reason, instead of a
// model whose stored position would have a resumed job train everything
// again.
func TestRunRefusesGroupsWithoutNext(t *testing.T) {
	_, cl := startCluster(t, 1)
	groups := genGroups(t, 200, 2)
	open := func(epoch int) (reader.Source, error) {
		return noNextSource{newMemorySource(groups, false, 0, 0, reader.Position{})}, nil
	}
	tr := newTrainer(t, cl, Options{Config: modes[0].config(), Shape: genShape, Train: open})
	_, err := tr.Run(testutil.Ctx(t, 30*time.Second))
	if err == nil || !strings.Contains(err.Error(), "without the position after it (reader.Group.Next)") {
		t.Fatalf("Run = %v", err)
	}
}
