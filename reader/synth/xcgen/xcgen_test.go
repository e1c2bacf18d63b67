package xcgen

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/xdlgo/xps/reader"
)

func small() Config {
	return Config{Features: 5000, Labels: 2000, NNZ: 40, Seed: 7}
}

func TestDeterministic(t *testing.T) {
	g, err := New(small())
	if err != nil {
		t.Fatal(err)
	}
	write := func(g *Generator, stream uint64, n int) []byte {
		var b bytes.Buffer
		if err := g.WriteXML(context.Background(), &b, stream, n, nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	g2, _ := New(small())
	a, b := write(g, 0, 300), write(g2, 0, 300)
	if !bytes.Equal(a, b) {
		t.Fatal("same config, different output")
	}
	// A prefix of a longer file (after the header) is the shorter file.
	long := write(g, 0, 400)
	body := func(x []byte) []byte { return x[bytes.IndexByte(x, '\n')+1:] }
	if !bytes.HasPrefix(body(long), body(a)) {
		t.Fatal("the first samples depend on n")
	}
	if bytes.Equal(body(write(g, 1, 300)), body(a)) {
		t.Fatal("streams 0 and 1 are equal")
	}
	c := small()
	c.Seed = 8
	g3, _ := New(c)
	if bytes.Equal(write(g3, 0, 300), a) {
		t.Fatal("seeds 7 and 8 are equal")
	}
}

func TestSampleInvariants(t *testing.T) {
	cfg := small()
	g, _ := New(cfg)
	var s Sample
	var nnz, labels float64
	const n = 5000
	counts := make([]int, cfg.Labels)
	for i := uint64(0); i < n; i++ {
		g.Sample(3, i, &s)
		if len(s.Labels) < 1 || len(s.Labels) > 5 {
			t.Fatalf("sample %d: %d labels", i, len(s.Labels))
		}
		if !slices.IsSorted(s.Labels) || len(slices.Compact(slices.Clone(s.Labels))) != len(s.Labels) {
			t.Fatalf("labels %v not ascending and distinct", s.Labels)
		}
		for _, l := range s.Labels {
			if l < 0 || int(l) >= cfg.Labels {
				t.Fatalf("label %d", l)
			}
			counts[l]++
		}
		if len(s.Features) < 1 || len(s.Features) != len(s.Values) {
			t.Fatalf("sample %d: %d features, %d values", i, len(s.Features), len(s.Values))
		}
		var norm float64
		for k, f := range s.Features {
			if f < 0 || int(f) >= cfg.Features || (k > 0 && f <= s.Features[k-1]) {
				t.Fatalf("features %v not ascending in range", s.Features)
			}
			if !(s.Values[k] > 0) {
				t.Fatalf("value %v", s.Values[k])
			}
			norm += float64(s.Values[k]) * float64(s.Values[k])
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Fatalf("norm %v", norm)
		}
		nnz += float64(len(s.Features))
		labels += float64(len(s.Labels))
	}
	nnz /= n
	labels /= n
	slices.Sort(counts)
	top := counts[len(counts)-1]
	t.Logf("mean nnz %.1f, mean labels %.2f, most frequent label in %.2f%% of samples, %d labels unseen",
		nnz, labels, 100*float64(top)/n, countZeros(counts))
	if math.Abs(nnz-float64(cfg.NNZ)) > 0.05*float64(cfg.NNZ) {
		t.Fatalf("mean nnz %.1f, want about %d", nnz, cfg.NNZ)
	}
	if labels < 1.8 || labels > 2.6 {
		t.Fatalf("mean labels %.2f", labels)
	}
	if float64(top)/n < 10*labels/float64(cfg.Labels) {
		t.Fatalf("label popularity not skewed: top label in %d of %d", top, n)
	}
}

func countZeros(c []int) int {
	n := 0
	for _, v := range c {
		if v == 0 {
			n++
		}
	}
	return n
}

// TestReadBack writes a train and a test file and reads them back through
// reader's XML decoder.
func TestReadBack(t *testing.T) {
	cfg := small()
	g, _ := New(cfg)
	dir := t.TempDir()
	for _, split := range []struct {
		name   string
		stream uint64
		n      int
	}{{"train.txt", 0, 2000}, {"test.txt", 1, 500}} {
		path := filepath.Join(dir, split.name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		var calls []int
		err = g.WriteXML(context.Background(), f, split.stream, split.n, func(done int) { calls = append(calls, done) })
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) == 0 || calls[len(calls)-1] != split.n {
			t.Fatalf("progress calls %v", calls)
		}
		src, err := reader.OpenFiles([]reader.FileSplit{{Path: path}}, reader.XML, reader.StopOnBad)
		if err != nil {
			t.Fatal(err)
		}
		groups, err := reader.ReadAll(context.Background(), src)
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) != split.n {
			t.Fatalf("%s: read %d samples, wrote %d", split.name, len(groups), split.n)
		}
		var s Sample
		for i, gr := range groups {
			g.Sample(split.stream, uint64(i), &s)
			labels := gr.SampleLabels(0)
			if len(labels) != len(s.Labels) {
				t.Fatalf("%s sample %d: %d labels read, %d written", split.name, i, len(labels), len(s.Labels))
			}
			for k, l := range labels {
				if int32(l) != s.Labels[k] {
					t.Fatalf("%s sample %d: labels %v, wrote %v", split.name, i, labels, s.Labels)
				}
			}
			_, ids, vals := gr.Levels[0].Line(0)
			if len(ids) != len(s.Features) {
				t.Fatalf("%s sample %d: %d features read, %d written", split.name, i, len(ids), len(s.Features))
			}
			for k, id := range ids {
				if want := reader.FeatureID(0, []byte(strconv.Itoa(int(s.Features[k])))); id != want {
					t.Fatalf("%s sample %d feature %d: id %x, want %x", split.name, i, k, id, want)
				}
				// 5 significant digits.
				if d := math.Abs(float64(vals[k]-s.Values[k])) / float64(s.Values[k]); d > 1e-4 {
					t.Fatalf("%s sample %d: value %v read, %v written", split.name, i, vals[k], s.Values[k])
				}
			}
		}
	}
}

// TestLearnable checks that the labels are predictable from the features:
// a centroid classifier (score(label) = cosine of x and the sum of the
// training vectors of the label) reaches a P@1 far above always predicting the most frequent
// label.
func TestLearnable(t *testing.T) {
	cfg := Config{Features: 5000, Labels: 1000, NNZ: 40, Seed: 3}
	g, _ := New(cfg)
	F, L := cfg.Features, cfg.Labels
	cent := make([]float32, L*F) // label-major
	freq := make([]int, L)
	var s Sample
	trainN, testN := uint64(20000), uint64(2000)
	if raceEnabled || testing.Short() {
		trainN, testN = 6000, 300
	}
	for i := uint64(0); i < trainN; i++ {
		g.Sample(0, i, &s)
		for _, l := range s.Labels {
			freq[l]++
			row := cent[int(l)*F : (int(l)+1)*F]
			for k, f := range s.Features {
				row[f] += s.Values[k]
			}
		}
	}
	for l := 0; l < L; l++ { // cosine: unit centroids
		row := cent[l*F : (l+1)*F]
		var n float64
		for _, v := range row {
			n += float64(v) * float64(v)
		}
		if n > 0 {
			inv := float32(1 / math.Sqrt(n))
			for k := range row {
				row[k] *= inv
			}
		}
	}
	top := 0
	for l := range freq {
		if freq[l] > freq[top] {
			top = l
		}
	}
	var hits, chance int
	for i := uint64(0); i < testN; i++ {
		g.Sample(1, i, &s)
		best, bestScore := -1, float32(-1)
		for l := 0; l < L; l++ {
			row := cent[l*F : (l+1)*F]
			var sc float32
			for k, f := range s.Features {
				sc += row[f] * s.Values[k]
			}
			if sc > bestScore {
				best, bestScore = l, sc
			}
		}
		if slices.Contains(s.Labels, int32(best)) {
			hits++
		}
		if slices.Contains(s.Labels, int32(top)) {
			chance++
		}
	}
	p1, c1 := float64(hits)/float64(testN), float64(chance)/float64(testN)
	t.Logf("centroid classifier P@1 %.3f; most frequent label %.3f", p1, c1)
	if p1 < 0.3 || p1 < 5*c1 {
		t.Fatalf("P@1 %.3f, most frequent label %.3f", p1, c1)
	}
}

func TestConfig(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if c.Features != 135909 || c.Labels != 670091 || c.NNZ != 75 || c.MaxLabels != 5 {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Config{Features: 10, NNZ: 20, MinLabels: 3, MaxLabels: 2, LabelZipf: -1, Noise: 2}
	bad.EnsureDefaults()
	err := bad.Validate()
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("%v", err)
	}
	if _, err := New(bad); err == nil {
		t.Fatal("New accepted a bad config")
	}
	// Negative means none.
	z := Config{Noise: -1, Related: -1, ClusterShare: -1}
	z.EnsureDefaults()
	if z.Noise != 0 || z.Related != 0 || z.ClusterShare != 0 {
		t.Fatalf("negative values: %+v", z)
	}
}

func TestWriteXMLCancel(t *testing.T) {
	g, _ := New(small())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b bytes.Buffer
	if err := g.WriteXML(ctx, &b, 0, 10000, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}

func TestAffine(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 97, 1000, 670091} {
		f := newAffine(n, 5, 1)
		seen := make([]bool, n)
		for r := 0; r < n; r++ {
			id := f.apply(r)
			if seen[id] {
				t.Fatalf("n %d: %d hit twice", n, id)
			}
			seen[id] = true
			if f.invert(id) != r {
				t.Fatalf("n %d: invert(apply(%d)) = %d", n, r, f.invert(id))
			}
		}
	}
}
