package densenet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// allOptions are the four combinations of MLPOptions.
var allOptions = []MLPOptions{{}, {InputBias: true}, {OutputReLU: true}, {InputBias: true, OutputReLU: true}}

func optName(o MLPOptions) string {
	switch {
	case o.InputBias && o.OutputReLU:
		return "inbias+outrelu"
	case o.InputBias:
		return "inbias"
	case o.OutputReLU:
		return "outrelu"
	}
	return "plain"
}

func TestNewMLPWith(t *testing.T) {
	in, both := MLPOptions{InputBias: true}, MLPOptions{InputBias: true, OutputReLU: true}
	tests := []struct {
		sizes []int
		opts  MLPOptions
		ok    bool
	}{
		{nil, MLPOptions{}, false},
		{nil, in, false},
		{[]int{5}, MLPOptions{}, false},
		{[]int{5}, MLPOptions{OutputReLU: true}, false},
		{[]int{5}, in, true},
		{[]int{5}, both, true},
		{[]int{0}, in, false},
		{[]int{5, 0}, both, false},
		{[]int{5, -1, 3}, in, false},
		{[]int{3, 2}, MLPOptions{}, true}, // a linear output of any width
		{[]int{128, 256}, both, true},
		{[]int{414, 200, 80, 1}, MLPOptions{}, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.sizes, optName(tt.opts)), func(t *testing.T) {
			m, err := NewMLPWith(tt.sizes, tt.opts)
			if tt.ok != (err == nil) {
				t.Fatalf("NewMLPWith(%v, %+v) error = %v, want ok = %v", tt.sizes, tt.opts, err, tt.ok)
			}
			if err != nil {
				if !errors.Is(err, ErrBadSizes) {
					t.Fatalf("error %v is not ErrBadSizes", err)
				}
				return
			}
			if !slices.Equal(m.Sizes, tt.sizes) || m.Options() != tt.opts || m.OutputWidth() != tt.sizes[len(tt.sizes)-1] {
				t.Fatalf("Sizes %v, Options %+v, OutputWidth %d", m.Sizes, m.Options(), m.OutputWidth())
			}
		})
	}
	// NewMLP is NewMLPWith without options, for one logit.
	a, _ := NewMLP([]int{414, 200, 80, 1})
	b, _ := NewMLPWith([]int{414, 200, 80, 1}, MLPOptions{})
	if a.NumParams() != b.NumParams() || !slices.Equal(a.wOff, b.wOff) || !slices.Equal(a.bOff, b.bOff) || a.maxDelta != b.maxDelta {
		t.Fatal("NewMLP and NewMLPWith(sizes, MLPOptions{}) differ")
	}
}

// TestLayoutInputBias checks that the input bias comes first and shifts
// the layers by Sizes[0], and that the output ReLU adds no parameters.
func TestLayoutInputBias(t *testing.T) {
	sizes := []int{6, 4, 3}
	plain, _ := NewMLPWith(sizes, MLPOptions{})
	for _, o := range allOptions {
		m, err := NewMLPWith(sizes, o)
		if err != nil {
			t.Fatal(err)
		}
		shift := 0
		if o.InputBias {
			shift = sizes[0]
		}
		if m.NumParams() != plain.NumParams()+shift {
			t.Fatalf("%s: NumParams = %d, want %d", optName(o), m.NumParams(), plain.NumParams()+shift)
		}
		p := make([]float32, m.NumParams())
		for i := range p {
			p[i] = float32(i)
		}
		bin := m.InputBiasParams(p)
		if o.InputBias != (bin != nil) || (bin != nil && (len(bin) != sizes[0] || bin[0] != 0)) {
			t.Fatalf("%s: InputBiasParams = %v", optName(o), bin)
		}
		pp := make([]float32, plain.NumParams())
		for l := 0; l < m.NumLayers(); l++ {
			w, b := m.LayerParams(p, l)
			w0, b0 := plain.LayerParams(pp, l)
			if len(w) != len(w0) || len(b) != len(b0) || int(w[0]) != m.wOff[l] || m.wOff[l] != plain.wOff[l]+shift || m.bOff[l] != plain.bOff[l]+shift {
				t.Fatalf("%s: layer %d at %v/%v, plain at %d/%d", optName(o), l, w[0], b[0], plain.wOff[l], plain.bOff[l])
			}
		}
	}
	m, _ := NewMLPWith([]int{5}, MLPOptions{InputBias: true})
	if m.NumParams() != 5 || m.NumLayers() != 0 || m.InputWidth() != 5 || m.OutputWidth() != 5 {
		t.Fatalf("[5] with input bias: NumParams %d, NumLayers %d, widths %d, %d", m.NumParams(), m.NumLayers(), m.InputWidth(), m.OutputWidth())
	}
}

// TestInitInputBias checks that Init sets the input bias to 0 and gives
// the layers the values they have without it.
func TestInitInputBias(t *testing.T) {
	sizes := []int{20, 9, 4}
	plain, _ := NewMLPWith(sizes, MLPOptions{})
	m, _ := NewMLPWith(sizes, MLPOptions{InputBias: true, OutputReLU: true})
	pp, p := make([]float32, plain.NumParams()), make([]float32, m.NumParams())
	for i := range p {
		p[i] = 1 // overwritten
	}
	plain.Init(pp, 9)
	m.Init(p, 9)
	if bin := m.InputBiasParams(p); slices.ContainsFunc(bin, func(v float32) bool { return v != 0 }) {
		t.Fatalf("input bias after Init: %v", bin)
	}
	if !slices.Equal(p[sizes[0]:], pp) {
		t.Fatal("the layers' initial values depend on the input bias")
	}
}

// TestOptionsGradientsFiniteDifferences checks Backward with every option
// against central differences of a float64 evaluation of the linear loss
// Σ c ⊙ out, with random parameters (input bias included).
func TestOptionsGradientsFiniteDifferences(t *testing.T) {
	shapes := []struct {
		sizes []int
		n     int
	}{
		{[]int{5}, 3},
		{[]int{6, 1}, 4},
		{[]int{5, 7}, 3},
		{[]int{4, 6, 3}, 3},
		{[]int{7, 5, 3, 2}, 4},
	}
	for si, sh := range shapes {
		for oi, o := range allOptions {
			if len(sh.sizes) == 1 && !o.InputBias {
				continue
			}
			t.Run(fmt.Sprint(sh.sizes, optName(o)), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(si), uint64(oi)))
				m, err := NewMLPWith(sh.sizes, o)
				if err != nil {
					t.Fatal(err)
				}
				n := sh.n
				params := randSlice(rng, m.NumParams())
				for i := range params {
					params[i] *= 0.5
				}
				x := randSlice(rng, n*m.InputWidth())
				c := randSlice(rng, n*m.OutputWidth()) // dLoss/dout
				c0 := slices.Clone(c)

				ws := m.NewWorkspace(n + 1)
				out := nanSlice(n * m.OutputWidth())
				grad, dx := nanSlice(m.NumParams()), nanSlice(len(x))
				m.Forward(ws, params, x, n, out)
				m.Backward(ws, params, x, n, c, grad, dx)
				if !slices.Equal(c, c0) {
					t.Fatal("Backward modified dout")
				}
				acts := newRefMLP(m, params).forward(f64(x), n)
				closeTo(t, "out", out, acts[len(acts)-1])

				p64, x64, c64 := f64(params), f64(x), f64(c)
				lossAt := func() float64 {
					acts := refFromVector(m, p64).forward(x64, n)
					var s float64
					for i, v := range acts[len(acts)-1] {
						s += c64[i] * v
					}
					return s
				}
				const h = 1e-6
				check := func(what string, got []float32, v []float64) {
					for i := range v {
						old := v[i]
						v[i] = old + h
						up := lossAt()
						v[i] = old - h
						down := lossAt()
						v[i] = old
						want := (up - down) / (2 * h)
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
}

// TestOptionsAgainstReference runs shapes of SLIDE's dense part on a batch
// that crosses the GEMM blocks and compares Forward and Backward with the
// float64 reference, checks that the number of goroutines does not change
// a bit of the result and that a nil dx does not change grad.
func TestOptionsAgainstReference(t *testing.T) {
	for _, sizes := range [][]int{{128}, {128, 256}, {96, 200, 64}} {
		for _, o := range allOptions {
			if len(sizes) == 1 && !o.InputBias {
				continue
			}
			t.Run(fmt.Sprint(sizes, optName(o)), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(len(sizes)), 11))
				m, err := NewMLPWith(sizes, o)
				if err != nil {
					t.Fatal(err)
				}
				const n = 37
				params := make([]float32, m.NumParams())
				m.Init(params, 7)
				for i := range m.InputBiasParams(params) {
					params[i] = 0.3 * float32(rng.NormFloat64())
				}
				x := randSlice(rng, n*m.InputWidth())
				dout := randSlice(rng, n*m.OutputWidth())
				run := func(threads int, wantDx bool) (out, grad, dx []float32) {
					ws := m.NewWorkspace(64)
					ws.Threads = threads
					out, grad = nanSlice(n*m.OutputWidth()), nanSlice(m.NumParams())
					if wantDx {
						dx = nanSlice(len(x))
					}
					m.Forward(ws, params, x, n, out)
					m.Backward(ws, params, x, n, dout, grad, dx)
					return out, grad, dx
				}
				out, grad, dx := run(1, true)
				r := newRefMLP(m, params)
				acts := r.forward(f64(x), n)
				wantGrad, wantDx := r.backward(acts, n, f64(dout))
				closeTo(t, "out", out, acts[len(acts)-1])
				closeTo(t, "grad", grad, wantGrad)
				closeTo(t, "dx", dx, wantDx)

				out2, grad2, dx2 := run(2, true)
				if !slices.Equal(out, out2) || !slices.Equal(grad, grad2) || !slices.Equal(dx, dx2) {
					t.Fatal("results with 2 goroutines differ from 1")
				}
				_, grad3, _ := run(1, false)
				if !slices.Equal(grad, grad3) {
					t.Fatal("grad depends on whether dx is asked for")
				}
			})
		}
	}
}

// sparseInputStack is the dense part of xctrain's SLIDE network as it was
// written there before it used MLP (job/xctrain's denseNet), on the
// exported kernels: ReLU(x + b_in), then fully connected ReLU layers, in
// place on its own buffers. sizes has the embedding width first; the
// parameters are laid out b_in, W_1, b_1, ..., as MLP lays them out.
type sparseInputStack struct {
	sizes      []int
	wOff, bOff []int
	numParams  int
}

func newSparseInputStack(sizes []int) *sparseInputStack {
	s := &sparseInputStack{sizes: sizes, wOff: make([]int, len(sizes)), bOff: make([]int, len(sizes))}
	off := sizes[0]
	for l := 1; l < len(sizes); l++ {
		s.wOff[l] = off
		off += sizes[l-1] * sizes[l]
		s.bOff[l] = off
		off += sizes[l]
	}
	s.numParams = off
	return s
}

func (s *sparseInputStack) layer(p []float32, l int) (w, b []float32) {
	in, out := s.sizes[l-1], s.sizes[l]
	return p[s.wOff[l] : s.wOff[l]+in*out], p[s.bOff[l] : s.bOff[l]+out]
}

// forward overwrites acts[0] (the input, n x sizes[0]) and acts[l] (n x
// sizes[l]) with the activations and returns the last.
func (s *sparseInputStack) forward(acts [][]float32, p []float32, n int) []float32 {
	a := acts[0][:n*s.sizes[0]]
	AddBiasReLU(a, p[:s.sizes[0]])
	for l := 1; l < len(s.sizes); l++ {
		in, out := s.sizes[l-1], s.sizes[l]
		w, b := s.layer(p, l)
		z := acts[l][:n*out]
		Gemm(NoTrans, Trans, n, out, in, 1, a, in, w, in, 0, z, out)
		AddBiasReLU(z, b)
		a = z
	}
	return a
}

// backward overwrites dout and grad and returns the input gradient.
func (s *sparseInputStack) backward(acts [][]float32, p []float32, n int, dout, grad []float32) []float32 {
	delta := dout
	for l := len(s.sizes) - 1; l >= 1; l-- {
		in, out := s.sizes[l-1], s.sizes[l]
		ReLUBackward(delta, delta, acts[l][:n*out])
		w, _ := s.layer(p, l)
		gw, gb := s.layer(grad, l)
		a := acts[l-1][:n*in]
		Gemm(Trans, NoTrans, out, in, n, 1, delta, out, a, in, 0, gw, in)
		ColSums(gb, delta)
		next := make([]float32, n*in)
		Gemm(NoTrans, NoTrans, n, in, out, 1, delta, out, w, in, 0, next, in)
		delta = next
	}
	ReLUBackward(delta, delta, acts[0][:n*s.sizes[0]])
	ColSums(grad[:s.sizes[0]], delta)
	return delta
}

// TestSparseInputStack checks that an MLP with InputBias and OutputReLU
// computes, bit for bit, what the layer-by-layer composition of the
// kernels does (the dense part of xctrain's SLIDE network before it used
// MLP), with the same parameter layout and Init.
func TestSparseInputStack(t *testing.T) {
	for _, sizes := range [][]int{{32}, {32, 7}, {4, 6, 3}, {128, 256}, {64, 300, 50}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(sizes[0]), uint64(len(sizes))))
			m, err := NewMLPWith(sizes, MLPOptions{InputBias: true, OutputReLU: true})
			if err != nil {
				t.Fatal(err)
			}
			ref := newSparseInputStack(sizes)
			const n = 45
			params := make([]float32, m.NumParams())
			m.Init(params, 3)
			if m.NumParams() != ref.numParams {
				t.Fatalf("NumParams = %d, want %d", m.NumParams(), ref.numParams)
			}
			for i := range m.InputBiasParams(params) {
				params[i] = 0.1 * float32(rng.NormFloat64())
			}
			x := randSlice(rng, n*m.InputWidth())
			dout := randSlice(rng, n*m.OutputWidth())

			acts := make([][]float32, len(sizes))
			for l, w := range sizes {
				acts[l] = make([]float32, n*w)
			}
			copy(acts[0], x)
			wantOut := slices.Clone(ref.forward(acts, params, n))
			wantGrad := make([]float32, m.NumParams())
			wantDx := ref.backward(acts, params, n, slices.Clone(dout), wantGrad)

			ws := m.NewWorkspace(n)
			ws.Threads = runtime.GOMAXPROCS(0)
			out, grad, dx := nanSlice(len(wantOut)), nanSlice(m.NumParams()), nanSlice(len(x))
			m.Forward(ws, params, x, n, out)
			m.Backward(ws, params, x, n, dout, grad, dx)
			if !slices.Equal(out, wantOut) || !slices.Equal(grad, wantGrad) || !slices.Equal(dx, wantDx) {
				t.Fatal("MLP differs from the kernel-by-kernel composition")
			}
		})
	}
}

func TestOptionsNoAllocs(t *testing.T) {
	m, _ := NewMLPWith([]int{128, 256, 64}, MLPOptions{InputBias: true, OutputReLU: true})
	const n = 16
	params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(params, 3)
	x, dx := make([]float32, n*m.InputWidth()), make([]float32, n*m.InputWidth())
	out, dout := make([]float32, n*m.OutputWidth()), make([]float32, n*m.OutputWidth())
	ws := m.NewWorkspace(n)
	ws.Threads = 1
	for _, d := range [][]float32{dx, nil} {
		allocs := testing.AllocsPerRun(3, func() { // the warm-up run grows the scratch
			m.Forward(ws, params, x, n, out)
			m.Backward(ws, params, x, n, dout, grad, d)
		})
		if allocs > 0 {
			t.Fatalf("Forward+Backward (dx nil: %v) allocate %v times per pass", d == nil, allocs)
		}
	}
}

func TestOptionsPanics(t *testing.T) {
	m, _ := NewMLPWith([]int{3, 2}, MLPOptions{InputBias: true, OutputReLU: true})
	bare, _ := NewMLPWith([]int{3}, MLPOptions{InputBias: true})
	p := make([]float32, m.NumParams())
	x := make([]float32, 2*3)
	tests := []struct {
		name string
		f    func()
	}{
		{"short out", func() { m.Forward(m.NewWorkspace(2), p, x, 2, make([]float32, 2)) }},
		{"short dout", func() {
			ws := m.NewWorkspace(2)
			m.Forward(ws, p, x, 2, make([]float32, 4))
			m.Backward(ws, p, x, 2, make([]float32, 2), make([]float32, len(p)), nil)
		}},
		{"tree pass without layers", func() {
			tr := Tree{Cols: []int{0, 3}, Count: []int{2}, X: [][]float32{x}}
			bare.ForwardTree(bare.NewWorkspace(2), make([]float32, 3), tr, make([]float32, 6))
		}},
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
