package ctrtrain

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/tests/testutil"
)

// maxAllocsPerBatch bounds the heap allocations per batch of the
// steady-state training loop on the direct path (TestSteadyStateAllocs).
const maxAllocsPerBatch = 2

// allocRun is one measured training run (measureAllocs).
type allocRun struct {
	batches float64 // batches trained between the two marks
	allocs  uint64  // the process's heap allocations between them
	seconds float64 // wall time between them
	gcs     uint32  // garbage collections between them
}

func (a allocRun) perBatch() float64 { return float64(a.allocs) / a.batches }

// markSource is a training source that reads the process's allocation
// count twice: once warm groups have been read and once stop have. The
// pipeline is full at both marks (reading is far ahead of training and
// waits on its pool), so what the process allocates between them is the
// steady-state cost of training the samples read between them.
type markSource struct {
	reader.Source
	warm, stop int // groups
	read       int
	samples    int // read between the marks
	dir        string
	mark       [2]runtime.MemStats
	at         [2]time.Time
	err        error
}

func (s *markSource) Next(ctx context.Context, g *reader.Group) error {
	err := s.Source.Next(ctx, g)
	if err != nil {
		return err
	}
	s.read++
	switch {
	case s.read == s.warm:
		s.take(0)
	case s.read > s.warm && s.read <= s.stop:
		s.samples += g.NumSamples() - g.Pos.Index
		if s.read == s.stop {
			s.take(1)
		}
	}
	return nil
}

// take reads mark i. When XPS_ALLOCS_PROFILE names a directory, every
// allocation between the marks is recorded (runtime.MemProfileRate 1
// from mark 0, 0 before and after) and written to window.prof there:
// go tool pprof -sample_index=alloc_objects -top window.prof lists their
// sites (with a few of the process's start, recorded at the default
// rate).
func (s *markSource) take(i int) {
	if s.dir != "" && i == 0 {
		runtime.MemProfileRate = 1
	}
	runtime.ReadMemStats(&s.mark[i])
	s.at[i] = time.Now()
	if s.dir != "" && i == 1 {
		runtime.MemProfileRate = 0
		runtime.GC() // the profile is of the last completed cycle
		f, err := os.Create(filepath.Join(s.dir, "window.prof"))
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		s.err = err
	}
}

// measureAllocs trains one epoch of the default job's generated data
// (23 fields, 2 levels, dim 18), shuffled through a window as the worker
// does, at batch size batch, on 2 shards called directly (directClient),
// and returns the allocations between the marks: after warm batches'
// worth of groups, and measured batches' worth later.
func measureAllocs(tb testing.TB, batch, warm, measured int, pipeline bool) allocRun {
	tb.Helper()
	dir := os.Getenv("XPS_ALLOCS_PROFILE")
	if dir != "" {
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 0 // from mark 0 to mark 1 only
	}
	ctx := testutil.Ctx(tb, 5*time.Minute)
	cl := directClient(tb, 2)
	var cfg config.Config
	cfg.EnsureDefaults()
	for i := range cfg.Model.Tables {
		cfg.Model.Tables[i].Dim = 18
	}
	cfg.Train.Epochs, cfg.Train.BatchSize, cfg.Train.Pipeline = 1, batch, &pipeline
	// 40 batches more than measured: the source does not end before the
	// second mark.
	cfg.Data.TrainSamples, cfg.Data.TestSamples = (warm+measured+40)*batch, 0
	data, err := LoadData(job.Options{Config: cfg}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	// Groups per batch, from the data's mean group size.
	src, err := data.Train(1, reader.Position{})
	if err != nil {
		tb.Fatal(err)
	}
	groups, samples := 0, 0
	for g := new(reader.Group); src.Next(ctx, g) == nil; groups++ {
		samples += g.NumSamples()
	}
	src.Close()
	perBatch := float64(groups) / float64(samples) * float64(batch)
	ms := &markSource{warm: int(float64(warm) * perBatch), stop: int(float64(warm+measured) * perBatch), dir: dir}
	tr, err := New(cl, Options{Config: cfg, Shape: data.Shape, Name: "allocs", Train: func(epoch int) (reader.Source, error) {
		s, err := data.Train(epoch, reader.Position{}) // one epoch: called once
		ms.Source = s
		return ms, err
	}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := tr.Declare(ctx); err != nil {
		tb.Fatal(err)
	}
	if _, err := tr.Run(ctx); err != nil {
		tb.Fatal(err)
	}
	if ms.err != nil {
		tb.Fatal(ms.err)
	}
	if ms.read < ms.stop {
		tb.Fatalf("read %d groups, want at least %d", ms.read, ms.stop)
	}
	return allocRun{batches: float64(ms.samples) / float64(batch), allocs: ms.mark[1].Mallocs - ms.mark[0].Mallocs,
		seconds: ms.at[1].Sub(ms.at[0]).Seconds(), gcs: ms.mark[1].NumGC - ms.mark[0].NumGC}
}

// directClient starts n shards of 2 stripes, each served over loopback
// gRPC (for declarations), and returns a client that pulls and pushes by
// calling them directly (client.NewLocal with shard.Local, as `worker
// -local` does). There is no etcd, no scheduler: nothing else in the
// process allocates on a clock.
func directClient(tb testing.TB, n int) *client.Client {
	tb.Helper()
	var ids, addrs []string
	direct := resolver{}
	for i := range n {
		s := shard.New(shard.Options{ID: fmt.Sprintf("ams-%d", i), Stripes: 2})
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		gs := shard.NewGRPCServer(s)
		go gs.Serve(lis)
		tb.Cleanup(func() { gs.Stop(); s.Close() })
		ids, addrs = append(ids, s.ID()), append(addrs, lis.Addr().String())
		direct[lis.Addr().String()] = shard.NewLocal(s)
	}
	m, err := ams.NewShardMap(ams.DefaultVersion, ams.DefaultPartitions, ids, addrs)
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := client.NewLocal(m, direct)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cl.Close() })
	return cl
}

// resolver resolves the shards it holds by address (client.Resolver).
type resolver map[string]client.DataPlane

func (r resolver) Local(addr string) client.DataPlane { return r[addr] }

// TestSteadyStateAllocs checks that training on the direct path (the
// worker and the shards in one process) allocates at most
// maxAllocsPerBatch per batch once warm: reading and parsing, batch
// building, pulls and pushes through the shards' stripe owners, the
// dense network and the pipeline's queues reuse their buffers. It counts
// allocations, not time, so the machine's speed does not matter.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	if testing.Short() {
		t.Skip("trains 250 batches of 256 samples twice (short mode)")
	}
	for _, pipeline := range []bool{true, false} {
		name := "sequential"
		if pipeline {
			name = "pipeline"
		}
		t.Run(name, func(t *testing.T) {
			r := measureAllocs(t, 256, 100, 150, pipeline)
			t.Logf("%.2f allocs/batch over %.0f batches (%d allocs, %d collections)", r.perBatch(), r.batches, r.allocs, r.gcs)
			if r.perBatch() > maxAllocsPerBatch {
				t.Errorf("%.1f allocs/batch in steady state, want at most %d (XPS_ALLOCS_PROFILE=DIR writes their profile)",
					r.perBatch(), maxAllocsPerBatch)
			}
		})
	}
}

// benchAllocs is the family of BenchmarkTrainAllocs: b.N batches of size
// batch measured after 60 of warm-up, reporting allocs/batch and the
// samples/s of the measured batches.
func benchAllocs(b *testing.B, batch int, pipeline bool) {
	r := measureAllocs(b, batch, 60, b.N, pipeline)
	b.ReportMetric(r.perBatch(), "allocs/batch")
	b.ReportMetric(r.batches*float64(batch)/r.seconds, "samples/s")
}

func BenchmarkTrainAllocs_Batch256(b *testing.B)            { benchAllocs(b, 256, true) }
func BenchmarkTrainAllocs_Batch1024(b *testing.B)           { benchAllocs(b, 1024, true) }
func BenchmarkTrainAllocs_Batch256_Sequential(b *testing.B) { benchAllocs(b, 256, false) }
