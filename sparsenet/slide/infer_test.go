package slide

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// trainedSynth returns a layer trained for epochs on n samples of s (batch
// 128) and the samples.
func trainedSynth(t *testing.T, cfg Config, s *synth, n, epochs int) (*Layer, []float32, [][]int32) {
	t.Helper()
	l := newTestLayer(t, cfg)
	r := newRNG(1, 1, 1)
	x := make([]float32, n*s.din)
	labels := make([][]int32, n)
	s.fill(&r, n, x, labels)
	for e := 0; e < epochs; e++ {
		trainEpoch(t, l, x, labels, s.din)
	}
	return l, x, labels
}

func trainEpoch(t *testing.T, l *Layer, x []float32, labels [][]int32, din int) {
	t.Helper()
	const batch = 128
	for lo := 0; lo+batch <= len(labels); lo += batch {
		if _, err := l.TrainBatch(x[lo*din:(lo+batch)*din], batch, labels[lo:lo+batch], nil); err != nil {
			t.Fatal(err)
		}
		l.Maintain()
	}
}

// p1 returns the P@1 of dense and sparse inference on x.
func p1(l *Layer, x []float32, labels [][]int32) (dense, sparse float64) {
	n := len(labels)
	out := make([]int32, n)
	l.PredictDense(x, n, 1, out)
	dense = PrecisionAtK(out, 1, labels, 1)
	l.PredictSparse(x, n, 1, out)
	return dense, PrecisionAtK(out, 1, labels, 1)
}

// TestTuneInference: at sparsities where the training tables' autotuned
// shape (one table when s >= C2) misses the dense top-1, TuneInference
// builds inference tables that agree with dense inference on the
// calibration inputs, and sparse P@1 on held-out inputs comes within 0.02
// of dense P@1 (it was far below). Training on keeps them up to date;
// Rehash drops them.
func TestTuneInference(t *testing.T) {
	d, din, n, epochs, testN := 300, 64, 6000, 2, 2000
	sparsities := []float64{0.02, 0.1, 0.2, 0.5}
	if raceEnabled || testing.Short() {
		n, testN, sparsities = 3000, 1000, []float64{0.1}
	}
	s := newSynth(d, din, 3)
	tr := newRNG(2, 2, 2)
	tx := make([]float32, testN*din)
	tl := make([][]int32, testN)
	s.fill(&tr, testN, tx, tl)
	for _, sp := range sparsities {
		t.Run(fmt.Sprint(sp), func(t *testing.T) {
			cfg := Config{Dim: d, InputDim: din, LearningRate: 0.005, Seed: 9, Sparsity: sp}
			l, x, labels := trainedSynth(t, cfg, s, n, epochs)
			l.Rehash()
			dense0, sparse0 := p1(l, tx, tl)
			cal := 1024
			res, err := l.TuneInference(x[:cal*din], cal, nil, InferTuneOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dense, sparse := p1(l, tx, tl)
			t.Logf("s %.2f: training tables %+v agree %.3f, test P@1 sparse %.3f dense %.3f; tuned %+v agree %.3f after %d tries (%d bytes), test P@1 sparse %.3f dense %.3f",
				sp, l.Params(), res.TrainingAgreement, sparse0, dense0, res.Params, res.Agreement, res.Tried, res.Bytes, sparse, dense)
			if dense != dense0 {
				t.Errorf("dense P@1 changed: %.4f, was %.4f", dense, dense0)
			}
			if !res.Met || res.Agreement < 0.99 || res.Inputs != cal {
				t.Fatalf("not met: %+v", res)
			}
			if res.TrainingAgreement < 0.99 && (!res.Separate || res.Bytes == 0 || l.TablesBytes() != l.Tables().Bytes()+res.Bytes) {
				t.Errorf("tables kept apart %v, %d bytes; TablesBytes %d", res.Separate, res.Bytes, l.TablesBytes())
			}
			if math.Abs(sparse-dense) > 0.02 {
				t.Errorf("test P@1: sparse %.4f, dense %.4f", sparse, dense)
			}
			if !res.Separate {
				return
			}
			// Training on: the next prediction re-inserts the rows trained.
			trainEpoch(t, l, x, labels, din)
			dense, sparse = p1(l, tx, tl)
			for r := 0; r < d; r++ {
				if l.infer.at[r] != l.steps[r] {
					t.Fatalf("row %d: hashed at step %d, trained to %d", r, l.infer.at[r], l.steps[r])
				}
			}
			if math.Abs(sparse-dense) > 0.03 {
				t.Errorf("test P@1 after an epoch more: sparse %.4f, dense %.4f", sparse, dense)
			}
			l.Rehash()
			if l.infer != nil || l.TablesBytes() != l.Tables().Bytes() {
				t.Errorf("Rehash kept the inference tables")
			}
		})
	}
}

// TestTuneInferenceKeepsGoodTables: tables that agree already are kept,
// and a layer without tables has nothing to tune.
func TestTuneInferenceKeepsGoodTables(t *testing.T) {
	d, din := 200, 32
	s := newSynth(d, din, 4)
	cfg := Config{Dim: d, InputDim: din, LearningRate: 0.005, Seed: 3, Sparsity: 0.3, K: 1, L: 8}
	l, x, _ := trainedSynth(t, cfg, s, 1280, 1)
	res, err := l.TuneInference(x[:256*din], 256, nil, InferTuneOptions{Agreement: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Separate || res.Tried != 1 || res.Params != l.Params() || !res.Met {
		t.Errorf("good training tables: %+v", res)
	}
	dense := newTestLayer(t, Config{Dim: d, InputDim: din, Sparsity: 1})
	if res, err := dense.TuneInference(x[:din], 1, nil, InferTuneOptions{}); err != nil || res != (InferTune{}) {
		t.Errorf("dense layer: %+v, %v", res, err)
	}
}

func TestTuneInferenceErrors(t *testing.T) {
	din := 16
	l := newTestLayer(t, Config{Dim: 50, InputDim: din, Sparsity: 0.1})
	x := make([]float32, 4*din)
	for _, c := range []struct {
		x []float32
		n int
		o InferTuneOptions
	}{
		{x, 3, InferTuneOptions{}},
		{x, 0, InferTuneOptions{}},
		{x, 4, InferTuneOptions{Agreement: 1.5}},
		{x, 4, InferTuneOptions{MaxL: -1, MaxBytes: -1, MaxTries: -2}},
	} {
		if _, err := l.TuneInference(c.x, c.n, nil, c.o); !errors.Is(err, ErrBadConfig) {
			t.Errorf("n %d, %+v: %v, want ErrBadConfig", c.n, c.o, err)
		}
	}
}

// TestSketchesEqualOneBitTables: the signature scan finds the same
// candidates with the same counts as L tables of one bit holding every
// row (R = d), so the selection over them is the same.
func TestSketchesEqualOneBitTables(t *testing.T) {
	d, L := 97, 130 // L not a multiple of 64
	r := newRNG(5, 5, 5)
	tabs, err := NewTables(d, 1, L, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	sk := newSketches(d, L, 1)
	codes := make([]uint32, L)
	for id := int32(0); id < int32(d); id++ {
		for i := range codes {
			codes[i] = uint32(r.Next() >> 63)
		}
		tabs.Insert(id, codes)
		sk.set(id, codes)
	}
	a, b := newSelector(d, L), newSelector(d, L)
	for trial := 0; trial < 50; trial++ {
		for i := range codes {
			codes[i] = uint32(r.Next() >> 63)
		}
		target := 1 + trial%d
		for _, sel := range []Selection{SelectByCount, SelectRandom} {
			r1, r2 := newRNG(9, 9, uint64(trial)), newRNG(9, 9, uint64(trial))
			want, _, _ := a.selectActive(tabs, query{codes: codes, target: target, sel: sel}, &r1, nil, nil)
			wantCand := slices.Clone(a.cand)
			got := b.selectSketch(sk, sk.query(0, codes), target, sel, &r2, nil)
			slices.Sort(wantCand)
			gotCand := slices.Sorted(slices.Values(b.cand))
			if !slices.Equal(gotCand, wantCand) {
				t.Fatalf("trial %d: candidates %v, tables give %v", trial, gotCand, wantCand)
			}
			for _, id := range wantCand {
				if a.count[id] != b.count[id] {
					t.Fatalf("trial %d: row %d counted %d, tables %d", trial, id, b.count[id], a.count[id])
				}
			}
			if sel == SelectByCount {
				slices.Sort(want)
				slices.Sort(got)
			}
			if len(got) != len(want) || sel == SelectByCount && !equalByCount(a, got, want) {
				t.Fatalf("trial %d %v: selected %v, tables select %v", trial, sel, got, want)
			}
		}
	}
}

// equalByCount reports whether two selections by count agree on the count
// of every member (ties may be broken differently).
func equalByCount(s *selector, got, want []int32) bool {
	cg, cw := make([]int, 0, len(got)), make([]int, 0, len(want))
	for i := range got {
		cg = append(cg, int(s.count[got[i]]))
		cw = append(cw, int(s.count[want[i]]))
	}
	slices.Sort(cg)
	slices.Sort(cw)
	return slices.Equal(cg, cw)
}

// TestHadamardFamily: the structured projections are deterministic, give
// codes in range, and collide more often for vectors at a smaller angle.
func TestHadamardFamily(t *testing.T) {
	const dim, L = 100, 1000
	h, err := newHadamard(dim, 1, L, 7)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := newHadamard(dim, 1, L, 7)
	r := newRNG(1, 2, 3)
	v := randVec(&r, dim)
	c1, c2 := make([]uint32, L), make([]uint32, L)
	h.Hash(v, c1)
	h2.Hash(v, c2)
	if !slices.Equal(c1, c2) {
		t.Fatal("not deterministic")
	}
	prev := 1.1
	for _, eps := range []float64{0.1, 0.5, 1, 3} {
		rate := collisionRate(h, v, perturb(&r, v, eps))
		t.Logf("eps %.1f: collision rate %.3f", eps, rate)
		if rate >= prev {
			t.Errorf("eps %.1f: collision rate %.3f not below %.3f", eps, rate, prev)
		}
		prev = rate
	}
	h3, err := newHadamard(dim, 3, 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	c3 := make([]uint32, 5)
	h3.Hash(v, c3)
	for _, c := range c3 {
		if c >= 8 {
			t.Fatalf("code %d has more than 3 bits", c)
		}
	}
	if _, err := newHadamard(0, 1, 1, 1); !errors.Is(err, ErrBadConfig) {
		t.Errorf("dim 0: %v", err)
	}
	a := []float32{1, 2, 3, 4}
	fwht(a)
	if !slices.Equal(a, []float32{10, -2, -4, 0}) {
		t.Errorf("fwht: %v", a)
	}
}

// TestTuneInferenceTriesLastShapeFirst: the shape chosen last is measured
// first and kept when it agrees enough; here one of several-bit tables.
func TestTuneInferenceTriesLastShapeFirst(t *testing.T) {
	d, din := 300, 64
	s := newSynth(d, din, 3)
	cfg := Config{Dim: d, InputDim: din, LearningRate: 0.005, Seed: 9, Sparsity: 0.2}
	l, x, _ := trainedSynth(t, cfg, s, 3000, 1)
	l.lastInfer = Params{K: 2, L: 1024, R: 150}
	res, err := l.TuneInference(x[:512*din], 512, nil, InferTuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Params != l.lastInfer || res.Tried != 2 || !res.Met || !res.Separate || l.infer.tables == nil {
		t.Fatalf("%+v", res)
	}
	if res.Bytes != l.infer.tables.Bytes() {
		t.Errorf("bytes %d, tables hold %d", res.Bytes, l.infer.tables.Bytes())
	}
}

// TestTuneInferenceKeepsPreciseTables: with labels, training tables whose
// P@1 on the calibration inputs is no worse than dense inference's are
// kept even when they disagree with it (here the labels are their own
// predictions); with the dense predictions as labels they are not.
func TestTuneInferenceKeepsPreciseTables(t *testing.T) {
	d, din, cal := 300, 64, 512
	s := newSynth(d, din, 3)
	cfg := Config{Dim: d, InputDim: din, LearningRate: 0.005, Seed: 9, Sparsity: 0.1}
	l, x, _ := trainedSynth(t, cfg, s, 3000, 1)
	x = x[:cal*din]
	own, dense := make([]int32, cal), make([]int32, cal)
	l.PredictSparse(x, cal, 1, own)
	l.PredictDense(x, cal, 1, dense)
	asLabels := func(p []int32) [][]int32 {
		out := make([][]int32, len(p))
		for i, id := range p {
			out[i] = []int32{id}
		}
		return out
	}
	res, err := l.TuneInference(x, cal, asLabels(own), InferTuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Separate || res.Tried != 1 || !res.Met || res.TrainingP1 != 1 || res.P1 != 1 || res.DenseP1 != res.TrainingAgreement {
		t.Fatalf("own predictions as labels: %+v", res)
	}
	res, err = l.TuneInference(x, cal, asLabels(dense), InferTuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Separate || !res.Met || res.DenseP1 != 1 || res.P1 != res.Agreement || res.TrainingP1 >= 0.9 {
		t.Fatalf("dense predictions as labels: %+v", res)
	}
	if _, err := l.TuneInference(x, cal, asLabels(own[:3]), InferTuneOptions{}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("3 label sets for %d inputs: %v", cal, err)
	}
}

// TestMorePrecise: the paired difference must reach two standard errors.
func TestMorePrecise(t *testing.T) {
	const n = 1024
	labels := make([][]int32, n)
	for i := range labels {
		labels[i] = []int32{1}
	}
	for _, c := range []struct {
		onlyA, onlyB int // inputs only a, only b gets right
		want         bool
	}{
		{0, 0, false},
		{4, 0, true},   // 4 >= 2*sqrt(4)
		{3, 0, false},  // 3 < 2*sqrt(3)
		{60, 40, true}, // 20 >= 2*sqrt(100)
		{59, 40, false},
		{40, 60, false},
	} {
		a, b := make([]int32, n), make([]int32, n)
		for i := range a {
			switch {
			case i < c.onlyA:
				a[i], b[i] = 1, 0
			case i < c.onlyA+c.onlyB:
				a[i], b[i] = 0, 1
			default:
				a[i], b[i] = 1, 1
			}
		}
		if got := morePrecise(a, b, labels); got != c.want {
			t.Errorf("only a %d, only b %d: %v, want %v", c.onlyA, c.onlyB, got, c.want)
		}
	}
}
