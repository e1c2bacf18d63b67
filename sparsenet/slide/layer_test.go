package slide

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// refLoss is the plain dense reference: the mean over samples with labels of
// the softmax cross-entropy against the uniform distribution on the
// sample's distinct labels, in float64.
func refLoss(w, b, x []float64, d, din int, labels [][]int32) float64 {
	var loss float64
	neff := 0
	z := make([]float64, d)
	for i, labs := range labels {
		if len(labs) == 0 {
			continue
		}
		neff++
		xi := x[i*din : (i+1)*din]
		mx := math.Inf(-1)
		for j := 0; j < d; j++ {
			s := b[j]
			for k := 0; k < din; k++ {
				s += w[j*din+k] * xi[k]
			}
			z[j] = s
			mx = math.Max(mx, s)
		}
		var sum float64
		for j := 0; j < d; j++ {
			sum += math.Exp(z[j] - mx)
		}
		u := uniq(labs)
		for _, l := range u {
			loss -= (z[l] - mx - math.Log(sum)) / float64(len(u))
		}
	}
	return loss / float64(neff)
}

func uniq(labs []int32) []int32 {
	var u []int32
	for _, l := range labs {
		if !slices.Contains(u, l) {
			u = append(u, l)
		}
	}
	return u
}

// refGrad returns the analytic gradients of refLoss.
func refGrad(w, b, x []float64, d, din int, labels [][]int32) (gw, gb, gx []float64) {
	gw, gb, gx = make([]float64, d*din), make([]float64, d), make([]float64, len(x))
	neff := 0
	for _, labs := range labels {
		if len(labs) > 0 {
			neff++
		}
	}
	z := make([]float64, d)
	for i, labs := range labels {
		if len(labs) == 0 {
			continue
		}
		xi := x[i*din : (i+1)*din]
		mx := math.Inf(-1)
		for j := 0; j < d; j++ {
			s := b[j]
			for k := 0; k < din; k++ {
				s += w[j*din+k] * xi[k]
			}
			z[j] = s
			mx = math.Max(mx, s)
		}
		var sum float64
		for j := 0; j < d; j++ {
			z[j] = math.Exp(z[j] - mx)
			sum += z[j]
		}
		u := uniq(labs)
		for j := 0; j < d; j++ {
			delta := z[j] / sum
			if slices.Contains(u, int32(j)) {
				delta -= 1 / float64(len(u))
			}
			delta /= float64(neff)
			gb[j] += delta
			for k := 0; k < din; k++ {
				gw[j*din+k] += delta * xi[k]
				gx[i*din+k] += delta * w[j*din+k]
			}
		}
	}
	return gw, gb, gx
}

func to64(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// phase1 runs the sparse forward/backward of a batch without applying it
// and returns the loss and the dense gradients summed over the workers.
func (l *Layer) phase1(x []float32, n int, labels [][]int32, dx []float32) (float64, []float32, []float32) {
	neff := 0
	for _, ls := range labels {
		if len(ls) > 0 {
			neff++
		}
	}
	scale := float32(1 / float64(neff))
	l.hashInputs(x, n)
	l.pool.run(func(q int) { l.forwardBackward(q, x, n, labels, dx, scale) })
	gw, gb := make([]float32, l.d*l.din), make([]float32, l.d)
	var loss float64
	for _, w := range l.ws {
		loss += w.loss
	}
	l.pool.run(func(q int) {
		l.ownedGradients(q, x, func(row int32, g []float32, b float32) {
			copy(gw[int(row)*l.din:], g)
			gb[row] = b
		})
	})
	return loss / float64(neff), gw, gb
}

func maxRelErr(got []float32, want []float64) float64 {
	var scale, err float64
	for i := range want {
		scale = math.Max(scale, math.Abs(want[i]))
		err = math.Max(err, math.Abs(float64(got[i])-want[i]))
	}
	return err / math.Max(scale, 1e-12)
}

// tinyBatch is a batch over d = 6 labels with multi-label, repeated-label
// and unlabelled samples.
func tinyBatch(din int) ([]float32, [][]int32) {
	labels := [][]int32{{2}, {0, 5}, {}, {3, 3, 1}, {4}}
	r := newRNG(8, 8, 8)
	x := make([]float32, len(labels)*din)
	for i := range x {
		x[i] = float32(r.normal())
	}
	return x, labels
}

// newTestLayer builds a layer and makes its weights and biases larger than
// the default initialisation, so that the softmax is far from uniform.
func newTestLayer(t testing.TB, cfg Config) *Layer {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r := newRNG(cfg.Seed, 99, 0)
	for i := range l.w {
		l.w[i] = float32(0.5 * r.normal())
	}
	for i := range l.b {
		l.b[i] = float32(0.3 * r.normal())
	}
	if l.tables != nil {
		l.Rehash()
	}
	return l
}

// TestGradientAllActive: with the active set = all neurons, the sparse path
// is the dense softmax; its loss and gradients match the float64 reference
// and central finite differences of it.
func TestGradientAllActive(t *testing.T) {
	const d, din = 6, 4
	for _, threads := range []int{1, 3} {
		l := newTestLayer(t, Config{Dim: d, InputDim: din, Sparsity: 0.99, Threads: threads, Seed: 5})
		if got := int(math.Round(l.cfg.Sparsity * d)); got != d {
			t.Fatalf("target %d, want all %d", got, d)
		}
		x, labels := tinyBatch(din)
		n := len(labels)
		dx := make([]float32, n*din)
		loss, gw, gb := l.phase1(x, n, labels, dx)
		w64, b64, x64 := to64(l.w), to64(l.b), to64(x)
		want := refLoss(w64, b64, x64, d, din, labels)
		if math.Abs(loss-want) > 1e-5*math.Abs(want) {
			t.Fatalf("threads %d: loss %v, reference %v", threads, loss, want)
		}
		rw, rb, rx := refGrad(w64, b64, x64, d, din, labels)
		for _, c := range []struct {
			name string
			got  []float32
			want []float64
		}{{"W", gw, rw}, {"b", gb, rb}, {"x", dx, rx}} {
			if e := maxRelErr(c.got, c.want); e > 1e-5 {
				t.Fatalf("threads %d: d%s differs from the reference by %g", threads, c.name, e)
			}
		}
		// Finite differences of the reference loss.
		const h = 1e-5
		numeric := func(p []float64) []float64 {
			g := make([]float64, len(p))
			for i := range p {
				old := p[i]
				p[i] = old + h
				up := refLoss(w64, b64, x64, d, din, labels)
				p[i] = old - h
				down := refLoss(w64, b64, x64, d, din, labels)
				p[i] = old
				g[i] = (up - down) / (2 * h)
			}
			return g
		}
		for _, c := range []struct {
			name string
			got  []float32
			p    []float64
		}{{"W", gw, w64}, {"b", gb, b64}, {"x", dx, x64}} {
			if e := maxRelErr(c.got, numeric(c.p)); e > 1e-4 {
				t.Fatalf("threads %d: d%s differs from finite differences by %g", threads, c.name, e)
			}
		}
	}
}

// refAdam applies the reference per-row Adam step to every row with a
// non-zero step count change.
func refAdam(w, m, v []float64, g []float64, t int, c Config) {
	lrT := float64(c.LearningRate) * math.Sqrt(1-math.Pow(float64(c.Beta2), float64(t))) / (1 - math.Pow(float64(c.Beta1), float64(t)))
	for i := range w {
		m[i] = float64(c.Beta1)*m[i] + (1-float64(c.Beta1))*g[i]
		v[i] = float64(c.Beta2)*v[i] + (1-float64(c.Beta2))*g[i]*g[i]
		w[i] -= lrT * m[i] / (math.Sqrt(v[i]) + float64(c.Epsilon))
	}
}

// TestTrainMatchesReference trains a few steps with all neurons active,
// sparsely and densely, and follows along with the reference gradient and
// a per-row Adam loop in float64.
func TestTrainMatchesReference(t *testing.T) {
	const d, din = 6, 4
	for _, sp := range []float64{0.99, 1} {
		l := newTestLayer(t, Config{Dim: d, InputDim: din, Sparsity: sp, Threads: 2, Seed: 3, LearningRate: 0.05})
		x, labels := tinyBatch(din)
		n := len(labels)
		w, b := to64(l.w), to64(l.b)
		mw, vw := make([]float64, d*din), make([]float64, d*din)
		mb, vb := make([]float64, d), make([]float64, d)
		dx := make([]float32, n*din)
		for step := 1; step <= 5; step++ {
			wantLoss := refLoss(w, b, to64(x), d, din, labels)
			gw, gb, gx := refGrad(w, b, to64(x), d, din, labels)
			loss, err := l.TrainBatch(x, n, labels, dx)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(loss-wantLoss) > 1e-4*wantLoss {
				t.Fatalf("sparsity %v step %d: loss %v, want %v", sp, step, loss, wantLoss)
			}
			if e := maxRelErr(dx, gx); e > 1e-4 {
				t.Fatalf("sparsity %v step %d: dx off by %g", sp, step, e)
			}
			refAdam(w, mw, vw, gw, step, l.cfg)
			refAdam(b, mb, vb, gb, step, l.cfg)
			if e := maxRelErr(l.w, w); e > 1e-4 {
				t.Fatalf("sparsity %v step %d: W off by %g", sp, step, e)
			}
			if e := maxRelErr(l.b, b); e > 1e-4 {
				t.Fatalf("sparsity %v step %d: b off by %g", sp, step, e)
			}
			for r := 0; r < d; r++ {
				if l.Steps(r) != step {
					t.Fatalf("row %d has %d steps after %d batches", r, l.Steps(r), step)
				}
			}
		}
	}
}

// TestLazyAdam: rows outside every active set keep their weights, moments
// and step counts; active rows advance by one step per batch.
func TestLazyAdam(t *testing.T) {
	const d, din = 400, 8
	l := newTestLayer(t, Config{Dim: d, InputDim: din, Sparsity: 0.02, Threads: 2, Seed: 4})
	r := newRNG(1, 2, 3)
	x := make([]float32, 3*din)
	for i := range x {
		x[i] = float32(r.normal())
	}
	labels := [][]int32{{1}, {2, 3}, {1}}
	w0 := slices.Clone(l.w)
	if _, err := l.TrainBatch(x, 3, labels, nil); err != nil {
		t.Fatal(err)
	}
	touched := 0
	for row := 0; row < d; row++ {
		same := slices.Equal(w0[row*din:(row+1)*din], l.w[row*din:(row+1)*din])
		switch l.Steps(row) {
		case 0:
			if !same || l.mb[row] != 0 || l.vb[row] != 0 || l.st[row*(2*din+1)+2*din] != 0 {
				t.Fatalf("inactive row %d changed", row)
			}
		case 1:
			touched++
			if same {
				t.Fatalf("active row %d unchanged", row)
			}
		default:
			t.Fatalf("row %d: %d steps after one batch", row, l.Steps(row))
		}
	}
	for _, lab := range []int{1, 2, 3} {
		if l.Steps(lab) != 1 {
			t.Fatalf("label %d not updated", lab)
		}
	}
	// 3 samples x 8 active, overlapping: between 8 and 24 rows.
	if touched < 8 || touched > 24 {
		t.Fatalf("%d rows touched", touched)
	}
}

func TestTrainBatchErrors(t *testing.T) {
	l := newTestLayer(t, Config{Dim: 10, InputDim: 2, Sparsity: 0.5, Threads: 1})
	w0 := slices.Clone(l.w)
	x := []float32{1, 2, 3, 4}
	if _, err := l.TrainBatch(x, 2, [][]int32{{1}, {10}}, nil); !errors.Is(err, ErrBadLabel) {
		t.Fatalf("label 10: %v", err)
	}
	if _, err := l.TrainBatch(x, 2, [][]int32{{-1}, {1}}, nil); !errors.Is(err, ErrBadLabel) {
		t.Fatalf("label -1: %v", err)
	}
	if !slices.Equal(w0, l.w) {
		t.Fatal("a rejected batch changed the weights")
	}
	dx := []float32{9, 9, 9, 9}
	if loss, err := l.TrainBatch(x, 2, [][]int32{{}, {}}, dx); err != nil || loss != 0 || slices.ContainsFunc(dx, func(v float32) bool { return v != 0 }) {
		t.Fatalf("unlabelled batch: loss %v err %v dx %v", loss, err, dx)
	}
	l.Close()
	l.Close()
	if _, err := l.TrainBatch(x, 2, [][]int32{{1}, {1}}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Dim: 0, InputDim: -1, Sparsity: 2, Family: Kind(9), DWTABinSize: 3, Threads: -1,
		Schedule: Schedule{RehashGrowth: 0.5}}
	c.EnsureDefaults()
	err := c.Validate()
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("%v", err)
	}
	for _, want := range []string{"Dim", "InputDim", "Sparsity", "Family", "DWTABinSize", "Threads", "RehashGrowth"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if _, err := New(Config{Dim: 5}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("New without InputDim: %v", err)
	}
}

// TestHogwildDeterministic trains with several goroutines, label insertion
// and maintenance (run it with -race): two runs with the same config give
// the same weights, and so does another thread count (active sets depend on
// the sample, not the goroutine, and row gradients are summed in sample
// order).
func TestHogwildDeterministic(t *testing.T) {
	defer goleak.VerifyNone(t)
	run := func(threads int) *Layer {
		l, err := New(Config{Dim: 500, InputDim: 16, Sparsity: 0.05, Threads: threads, Seed: 7,
			InsertLabels: true, Schedule: Schedule{RehashBase: 2, RehashMax: 4, RedrawPeriod: 6, SliceNeurons: 128}})
		if err != nil {
			t.Fatal(err)
		}
		r := newRNG(3, 2, 1)
		const n = 32
		x := make([]float32, n*16)
		labels := make([][]int32, n)
		dx := make([]float32, n*16)
		var swaps, rehashed, built, moved int
		for b := 0; b < 12; b++ {
			for i := range x {
				x[i] = float32(r.normal())
			}
			for i := range labels {
				labels[i] = []int32{int32(r.IntN(500)), int32(r.IntN(20))}
			}
			if _, err := l.TrainBatch(x, n, labels, dx); err != nil {
				t.Fatal(err)
			}
			for _, w := range l.ws {
				moved += len(w.moves)
			}
			ms := l.Maintain()
			if ms.Swapped {
				swaps++
			}
			rehashed += ms.Rehashed
			built += ms.Built
			checkTables(t, l.tables)
		}
		if swaps != 1 || rehashed == 0 || built != 500 || moved == 0 {
			t.Fatalf("threads %d: %d swaps, %d rehashed, %d built, %d labels moved", threads, swaps, rehashed, built, moved)
		}
		t.Logf("threads %d: %d swaps, %d rehashed, %d built, %d labels moved", threads, swaps, rehashed, built, moved)
		return l
	}
	a, b, c := run(4), run(4), run(1)
	defer a.Close()
	defer b.Close()
	defer c.Close()
	if !slices.Equal(a.w, b.w) || !slices.Equal(a.b, b.b) || !slices.Equal(a.steps, b.steps) {
		t.Fatal("same config and threads, different results")
	}
	if !slices.Equal(a.steps, c.steps) {
		t.Fatal("1 and 4 threads touched different rows")
	}
	if !slices.Equal(a.w, c.w) || !slices.Equal(a.b, c.b) || !slices.Equal(a.tables.ids, c.tables.ids) {
		t.Fatalf("1 and 4 threads: weights or tables differ (by up to %g)", maxRelErr(c.w, to64(a.w)))
	}
}

func TestLayerNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t)
	l, err := New(Config{Dim: 50, InputDim: 4, Sparsity: 0.1, Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}
