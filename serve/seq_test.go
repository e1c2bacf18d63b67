package serve_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/seqgen"
	"github.com/xdlgo/xps/serve"
)

// seqJob is a din or dien job on generated behaviour sequences (package
// seqgen, sample groups: the history on the user's line) with tables of
// dim, writing its test scores and exporting its final model.
func seqJob(tb testing.TB, kind string, n, dim int) (store, test string, scores []float32, cfg config.Config) {
	tb.Helper()
	dir := tb.TempDir()
	train, test := filepath.Join(dir, "train.group"), filepath.Join(dir, "test.group")
	writeSeq(tb, train, 1, n)
	writeSeq(tb, test, 2, 600)
	cfg.Model.Kind = kind
	cfg.Model.Sequence = config.SequenceConfig{History: []int{seqgen.FieldHistItem, seqgen.FieldHistCat},
		Target: []int{seqgen.FieldItem, seqgen.FieldCat}, Negatives: []int{seqgen.FieldNegItem, seqgen.FieldNegCat}}
	cfg.Train.BatchSize, cfg.Train.Format = 64, "group"
	cfg.Model.DenseOptimizer.LR = 0.003
	cfg.Job.Train, cfg.Job.Test, cfg.Job.TestScores = []string{train}, []string{test}, filepath.Join(dir, "scores.txt")
	cfg.EnsureDefaults()
	cfg.Model.Tables[0].Dim = dim
	store = filepath.Join(dir, "exports")
	cfg.Export = export.Policy{Store: store, Every: -1, Quant: export.FP32}
	return store, test, runJob(tb, cfg), cfg
}

// writeSeq writes n samples of seqgen's stream seed in the group format.
func writeSeq(tb testing.TB, path string, seed uint64, n int) {
	tb.Helper()
	gen, err := seqgen.New(seqgen.Config{Seed: seed})
	if err != nil {
		tb.Fatal(err)
	}
	w, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	if err := gen.Write(w, n, reader.SampleGroup, nil); err != nil {
		tb.Fatal(err)
	}
}

// seqGroups reads a group file as the job does: history fields hashed in
// their targets' namespaces.
func seqGroups(tb testing.TB, path string, cfg config.Config) []*reader.Group {
	tb.Helper()
	dec, err := reader.NewDecoderWith(reader.SampleGroup, reader.DecoderOptions{Namespace: cfg.Model.Sequence.Namespace(0)})
	if err != nil {
		tb.Fatal(err)
	}
	src, err := reader.NewFileSource([]reader.FileSplit{{Path: path}}, reader.FileSourceOptions{Decoder: dec})
	if err != nil {
		tb.Fatal(err)
	}
	groups, err := reader.ReadAll(context.Background(), src)
	if err != nil {
		tb.Fatal(err)
	}
	return groups
}

// request is a serving request of the test set: the user of the group
// with the longest history and k candidates, the candidate lines of the
// groups after it, cycled.
func request(groups []*reader.Group, k int) *reader.Group {
	best := 0
	for i, g := range groups {
		if g.Levels[1].Len() > 0 && len(g.Levels[1].Fields) > len(groups[best].Levels[1].Fields) {
			best = i
		}
	}
	u := groups[best].Levels[1]
	g := new(reader.Group)
	g.Reset(2)
	g.AddLine(1, -1, u.Fields, u.IDs, u.Values)
	for i, j := 0, best; i < k; j++ {
		c := groups[(j+1)%len(groups)].Levels[0]
		for l := 0; l < c.Len() && i < k; l, i = l+1, i+1 {
			lo, hi := c.Offsets[l], c.Offsets[l+1]
			g.AddLine(0, 0, c.Fields[lo:hi], c.IDs[lo:hi], c.Values[lo:hi])
			g.AddLabels(0)
		}
	}
	return g
}

// TestSequenceParity: a server from the final export of a din or dien
// job scores the test set as the worker's evaluation did (within 1e-5),
// and scores a request of one user and 100 candidates without
// allocating once warm (the buffers of the history part are kept
// between requests; not checked under the race detector).
func TestSequenceParity(t *testing.T) {
	for _, kind := range []string{config.KindDIN, config.KindDIEN} {
		t.Run(kind, func(t *testing.T) {
			if raceEnabled && kind == config.KindDIEN {
				t.Skip("the race build checks one sequence kind: the server's concurrency is the same")
			}
			n := 20000
			if raceEnabled {
				n = 6000 // the race detector's training runs many times slower
			}
			store, test, want, cfg := seqJob(t, kind, n, 8)
			s, err := serve.New(serve.Options{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			groups := seqGroups(t, test, cfg)
			var got []float32
			for _, g := range groups {
				sc := make([]float32, g.NumSamples())
				if _, err := s.Score(g, sc); err != nil {
					t.Fatal(err)
				}
				got = append(got, sc...)
			}
			if len(got) != len(want) || slices.Max(want)-slices.Min(want) < 0.05 {
				t.Fatalf("%d scores, the worker wrote %d spanning [%v, %v]", len(got), len(want), slices.Min(want), slices.Max(want))
			}
			worst := 0.0
			for i := range got {
				worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
			}
			if worst > 1e-5 {
				t.Fatalf("largest difference from the worker's scores %g > 1e-5", worst)
			}
			req, out := request(groups, 100), make([]float32, 100)
			if _, err := s.Score(req, out); err != nil {
				t.Fatal(err)
			}
			if raceEnabled {
				return // its sync.Pool drops scorers on purpose
			}
			if a := testing.AllocsPerRun(20, func() { s.Score(req, out) }); a != 0 {
				t.Errorf("a warm request of 1 user x 100 candidates allocates %v times", a)
			}
		})
	}
}

// BenchmarkServeSequence scores requests of one user (the test set's
// longest history, 50 items with seqgen's defaults) and 100 candidates
// with a din or dien model of dim-18 tables, MLP 200-80, attention 80-40
// (the defaults), in process: per-request p50 and p99 latency and
// allocations. bench/seq.sh sets it beside the PyTorch reference.
func BenchmarkServeSequence(b *testing.B) {
	for _, kind := range []string{config.KindDIN, config.KindDIEN} {
		b.Run(kind, func(b *testing.B) {
			store, test, _, cfg := seqJob(b, kind, 20000, 18)
			s, err := serve.New(serve.Options{Store: store})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			req, out := request(seqGroups(b, test, cfg), 100), make([]float32, 100)
			for range 20 {
				if _, err := s.Score(req, out); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				s.Score(req, out)
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
			b.ReportMetric(float64(len(req.Levels[1].Fields)), "user_features")
		})
	}
}
