package dslide

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/xdlgo/xps/sparsenet/slide"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEven(t *testing.T) {
	for _, c := range []struct {
		total, owners int
		want          []int
	}{
		{10, 3, []int{0, 4, 7, 10}},
		{3, 3, []int{0, 1, 2, 3}},
		{8, 1, []int{0, 8}},
		{670091, 4, []int{0, 167523, 335046, 502569, 670091}},
	} {
		p, err := Even(c.total, c.owners)
		if err != nil || !slices.Equal(p.Bounds, c.want) {
			t.Errorf("Even(%d, %d) = %v, %v; want %v", c.total, c.owners, p.Bounds, err, c.want)
		}
	}
	for _, c := range [][2]int{{2, 3}, {5, 0}, {0, 1}} {
		if _, err := Even(c[0], c[1]); err == nil {
			t.Errorf("Even(%d, %d) succeeded", c[0], c[1])
		}
	}
}

func closeTo(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

func randBatch(rng *rand.Rand, n, din, d int) ([]float32, [][]int32) {
	x := make([]float32, n*din)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	labels := make([][]int32, n)
	for i := 1; i < n; i++ { // sample 0 has none
		for range 1 + i%3 {
			labels[i] = append(labels[i], int32(rng.IntN(d)))
		}
	}
	return x, labels
}

// TestEqualsOneDenseLayer: 1, 2 and 4 owners at Sparsity 1 train as one
// dense layer of their total rows (loss and dx per step, to float
// rounding), and their merged dense predictions are that layer's.
func TestEqualsOneDenseLayer(t *testing.T) {
	const d, din, n, k, steps = 37, 6, 12, 5, 5
	base := slide.Config{Dim: d, InputDim: din, Sparsity: 1, Threads: 2, Seed: 11, LearningRate: 0.02}
	for _, W := range []int{1, 2, 4} {
		one, err := slide.New(base)
		if err != nil {
			t.Fatal(err)
		}
		dl, err := New(base, W)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(W), 2))
		for step := 0; step < steps; step++ {
			x, labels := randBatch(rng, n, din, d)
			want, got := make([]float32, n*din), make([]float32, n*din)
			wl, err := one.TrainBatch(x, n, labels, want)
			if err != nil {
				t.Fatal(err)
			}
			gl, err := dl.TrainBatch(x, n, labels, got)
			if err != nil {
				t.Fatal(err)
			}
			if !closeTo(gl, wl, 1e-5) {
				t.Fatalf("%d owners, step %d: loss %v, one layer %v", W, step, gl, wl)
			}
			for i := range got {
				if !closeTo(float64(got[i]), float64(want[i]), 1e-5) {
					t.Fatalf("%d owners, step %d: dx[%d] = %v, one layer %v", W, step, i, got[i], want[i])
				}
			}
		}
		x, _ := randBatch(rng, n, din, d)
		want, got := make([]int32, n*k), make([]int32, n*k)
		one.PredictDense(x, n, k, want)
		dl.PredictDense(x, n, k, got)
		if !slices.Equal(got, want) {
			t.Fatalf("%d owners predict %v, one layer %v", W, got, want)
		}
		one.Close()
		dl.Close()
	}
}

// TestMergeTop: the owners' lists merge by score, ties to the lower row
// of the whole layer, and a sample with fewer than k candidates in all
// ends in -1s.
func TestMergeTop(t *testing.T) {
	p := Partition{Bounds: []int{0, 3, 6}}
	const n, k = 2, 3
	// owner-major, then sample, then rank; rows local to the owner
	ids := []int32{
		2, 0, -1 /* owner 0, sample 0 */, 1, -1, -1, /* owner 0, sample 1 */
		1, 0, 2 /* owner 1, sample 0 */, -1, -1, -1, /* owner 1, sample 1 */
	}
	sc := []float32{
		5, 3, 0, 7, 0, 0,
		5, 4, 1, 0, 0, 0,
	}
	for i := range ids {
		if ids[i] < 0 {
			sc[i] = float32(math.Inf(-1))
		}
	}
	row, pos := make([]int32, k), make([]int, 2)
	mergeTop(p, ids, sc, n, k, 0, row, pos)
	if want := []int32{2, 4, 3}; !slices.Equal(row, want) { // 5 (row 2) before 5 (row 4), then 4 (row 3)
		t.Errorf("sample 0: %v, want %v", row, want)
	}
	for j := range row {
		row[j] = -1
	}
	mergeTop(p, ids, sc, n, k, 1, row, pos)
	if want := []int32{1, -1, -1}; !slices.Equal(row, want) {
		t.Errorf("sample 1: %v, want %v", row, want)
	}
}

// TestBadLabel: a label past the whole layer is refused before any owner
// moves.
func TestBadLabel(t *testing.T) {
	dl, err := New(slide.Config{Dim: 10, InputDim: 4, Sparsity: 1, Threads: 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	_, err = dl.TrainBatch(make([]float32, 8), 2, [][]int32{{1}, {10}}, nil)
	if !errors.Is(err, slide.ErrBadLabel) {
		t.Fatalf("label 10 of 10 rows: %v", err)
	}
	if dl.Owner(0).Steps(1) != 0 {
		t.Fatal("an owner trained on a refused batch")
	}
}

// TestStepBytes counts a step by hand: 2 owners, 3 samples, 4 labels,
// din 5, 10 rows (5 each).
func TestStepBytes(t *testing.T) {
	p, _ := Even(10, 2)
	in := int64(3*5*4 + 4*4 + 3*4) // x, labels, counts
	if got, want := StepBytes(p, 0, 3, 5, 4), in+3*24+3*16+3*5*4; got != want {
		t.Errorf("StepBytes = %d, want %d", got, want)
	}
	if got, want := DenseStepBytes(p, 0, 3, 5, 4), in+3*5*4+3*5*4; got != want {
		t.Errorf("DenseStepBytes = %d, want %d", got, want)
	}
	if StepBytes(Partition{Bounds: []int{0, 10}}, 0, 3, 5, 4) != 0 {
		t.Error("one owner sends bytes")
	}
}

// TestSaveLoad: a layer of 2 owners saved and loaded into a fresh one
// predicts as the original; a layer of 3 owners refuses it, and so does
// a save cut short.
func TestSaveLoad(t *testing.T) {
	const d, din, n, k = 40, 8, 10, 4
	base := slide.Config{Dim: d, InputDim: din, Sparsity: 0.3, Threads: 2, Seed: 5, LearningRate: 0.02}
	a, err := New(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	for range 3 {
		x, labels := randBatch(rng, n, din, d)
		if _, err := a.TrainBatch(x, n, labels, nil); err != nil {
			t.Fatal(err)
		}
		a.Maintain()
	}
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	saved := buf.Bytes()
	b, err := New(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Load(bytes.NewReader(saved)); err != nil {
		t.Fatal(err)
	}
	// The weights are the saved ones (the tables are rebuilt from them,
	// so sparse predictions may differ from the original's, whose tables
	// grew batch by batch).
	x, _ := randBatch(rng, n, din, d)
	pa, pb := make([]int32, n*k), make([]int32, n*k)
	a.PredictDense(x, n, k, pa)
	b.PredictDense(x, n, k, pb)
	if !slices.Equal(pa, pb) {
		t.Fatalf("loaded layer predicts %v, the saved one %v", pb, pa)
	}
	c, err := New(base, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Load(bytes.NewReader(saved)); !errors.Is(err, slide.ErrBadSave) {
		t.Fatalf("3 owners loading 2 owners' save: %v", err)
	}
	if err := b.Load(bytes.NewReader(saved[:len(saved)-9])); !errors.Is(err, slide.ErrBadSave) {
		t.Fatalf("a save cut short: %v", err)
	}
}

// TestTuneInference: every owner calibrates on its own rows (with the
// labels among them, renumbered, when labels are given); without labels
// the merged sparse top-1 then agrees with the merged dense top-1 at least
// as often as the reported bound.
func TestTuneInference(t *testing.T) {
	const d, din, n = 120, 16, 400
	base := slide.Config{Dim: d, InputDim: din, Sparsity: 0.1, Threads: 2, Seed: 5, LearningRate: 0.02}
	dl, err := New(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	for step := 0; step < 20; step++ {
		x, labels := randBatch(rng, 64, din, d)
		if _, err := dl.TrainBatch(x, 64, labels, nil); err != nil {
			t.Fatal(err)
		}
	}
	x, labels := randBatch(rng, n, din, d)
	own := dl.ownLabels(1, labels)
	lo := int32(dl.Partition().Bounds[1])
	for i, ls := range labels {
		var want []int32
		for _, id := range ls {
			if id >= lo {
				want = append(want, id-lo)
			}
		}
		if !slices.Equal(own[i], want) {
			t.Fatalf("sample %d: owner 1's labels %v, want %v of %v", i, own[i], want, ls)
		}
	}
	res, err := dl.TuneInference(x, n, nil, slide.InferTuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp, de := make([]int32, n), make([]int32, n)
	dl.PredictSparse(x, n, 1, sp)
	dl.PredictDense(x, n, 1, de)
	same := 0
	for i := range sp {
		if sp[i] == de[i] {
			same++
		}
	}
	t.Logf("%+v; merged agreement %d/%d", res, same, n)
	if float64(same)/n < res.Agreement || res.Agreement < 0.9 || res.Inputs != n || !res.Met {
		t.Fatalf("merged agreement %d/%d, bound %+v", same, n, res)
	}
	if _, err := dl.TuneInference(x, n, labels, slide.InferTuneOptions{}); err != nil {
		t.Fatal(err)
	}
}
