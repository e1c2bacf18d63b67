package densenet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNewMLPErrors(t *testing.T) {
	tests := []struct {
		sizes []int
		ok    bool
	}{
		{nil, false},
		{[]int{3}, false},
		{[]int{3, 0, 1}, false},
		{[]int{3, -2, 1}, false},
		{[]int{0, 1}, false},
		{[]int{3, 2}, false},
		{[]int{3, 1}, true},
		{[]int{414, 200, 80, 1}, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.sizes), func(t *testing.T) {
			m, err := NewMLP(tt.sizes)
			if tt.ok != (err == nil) {
				t.Fatalf("NewMLP(%v) error = %v, want ok = %v", tt.sizes, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadSizes) {
				t.Fatalf("error %v is not ErrBadSizes", err)
			}
			if err == nil && !slices.Equal(m.Sizes, tt.sizes) {
				t.Fatalf("Sizes = %v", m.Sizes)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	m, err := NewMLP([]int{414, 200, 80, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.NumParams(), 414*200+200+200*80+80+80+1; got != want {
		t.Fatalf("NumParams = %d, want %d", got, want)
	}
	if m.InputWidth() != 414 || m.NumLayers() != 3 {
		t.Fatalf("InputWidth, NumLayers = %d, %d", m.InputWidth(), m.NumLayers())
	}
	p := make([]float32, m.NumParams())
	for i := range p {
		p[i] = float32(i)
	}
	// W_l then b_l, layer by layer.
	off := 0
	for l := 0; l < m.NumLayers(); l++ {
		w, b := m.LayerParams(p, l)
		if len(w) != m.Sizes[l]*m.Sizes[l+1] || len(b) != m.Sizes[l+1] || w[0] != float32(off) || b[0] != float32(off+len(w)) {
			t.Fatalf("layer %d: len(w)=%d len(b)=%d w[0]=%v b[0]=%v, want offset %d", l, len(w), len(b), w[0], b[0], off)
		}
		off += len(w) + len(b)
	}
}

func TestInit(t *testing.T) {
	m, _ := NewMLP([]int{50, 20, 1})
	p1, p2, p3 := make([]float32, m.NumParams()), make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(p1, 42)
	m.Init(p2, 42)
	m.Init(p3, 43)
	if !slices.Equal(p1, p2) {
		t.Fatal("Init is not deterministic")
	}
	if slices.Equal(p1, p3) {
		t.Fatal("Init ignores the seed")
	}
	for l := 0; l < m.NumLayers(); l++ {
		bound := float32(1 / math.Sqrt(float64(m.Sizes[l])))
		w, b := m.LayerParams(p1, l)
		var maxAbs float32
		for _, v := range append(slices.Clone(w), b...) {
			if v < -bound || v > bound {
				t.Fatalf("layer %d: %v outside ±%v", l, v, bound)
			}
			maxAbs = max(maxAbs, v, -v)
		}
		if maxAbs < bound/2 {
			t.Fatalf("layer %d: values only up to %v of ±%v", l, maxAbs, bound)
		}
	}
}

// refMLP is a float64 reference of the network, written with plain loops.
type refMLP struct {
	sizes   []int
	bin     []float64   // the input bias, nil without MLPOptions.InputBias
	outReLU bool        // MLPOptions.OutputReLU
	w, b    [][]float64 // w[l] is out x in row-major
}

func newRefMLP(m *MLP, params []float32) *refMLP {
	return refFromVector(m, f64(params))
}

// refFromVector returns the reference of m with the parameter vector p,
// whose slices it shares.
func refFromVector(m *MLP, p []float64) *refMLP {
	r := &refMLP{sizes: m.Sizes, outReLU: m.Options().OutputReLU}
	if m.Options().InputBias {
		r.bin = p[:m.Sizes[0]]
	}
	for l := 0; l < m.NumLayers(); l++ {
		in, out := m.Sizes[l], m.Sizes[l+1]
		r.w = append(r.w, p[m.wOff[l]:m.wOff[l]+in*out])
		r.b = append(r.b, p[m.bOff[l]:m.bOff[l]+out])
	}
	return r
}

func f64(s []float32) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = float64(v)
	}
	return d
}

// forward returns the activations of every layer; acts[0] is the first
// layer's input (x, or ReLU(x + bin)) and the last is the output.
func (r *refMLP) forward(x []float64, n int) [][]float64 {
	a0 := x
	if r.bin != nil {
		in := r.sizes[0]
		a0 = make([]float64, len(x))
		for s := 0; s < n; s++ {
			for i := 0; i < in; i++ {
				a0[s*in+i] = max(x[s*in+i]+r.bin[i], 0)
			}
		}
	}
	acts := [][]float64{a0}
	L := len(r.sizes) - 1
	for l := 0; l < L; l++ {
		in, out := r.sizes[l], r.sizes[l+1]
		a := acts[l]
		z := make([]float64, n*out)
		for s := 0; s < n; s++ {
			for o := 0; o < out; o++ {
				v := r.b[l][o]
				for i := 0; i < in; i++ {
					v += r.w[l][o*in+i] * a[s*in+i]
				}
				if l < L-1 || r.outReLU {
					v = max(v, 0)
				}
				z[s*out+o] = v
			}
		}
		acts = append(acts, z)
	}
	return acts
}

// loss is the mean binary cross-entropy, as SigmoidBCE computes it.
func refLoss(logits, labels []float64) float64 {
	var sum float64
	for i, z := range logits {
		sum += max(z, 0) - z*labels[i] + math.Log1p(math.Exp(-math.Abs(z)))
	}
	return sum / float64(len(logits))
}

// backward returns dLoss/db_in, dLoss/dW_l, dLoss/db_l (flattened as the
// parameter vector) and dLoss/dx for the given dLoss/dout.
func (r *refMLP) backward(acts [][]float64, n int, dout []float64) (grad, dx []float64) {
	L := len(r.sizes) - 1
	gw, gb := make([][]float64, L), make([][]float64, L)
	delta := slices.Clone(dout)
	if L > 0 && r.outReLU {
		for i, a := range acts[L] {
			if !(a > 0) {
				delta[i] = 0
			}
		}
	}
	for l := L - 1; l >= 0; l-- {
		in, out := r.sizes[l], r.sizes[l+1]
		a := acts[l]
		gw[l], gb[l] = make([]float64, out*in), make([]float64, out)
		da := make([]float64, n*in)
		for s := 0; s < n; s++ {
			for o := 0; o < out; o++ {
				d := delta[s*out+o]
				gb[l][o] += d
				for i := 0; i < in; i++ {
					gw[l][o*in+i] += d * a[s*in+i]
					da[s*in+i] += d * r.w[l][o*in+i]
				}
			}
		}
		if l > 0 {
			for i := range da {
				if !(a[i] > 0) {
					da[i] = 0
				}
			}
		}
		delta = da
	}
	if r.bin != nil { // through ReLU(x + bin)
		for i, a := range acts[0] {
			if !(a > 0) {
				delta[i] = 0
			}
		}
		in := r.sizes[0]
		gbin := make([]float64, in)
		for i, d := range delta {
			gbin[i%in] += d
		}
		grad = append(grad, gbin...)
	}
	for l := 0; l < L; l++ {
		grad = append(grad, gw[l]...)
		grad = append(grad, gb[l]...)
	}
	return grad, delta
}

// TestGradientsFiniteDifferences checks Backward on small networks against
// central differences of a float64 evaluation of the same loss.
func TestGradientsFiniteDifferences(t *testing.T) {
	tests := []struct {
		sizes []int
		n     int
	}{
		{[]int{1, 1}, 1},
		{[]int{6, 1}, 4},
		{[]int{7, 5, 3, 1}, 4},
		{[]int{9, 11, 1}, 5},
		{[]int{4, 8, 6, 5, 1}, 3},
	}
	for ti, tt := range tests {
		t.Run(fmt.Sprint(tt.sizes), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ti), 99))
			m, err := NewMLP(tt.sizes)
			if err != nil {
				t.Fatal(err)
			}
			params := make([]float32, m.NumParams())
			m.Init(params, uint64(ti))
			x := randSlice(rng, tt.n*m.InputWidth())
			labels := make([]float32, tt.n)
			for i := range labels {
				labels[i] = float32(rng.IntN(2))
			}

			ws := m.NewWorkspace(tt.n + 2)
			logits, probs, dl := make([]float32, tt.n), make([]float32, tt.n), make([]float32, tt.n)
			grad, dx := make([]float32, m.NumParams()), make([]float32, len(x))
			m.Forward(ws, params, x, tt.n, logits)
			SigmoidBCE(logits, labels, probs, dl)
			m.Backward(ws, params, x, tt.n, dl, grad, dx)

			p64, x64, y64 := f64(params), f64(x), f64(labels)
			lossAt := func(p, x []float64) float64 {
				acts := refFromVector(m, p).forward(x, tt.n)
				return refLoss(acts[len(acts)-1], y64)
			}
			const h = 1e-6
			central := func(v []float64, i int) float64 {
				old := v[i]
				v[i] = old + h
				up := lossAt(p64, x64)
				v[i] = old - h
				down := lossAt(p64, x64)
				v[i] = old
				return (up - down) / (2 * h)
			}
			check := func(what string, got []float32, v []float64) {
				for i := range v {
					want := central(v, i)
					if math.Abs(float64(got[i])-want) > 1e-5+1e-3*math.Abs(want) {
						t.Errorf("%s[%d] = %v, finite difference %v", what, i, got[i], want)
					}
				}
			}
			check("grad", grad, p64)
			check("dx", dx, x64)
		})
	}
}

// TestModelAgainstReference runs the XDL shape on a batch that crosses
// the GEMM blocks and compares Forward and Backward with the float64
// reference, and checks that the number of goroutines does not change a
// bit of the result.
func TestModelAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	m, err := NewMLP([]int{414, 200, 80, 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 37
	params := make([]float32, m.NumParams())
	m.Init(params, 7)
	x := randSlice(rng, n*m.InputWidth())
	dl := randSlice(rng, n)

	run := func(threads int) (logits, grad, dx []float32) {
		ws := m.NewWorkspace(64)
		ws.Threads = threads
		logits, grad, dx = make([]float32, n), make([]float32, m.NumParams()), make([]float32, len(x))
		for i := range grad {
			grad[i] = float32(math.NaN()) // must be overwritten
		}
		m.Forward(ws, params, x, n, logits)
		m.Backward(ws, params, x, n, dl, grad, dx)
		return logits, grad, dx
	}
	logits, grad, dx := run(1)

	r := newRefMLP(m, params)
	acts := r.forward(f64(x), n)
	wantGrad, wantDx := r.backward(acts, n, f64(dl))
	compare := func(what string, got []float32, want []float64) {
		var scale float64
		for _, v := range want {
			scale = max(scale, math.Abs(v))
		}
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-4*scale {
				t.Fatalf("%s[%d] = %v, want %v (scale %v)", what, i, got[i], want[i], scale)
			}
		}
	}
	compare("logits", logits, acts[len(acts)-1])
	compare("grad", grad, wantGrad)
	compare("dx", dx, wantDx)

	logits2, grad2, dx2 := run(2)
	if !slices.Equal(logits, logits2) || !slices.Equal(grad, grad2) || !slices.Equal(dx, dx2) {
		t.Fatal("results with 2 goroutines differ from 1")
	}
}

func TestBackwardNilDxAndEmptyBatch(t *testing.T) {
	m, _ := NewMLP([]int{5, 4, 1})
	params := make([]float32, m.NumParams())
	m.Init(params, 1)
	ws := m.NewWorkspace(8)
	x := make([]float32, 3*5)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	logits, dl := make([]float32, 3), []float32{0.1, -0.2, 0.3}
	g1, g2, dx := make([]float32, m.NumParams()), make([]float32, m.NumParams()), make([]float32, len(x))
	m.Forward(ws, params, x, 3, logits)
	m.Backward(ws, params, x, 3, dl, g1, dx)
	m.Backward(ws, params, x, 3, dl, g2, nil)
	if !slices.Equal(g1, g2) {
		t.Fatal("grad depends on whether dx is asked for")
	}

	m.Forward(ws, params, nil, 0, nil)
	m.Backward(ws, params, nil, 0, nil, g1, nil)
	for i, g := range g1 {
		if g != 0 {
			t.Fatalf("empty batch: grad[%d] = %v, want 0", i, g)
		}
	}
}

func TestMLPPanics(t *testing.T) {
	m, _ := NewMLP([]int{3, 2, 1})
	other, _ := NewMLP([]int{3, 2, 1})
	p := make([]float32, m.NumParams())
	g := make([]float32, m.NumParams())
	x := make([]float32, 2*3)
	tests := []struct {
		name string
		f    func()
	}{
		{"backward before forward", func() {
			m.Backward(m.NewWorkspace(2), p, x, 2, make([]float32, 2), g, nil)
		}},
		{"backward with another n", func() {
			ws := m.NewWorkspace(2)
			m.Forward(ws, p, x, 2, make([]float32, 2))
			m.Backward(ws, p, x[:3], 1, make([]float32, 1), g, nil)
		}},
		{"batch too large", func() { m.Forward(m.NewWorkspace(1), p, x, 2, make([]float32, 2)) }},
		{"foreign workspace", func() { m.Forward(other.NewWorkspace(2), p, x, 2, make([]float32, 2)) }},
		{"short params", func() { m.Forward(m.NewWorkspace(2), p[1:], x, 2, make([]float32, 2)) }},
		{"short x", func() { m.Forward(m.NewWorkspace(2), p, x[1:], 2, make([]float32, 2)) }},
		{"short logits", func() { m.Forward(m.NewWorkspace(2), p, x, 2, make([]float32, 1)) }},
		{"short dx", func() {
			ws := m.NewWorkspace(2)
			m.Forward(ws, p, x, 2, make([]float32, 2))
			m.Backward(ws, p, x, 2, make([]float32, 2), g, make([]float32, 5))
		}},
		{"init length", func() { m.Init(p[1:], 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tt.f()
		})
	}
}

// TestTrainToy trains a small MLP with plain SGD on a linearly separable
// problem and checks that the loss falls well below chance.
func TestTrainToy(t *testing.T) {
	const (
		dim    = 8
		batch  = 32
		steps  = 300
		lr     = 0.5
		trials = 64 // samples held out to measure the loss
	)
	rng := rand.New(rand.NewPCG(2024, 1))
	truth := randSlice(rng, dim)
	sample := func(x, y []float32) {
		for i := range y {
			row := x[i*dim : (i+1)*dim]
			for j := range row {
				row[j] = float32(rng.NormFloat64())
			}
			if Dot(row, truth) > 0 {
				y[i] = 1
			} else {
				y[i] = 0
			}
		}
	}
	m, err := NewMLP([]int{dim, 16, 8, 1})
	if err != nil {
		t.Fatal(err)
	}
	params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(params, 1)
	ws := m.NewWorkspace(trials)
	x, y := make([]float32, trials*dim), make([]float32, trials)
	logits, probs, dl := make([]float32, trials), make([]float32, trials), make([]float32, trials)

	sample(x, y) // held-out set, fixed
	evalX, evalY := slices.Clone(x), slices.Clone(y)
	eval := func() float64 {
		m.Forward(ws, params, evalX, trials, logits)
		return SigmoidBCE(logits, evalY, probs, dl)
	}
	before := eval()
	for step := 0; step < steps; step++ {
		bx, by := x[:batch*dim], y[:batch]
		sample(bx, by)
		m.Forward(ws, params, bx, batch, logits[:batch])
		SigmoidBCE(logits[:batch], by, probs[:batch], dl[:batch])
		m.Backward(ws, params, bx, batch, dl[:batch], grad, nil)
		Axpy(params, -lr, grad)
	}
	after := eval()
	t.Logf("held-out loss %.4f -> %.4f", before, after)
	if !(after < 0.25 && after < before/2) {
		t.Fatalf("held-out loss %.4f -> %.4f, want below 0.25 and half", before, after)
	}
}

func TestForwardBackwardNoAllocs(t *testing.T) {
	m, _ := NewMLP([]int{414, 200, 80, 1})
	const n = 16
	params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(params, 3)
	x, dx := make([]float32, n*m.InputWidth()), make([]float32, n*m.InputWidth())
	logits, dl := make([]float32, n), make([]float32, n)
	ws := m.NewWorkspace(n)
	ws.Threads = 1
	allocs := testing.AllocsPerRun(3, func() { // the warm-up run grows the scratch
		m.Forward(ws, params, x, n, logits)
		m.Backward(ws, params, x, n, dl, grad, dx)
	})
	if allocs > 0 {
		t.Fatalf("Forward+Backward allocate %v times per pass", allocs)
	}
}
