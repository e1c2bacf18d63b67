package datagen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xdlgo/xps/model/metrics"
	"github.com/xdlgo/xps/reader"
)

// TestDriftOffIsByteIdentical checks that the generator without drift
// (DriftLifetime 0, the default) draws exactly what it drew before drift
// existed: the digests were taken with the generator of commit 7e958cd, over
// the output of every way of drawing (WriteLibFFM, WriteGroups, Generate,
// NextGroup), their probabilities, ids and labels.
func TestDriftOffIsByteIdentical(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "417177a25ff80780ecdc30351861b6e90ea0e5c027829d6f8b6dbbd9f6dbb4f1"},
		{Config{Seed: 9, Vocab: 50, MeanBag: 5, UserFields: 3, Fields: 7},
			"a451f146775a5eb3e17b7c96c4d86fb5be48979d6ff9370ac1dbfae2cb883945"},
	} {
		n := 30000
		if raceEnabled {
			n = 3000 // the digests below are of 30000 samples: only check that nothing breaks
		}
		h := sha256.New()
		g := mustNew(t, tc.cfg)
		probs, err := g.WriteLibFFM(h, n)
		if err != nil {
			t.Fatal(err)
		}
		probs2, err := g.WriteGroups(h, n)
		if err != nil {
			t.Fatal(err)
		}
		ds := reader.NewDataset()
		probs3 := g.Generate(ds, 5000)
		var grp reader.Group
		var probs4 []float32
		for range 100 {
			probs4 = g.NextGroup(&grp, 7, probs4)
			fmt.Fprint(h, grp.NumSamples())
		}
		for _, p := range [][]float32{probs, probs2, probs3, probs4} {
			for _, x := range p {
				fmt.Fprintf(h, "%x", math.Float32bits(x))
			}
		}
		for _, id := range ds.IDs {
			fmt.Fprintf(h, "%x", id)
		}
		fmt.Fprintf(h, "%v", ds.Labels)
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != tc.want && !raceEnabled {
			t.Errorf("%+v: digest %s, want %s: the output without drift changed", tc.cfg, got, tc.want)
		}
	}
}

// driftConfig is a small drifting world: 4 fields of 2000 ids, each id
// drawn for 20000 samples.
var driftConfig = Config{Fields: 4, UserFields: 1, Vocab: 2000, DriftLifetime: 20000, Seed: 3}

// TestDriftVocabularyMoves checks the drift: distinct ids grow about
// linearly with samples, the ids of the first samples stop appearing once
// their lifetime is over, and many ids are seen only once or twice.
func TestDriftVocabularyMoves(t *testing.T) {
	const chunk, chunks = 10000, 12
	life := int(driftConfig.DriftLifetime)
	g := mustNew(t, driftConfig)
	seen := map[uint64]int{}
	first := map[uint64]bool{} // the ids of the first 2000 samples
	var growth []int
	for c := range chunks {
		ds := reader.NewDataset()
		g.Generate(ds, chunk)
		before := len(seen)
		for i := range ds.Len() {
			_, _, ids, _ := ds.Sample(i)
			at := c*chunk + i
			for _, id := range ids {
				seen[id]++
				if at < 2000 {
					first[id] = true
				}
				// An id drawn by sample 2000 is gone by sample life+2000;
				// a run of one user (mean 20 samples) keeps its profile's
				// ids: leave runs 1000 more samples to end.
				if at >= life+3000 && first[id] {
					t.Fatalf("sample %d draws id %x of the first samples (lifetime %d)", at, id, life)
				}
			}
		}
		growth = append(growth, len(seen)-before)
	}
	// After the first lifetime, every chunk brings about as many new ids.
	steady := growth[life/chunk:]
	lo, hi := slices.Min(steady), slices.Max(steady)
	t.Logf("new ids per %d samples: %v", chunk, growth)
	if lo < chunk/10 || float64(hi) > 1.25*float64(lo) {
		t.Errorf("new ids per chunk %v after the first lifetime: want steady growth", steady)
	}
	var rare int
	for _, n := range seen {
		if n <= 2 {
			rare++
		}
	}
	if share := float64(rare) / float64(len(seen)); share < 0.15 {
		t.Errorf("%.2f of the %d ids seen once or twice: want a long tail", share, len(seen))
	}
	// Without drift the vocabulary is used up: growth stalls.
	g = mustNew(t, Config{Fields: 4, UserFields: 1, Vocab: 2000, Seed: 3})
	ds := reader.NewDataset()
	g.Generate(ds, chunks*chunk)
	distinct := map[uint64]bool{}
	for _, id := range ds.IDs {
		distinct[id] = true
	}
	if len(distinct) > 4*2000 || len(seen) < 2*len(distinct) {
		t.Errorf("%d distinct ids with drift, %d without", len(seen), len(distinct))
	}
}

// TestDriftRenamesOnly checks that drift renames ids and changes nothing
// else: a drifting stream has the labels, probabilities and fields of the
// undrifted stream of the same Config, so its label rate and Bayes AUC stay
// those of TestBayesAUCAndCTR in every window.
func TestDriftRenamesOnly(t *testing.T) {
	n, windows := 40000, 5
	if raceEnabled {
		n, windows = 5000, 3
	}
	still, moving := mustNew(t, Config{}), mustNew(t, Config{DriftLifetime: int64(n)})
	for w := range windows {
		a, b := reader.NewDataset(), reader.NewDataset()
		pa, pb := still.Generate(a, n), moving.Generate(b, n)
		if !slices.Equal(pa, pb) || !slices.Equal(a.Labels, b.Labels) || !slices.Equal(a.Fields, b.Fields) {
			t.Fatalf("window %d: drift changed labels, probabilities or fields", w)
		}
		renamed := 0
		for i := range a.IDs {
			if a.IDs[i] != b.IDs[i] {
				renamed++
			}
		}
		var ctr float64
		for _, y := range b.Labels {
			ctr += float64(y)
		}
		ctr /= float64(n)
		auc := metrics.AUC(b.Labels, pb)
		t.Logf("window %d: %.2f of the ids renamed, CTR %.4f, Bayes AUC %.4f", w, float64(renamed)/float64(len(a.IDs)), ctr, auc)
		if w > 0 && renamed < len(a.IDs)/4 {
			t.Errorf("window %d: %d of %d ids renamed", w, renamed, len(a.IDs))
		}
		if ctr < 0.17 || ctr > 0.23 || auc < 0.78 || auc > 0.85 {
			t.Errorf("window %d: CTR %.4f, Bayes AUC %.4f; want about 0.2 and in [0.78, 0.85]", w, ctr, auc)
		}
	}
}

// TestDriftDeterministic checks that a drifting stream is a function of the
// config, and that both file formats read back to what Generate draws.
func TestDriftDeterministic(t *testing.T) {
	cfg := driftConfig
	cfg.DriftLifetime = 300 // several generations in 2000 samples
	want := reader.NewDataset()
	wantProbs := mustNew(t, cfg).Generate(want, 2000)
	again := reader.NewDataset()
	if p := mustNew(t, cfg).Generate(again, 2000); !sameDataset(want, again) || !slices.Equal(p, wantProbs) {
		t.Fatal("one config, two streams")
	}
	other := cfg
	other.Seed++
	diff := reader.NewDataset()
	if mustNew(t, other).Generate(diff, 2000); slices.Equal(diff.IDs[:500], want.IDs[:500]) {
		t.Error("different seeds, same samples")
	}
	var buf bytes.Buffer
	probs, err := mustNew(t, cfg).WriteLibFFM(&buf, 2000)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := reader.Read(&buf, "gen", reader.ReadOptions{Format: reader.LibFFM})
	if err != nil || !sameDataset(got, want) || !slices.Equal(probs, wantProbs) {
		t.Fatalf("libffm read back: %v; same dataset %v, same probabilities %v", err, sameDataset(got, want), slices.Equal(probs, wantProbs))
	}
	path := filepath.Join(t.TempDir(), "groups")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var labels []float32
	err = mustNew(t, cfg).Write(f, 2000, reader.SampleGroup, func(y, _ float32) { labels = append(labels, y) })
	if cerr := f.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	if got := readGroups(t, path); !sameDataset(got, want) || !slices.Equal(labels, want.Labels) {
		t.Fatalf("groups read back: same dataset %v, same labels %v", sameDataset(got, want), slices.Equal(labels, want.Labels))
	}
}

// readGroups reads a sample-group file into a Dataset, the user's fields
// before the item's on every sample.
func readGroups(t *testing.T, path string) *reader.Dataset {
	t.Helper()
	src, err := reader.OpenFiles([]reader.FileSplit{{Path: path}}, reader.SampleGroup, reader.StopOnBad)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	groups, err := reader.ReadAll(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	ds := reader.NewDataset()
	var feats []reader.Feature
	for _, g := range groups {
		uf, uids, _ := g.Levels[1].Line(0)
		for s := g.Pos.Index; s < g.NumSamples(); s++ {
			feats = feats[:0]
			f0, id0, _ := g.Levels[0].Line(s)
			for k := range uf {
				feats = append(feats, reader.Feature{Field: uf[k], ID: uids[k], Value: 1})
			}
			for k := range f0 {
				feats = append(feats, reader.Feature{Field: f0[k], ID: id0[k], Value: 1})
			}
			ds.Append(g.Label(s), feats)
		}
	}
	return ds
}

// TestWriteHoldsNothing checks that Write's memory does not grow with the
// number of samples: a few allocations per call (its buffer), none per
// sample.
func TestWriteHoldsNothing(t *testing.T) {
	g := mustNew(t, Config{DriftLifetime: 5000})
	for _, f := range []reader.Format{reader.LibFFM, reader.SampleGroup} {
		allocs := testing.AllocsPerRun(3, func() {
			if err := g.Write(io.Discard, 5000, f, nil); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 10 {
			t.Errorf("%v: %.0f allocations to write 5000 samples", f, allocs)
		}
	}
	if err := g.Write(io.Discard, 1, reader.XML, nil); err == nil {
		t.Error("Write in XML: no error")
	}
}
