package densenet

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gruForward64 is the reference loop of GRU.Forward in float64 (with
// math's tanh and an exact sigmoid); it returns h, m x T x H.
func gruForward64(g *GRU, p, x []float64, lens []int32, T int, node []int32, m int, att []float64) []float64 {
	H, In := g.Hidden, g.In
	wih, whh := p[:3*H*In], p[3*H*In:3*H*In+3*H*H]
	bih, bhh := p[3*H*In+3*H*H:3*H*In+3*H*H+3*H], p[3*H*In+3*H*H+3*H:]
	h := make([]float64, m*T*H)
	for i := 0; i < m; i++ {
		j := nodeOf(node, i)
		hp := make([]float64, H)
		for t := 0; t < int(lens[j]); t++ {
			xt := x[(j*T+t)*In : (j*T+t+1)*In]
			a := 1.0
			if g.Attn {
				a = att[i*T+t]
			}
			gi := func(row int) float64 {
				s := bih[row]
				for c, v := range xt {
					s += wih[row*In+c] * v
				}
				return s
			}
			gh := func(row int) float64 {
				s := bhh[row]
				for c, v := range hp {
					s += whh[row*H+c] * v
				}
				return s
			}
			ht := h[(i*T+t)*H : (i*T+t+1)*H]
			for o := 0; o < H; o++ {
				r := sigmoid64(gi(o) + gh(o))
				z := sigmoid64(gi(H+o) + gh(H+o))
				n := math.Tanh(gi(2*H+o) + r*gh(2*H+o))
				ht[o] = hp[o] + a*(1-z)*(n-hp[o])
			}
			copy(hp, ht)
		}
	}
	return h
}

// gruCase is a GRU and a batch: lengths per node, a node mapping (nil for
// the identity) and the number of outputs.
type gruCase struct {
	name      string
	in, h, T  int
	attn      bool
	lens      []int32
	node      []int32
	m         int
	threads   int
	nanPadded bool // fill the padding steps of x and att with NaN
}

var gruCases = []gruCase{
	{name: "gru/identity", in: 3, h: 4, T: 5, lens: []int32{0, 5, 3, 1}, m: 4, nanPadded: true},
	{name: "gru/full", in: 2, h: 3, T: 4, lens: []int32{4, 4, 4}, m: 3},
	{name: "gru/shared", in: 3, h: 2, T: 4, lens: []int32{4, 2, 0}, node: []int32{0, 1, 0, 2, 1, 0, 0}, m: 7, nanPadded: true},
	{name: "augru/identity", in: 3, h: 4, T: 5, attn: true, lens: []int32{2, 5, 0, 4, 5}, m: 5, nanPadded: true},
	{name: "augru/shared", in: 2, h: 3, T: 6, attn: true, lens: []int32{6, 3}, node: []int32{1, 0, 0, 1, 0}, m: 5, nanPadded: true},
	{name: "augru/one-node", in: 4, h: 3, T: 3, attn: true, lens: []int32{3}, node: []int32{0, 0, 0}, m: 3},
	// wider than a SIMD step (8): the vector kernels and the Go tail
	{name: "gru/wide", in: 3, h: 11, T: 4, lens: []int32{4, 2, 0}, node: []int32{0, 1, 0, 2}, m: 4, nanPadded: true},
	{name: "augru/wide", in: 5, h: 11, T: 4, attn: true, lens: []int32{4, 3}, node: []int32{1, 0, 0, 1}, m: 4, nanPadded: true},
	{name: "gru/empty", in: 2, h: 2, T: 3, lens: []int32{0, 0}, node: []int32{1, 0, 1}, m: 3},
	{name: "gru/T=0", in: 2, h: 2, T: 0, lens: []int32{0, 0}, m: 2},
	{name: "gru/no-outputs", in: 2, h: 2, T: 3, lens: []int32{3}, node: []int32{}, m: 0},
}

// gruFixture is a case's GRU with random parameters and inputs: x and
// att (NaN in the padding with nanPadded), and dh.
type gruFixture struct {
	c                  gruCase
	g                  *GRU
	params, x, att, dh []float32
	nodes              int
}

func newGRUFixture(t testing.TB, rng *rand.Rand, c gruCase) gruFixture {
	g, err := NewGRU(c.in, c.h, c.attn)
	if err != nil {
		t.Fatal(err)
	}
	f := gruFixture{c: c, g: g, nodes: len(c.lens), params: make([]float32, g.NumParams())}
	g.Init(f.params, rng.Uint64())
	for i := range f.params { // larger than Init's, to leave the linear regime
		f.params[i] *= 3
	}
	f.x = randSlice(rng, f.nodes*c.T*c.in)
	f.dh = randSlice(rng, c.m*c.T*c.h)
	if c.attn {
		f.att = make([]float32, c.m*c.T)
		for i := range f.att {
			f.att[i] = rng.Float32()
		}
	}
	if c.nanPadded {
		nan := float32(math.NaN())
		for j, l := range c.lens {
			for k := int(l) * c.in; k < c.T*c.in; k++ {
				f.x[j*c.T*c.in+k] = nan
			}
		}
		for i := 0; i < c.m && f.att != nil; i++ {
			for tt := seqLen(c.lens, c.node, i); tt < c.T; tt++ {
				f.att[i*c.T+tt] = nan
			}
		}
	}
	return f
}

// run runs Forward and Backward on a fresh workspace (or ws) and returns
// h, grad, dx and datt.
func (f gruFixture) run(ws *GRUWorkspace) (h, grad, dx, datt []float32) {
	c := f.c
	if ws == nil {
		ws = f.g.NewWorkspace(c.m, f.nodes, c.T)
		ws.Threads = c.threads
	}
	h = nanSlice(c.m * c.T * c.h)
	f.g.Forward(ws, f.params, f.x, c.lens, c.T, c.node, c.m, f.att, h)
	grad, dx = nanSlice(f.g.NumParams()), nanSlice(len(f.x))
	if c.attn {
		datt = nanSlice(c.m * c.T)
	}
	f.g.Backward(ws, f.params, f.x, c.lens, c.T, c.node, c.m, f.att, f.dh, grad, dx, datt)
	return h, grad, dx, datt
}

// TestGRUFiniteDifferences checks Forward against the float64 reference
// loop and Backward against central differences of the float64 loss
// Σ dh ⊙ h with respect to every parameter, every valid input step and
// every valid attention score, on GRUs and AUGRUs with lengths from 0 to
// T, the identity mapping and outputs that share a node. Padding steps of
// x and att hold NaN, which must not reach any result, and get gradient 0.
func TestGRUFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, c := range gruCases {
		t.Run(c.name, func(t *testing.T) {
			f := newGRUFixture(t, rng, c)
			h, grad, dx, datt := f.run(nil)
			p64, x64, att64, dh64 := f64(f.params), f64(f.x), f64(f.att), f64(f.dh)
			closeTo(t, "h", h, gruForward64(f.g, p64, x64, c.lens, c.T, c.node, c.m, att64))
			loss := func() float64 {
				var l float64
				for i, v := range gruForward64(f.g, p64, x64, c.lens, c.T, c.node, c.m, att64) {
					if v != 0 {
						l += dh64[i] * v
					}
				}
				return l
			}
			checkFD(t, "grad", grad, p64, loss, nil)
			checkFD(t, "dx", dx, x64, loss, func(i int) bool { return i%(c.T*c.in) < int(c.lens[i/(c.T*c.in)])*c.in })
			if c.attn {
				checkFD(t, "datt", datt, att64, loss, func(i int) bool { return i%c.T < seqLen(c.lens, c.node, i/c.T) })
			}
		})
	}
}

// checkFD checks got against central differences of loss with respect to
// v, at the indices where valid (nil: all) is true; elsewhere got must be
// 0.
func checkFD(t *testing.T, what string, got []float32, v []float64, loss func() float64, valid func(int) bool) {
	t.Helper()
	const h = 1e-6
	for i := range v {
		if valid != nil && !valid(i) {
			if got[i] != 0 {
				t.Errorf("%s[%d] = %v at a padding step, want 0", what, i, got[i])
			}
			continue
		}
		old := v[i]
		v[i] = old + h
		up := loss()
		v[i] = old - h
		down := loss()
		v[i] = old
		want := (up - down) / (2 * h)
		if !(math.Abs(float64(got[i])-want) <= 2e-4+2e-3*math.Abs(want)) {
			t.Errorf("%s[%d] = %v, finite difference %v", what, i, got[i], want)
		}
	}
}

// TestGRUThreadsAndGrowth runs a batch that crosses the GEMM's parallel
// threshold (on the per-step products and the input projection): the
// results do not depend on the number of goroutines, a workspace made
// for a smaller shape grows and gives the same results, and they match
// the float64 reference.
func TestGRUThreadsAndGrowth(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, attn := range []bool{false, true} {
		c := gruCase{in: 36, h: 36, T: 20, attn: attn, lens: make([]int32, 30), node: make([]int32, 200), m: 200}
		for j := range c.lens {
			c.lens[j] = int32(rng.IntN(c.T + 1))
		}
		c.lens[3] = int32(c.T)
		for i := range c.node {
			c.node[i] = int32(rng.IntN(len(c.lens)))
		}
		f := newGRUFixture(t, rng, c)
		f.c.threads = 1
		h1, g1, dx1, da1 := f.run(nil)
		f.c.threads = 4
		h4, g4, dx4, da4 := f.run(nil)
		if !slices.Equal(h1, h4) || !slices.Equal(g1, g4) || !slices.Equal(dx1, dx4) || !slices.Equal(da1, da4) {
			t.Fatalf("attn=%v: results with 4 goroutines differ from 1", attn)
		}
		small := f.g.NewWorkspace(1, 1, 1)
		small.Threads = 2
		hs, gs, dxs, das := f.run(small)
		if !slices.Equal(h1, hs) || !slices.Equal(g1, gs) || !slices.Equal(dx1, dxs) || !slices.Equal(da1, das) {
			t.Fatalf("attn=%v: results on a grown workspace differ", attn)
		}
		closeTo(t, "h", h1, gruForward64(f.g, f64(f.params), f64(f.x), c.lens, c.T, c.node, c.m, f64(f.att)))
	}
}

// TestGRUReuse runs two batches of different shapes on one workspace,
// then the first again: each matches its run on a fresh workspace.
func TestGRUReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	a := newGRUFixture(t, rng, gruCases[4])
	b := newGRUFixture(t, rng, gruCase{in: a.c.in, h: a.c.h, T: 3, attn: true, lens: []int32{1, 3, 2}, m: 3})
	b.g, b.params = a.g, a.params
	ws := a.g.NewWorkspace(2, 2, 2)
	for _, f := range []gruFixture{a, b, a} {
		h, g, dx, da := f.run(ws)
		h0, g0, dx0, da0 := f.run(nil)
		if !slices.Equal(h, h0) || !slices.Equal(g, g0) || !slices.Equal(dx, dx0) || !slices.Equal(da, da0) {
			t.Fatal("results on a reused workspace differ from a fresh one")
		}
	}
}

func TestGRUNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(67, 68))
	c := gruCase{in: 36, h: 36, T: 50, attn: true, lens: []int32{37}, node: make([]int32, 100), m: 100}
	f := newGRUFixture(t, rng, c)
	ws := f.g.NewWorkspace(c.m, 1, c.T)
	ws.Threads = 1
	h, grad, dx, datt := make([]float32, c.m*c.T*c.h), make([]float32, f.g.NumParams()), make([]float32, len(f.x)), make([]float32, c.m*c.T)
	allocs := testing.AllocsPerRun(3, func() { // the warm-up run grows the packing buffers
		f.g.Forward(ws, f.params, f.x, c.lens, c.T, c.node, c.m, f.att, h)
		f.g.Backward(ws, f.params, f.x, c.lens, c.T, c.node, c.m, f.att, f.dh, grad, dx, datt)
	})
	if allocs > 0 {
		t.Fatalf("Forward+Backward allocate %v times per pass", allocs)
	}
}

func TestGRUInit(t *testing.T) {
	g, _ := NewGRU(5, 16, false)
	if got, want := g.NumParams(), 48*5+48*16+48+48; got != want {
		t.Fatalf("NumParams = %d, want %d", got, want)
	}
	p, q := make([]float32, g.NumParams()), make([]float32, g.NumParams())
	g.Init(p, 7)
	g.Init(q, 7)
	if !slices.Equal(p, q) {
		t.Fatal("Init is not deterministic")
	}
	bound := float32(0.25)
	if slices.ContainsFunc(p, func(v float32) bool { return v < -bound || v > bound }) || slices.Max(p) < bound*0.9 {
		t.Fatalf("values outside ±%v or not spread", bound)
	}
	for i := range p {
		p[i] = float32(i)
	}
	wih, whh, bih, bhh := g.Params(p)
	if len(wih) != 48*5 || len(whh) != 48*16 || bih[0] != float32(48*21) || bhh[0] != float32(48*22) || len(bhh) != 48 {
		t.Fatal("Params does not follow the layout W_ih, W_hh, b_ih, b_hh")
	}
}

func TestGRUErrorsAndPanics(t *testing.T) {
	for _, bad := range [][2]int{{0, 1}, {1, 0}, {-1, 2}} {
		if _, err := NewGRU(bad[0], bad[1], false); !errors.Is(err, ErrBadSizes) {
			t.Errorf("NewGRU(%d, %d): %v, want ErrBadSizes", bad[0], bad[1], err)
		}
	}
	g, _ := NewGRU(2, 3, false)
	ag, _ := NewGRU(2, 3, true)
	p, ap := make([]float32, g.NumParams()), make([]float32, ag.NumParams())
	lens := []int32{2, 1}
	x, h := make([]float32, 2*2*2), make([]float32, 2*2*3)
	att := make([]float32, 4)
	fwd := func() *GRUWorkspace {
		ws := g.NewWorkspace(2, 2, 2)
		g.Forward(ws, p, x, lens, 2, nil, 2, nil, h)
		return ws
	}
	tests := []struct {
		name string
		f    func()
	}{
		{"short params", func() { g.Forward(g.NewWorkspace(2, 2, 2), p[1:], x, lens, 2, nil, 2, nil, h) }},
		{"short x", func() { g.Forward(g.NewWorkspace(2, 2, 2), p, x[1:], lens, 2, nil, 2, nil, h) }},
		{"short h", func() { g.Forward(g.NewWorkspace(2, 2, 2), p, x, lens, 2, nil, 2, nil, h[1:]) }},
		{"length over T", func() { g.Forward(g.NewWorkspace(2, 2, 2), p, x, []int32{3, 1}, 2, nil, 2, nil, h) }},
		{"m without nodes", func() { g.Forward(g.NewWorkspace(2, 2, 2), p, x, lens, 2, nil, 1, nil, h[:6]) }},
		{"node out of range", func() { g.Forward(g.NewWorkspace(2, 2, 2), p, x, lens, 2, []int32{0, 2}, 2, nil, h) }},
		{"att on a GRU", func() { g.Forward(g.NewWorkspace(2, 2, 2), p, x, lens, 2, nil, 2, att, h) }},
		{"AUGRU without att", func() { ag.Forward(ag.NewWorkspace(2, 2, 2), ap, x, lens, 2, nil, 2, nil, h) }},
		{"foreign workspace", func() { g.Forward(ag.NewWorkspace(2, 2, 2), p, x, lens, 2, nil, 2, nil, h) }},
		{"backward before forward", func() {
			g.Backward(g.NewWorkspace(2, 2, 2), p, x, lens, 2, nil, 2, nil, h, make([]float32, len(p)), nil, nil)
		}},
		{"backward other shape", func() { g.Backward(fwd(), p, x[:4], lens, 1, nil, 2, nil, h[:6], make([]float32, len(p)), nil, nil) }},
		{"backward short grad", func() { g.Backward(fwd(), p, x, lens, 2, nil, 2, nil, h, p[1:], nil, nil) }},
		{"backward short dx", func() { g.Backward(fwd(), p, x, lens, 2, nil, 2, nil, h, make([]float32, len(p)), x[1:], nil) }},
		{"backward datt on a GRU", func() { g.Backward(fwd(), p, x, lens, 2, nil, 2, nil, h, make([]float32, len(p)), nil, att) }},
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

// TestTanhSigmoid32 checks the float32 approximations against math over
// [-20, 20] and at the extremes.
func TestTanhSigmoid32(t *testing.T) {
	var et, es float64
	for i := -400000; i <= 400000; i++ {
		x := float32(i) * 5e-5
		et = max(et, math.Abs(float64(tanh32(x))-math.Tanh(float64(x))))
		es = max(es, math.Abs(float64(sigmoid32(x))-sigmoid64(float64(x))))
	}
	if et > 4e-7 || es > 3e-7 {
		t.Fatalf("largest errors: tanh32 %v, sigmoid32 %v", et, es)
	}
	inf := float32(math.Inf(1))
	for _, x := range []float32{inf, 8.092109, 9, 40} {
		if v := tanh32(x); v > 1 || v < 1-6e-8 || -tanh32(-x) != v {
			t.Fatalf("tanh32(±%v) = ±%v, want within an ulp of ±1", x, v)
		}
	}
	if tanh32(0) != 0 || sigmoid32(0) != 0.5 || sigmoid32(inf) != 1 || sigmoid32(-inf) > 3e-8 {
		t.Fatal("wrong values at 0 or ±Inf")
	}
	if nan := float32(math.NaN()); tanh32(nan) == tanh32(nan) || sigmoid32(nan) == sigmoid32(nan) {
		t.Fatal("NaN does not give NaN")
	}
	t.Logf("largest errors: tanh32 %.3g, sigmoid32 %.3g", et, es)
}

// TestTanhSlice checks tanhSlice, whose first multiples of 8 go through
// the SIMD kernel where it runs, against math over [-20, 20] in slices
// of 8003 (a SIMD part and a tail), and at the extremes and NaN inside
// the SIMD part.
func TestTanhSlice(t *testing.T) {
	const n = 8003
	x, want := make([]float32, n), make([]float64, n)
	var worst float64
	for i0 := -400000; i0 <= 400000; i0 += n {
		for i := range x {
			x[i] = float32(i0+i) * 5e-5
			want[i] = math.Tanh(float64(x[i]))
		}
		tanhSlice(x)
		for i, v := range x {
			worst = max(worst, math.Abs(float64(v)-want[i]))
		}
	}
	if worst > 4e-7 {
		t.Fatalf("largest error %v", worst)
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	in := []float32{inf, -inf, 8.092109, -9, 40, 0, nan, 1e-30, 0.5}
	x = append([]float32(nil), in...)
	tanhSlice(x)
	for i, v := range in {
		w := tanh32(v)
		if v != v {
			if x[i] == x[i] {
				t.Fatalf("tanhSlice(NaN) = %v", x[i])
			}
			continue
		}
		if x[i] > 1 || x[i] < -1 || math.Abs(float64(x[i]-w)) > 1.2e-7*math.Abs(float64(w)) {
			t.Fatalf("tanhSlice(%v) = %v, tanh32 %v", v, x[i], w)
		}
	}
	t.Logf("largest error %.3g", worst)
}

// The sequence blocks at DIEN's shapes, T = 50: serving is one user (one
// node, its sequence full) and 100 candidates, each a run over the user's
// sequence (an AUGRU with the candidate's scores); training is a batch of
// 256 users with one run each and lengths between 25 and 50. In = H = 36.
// Forward is the forward pass alone, ForwardBackward both passes with all
// the gradients (dx and datt too).
//
//	go test -run '^$' -bench 'GRU|Attention' ./densenet
func benchGRU(b *testing.B, attn, backward bool, nodes, m int) {
	rng := rand.New(rand.NewPCG(9, 9))
	const T = 50
	c := gruCase{in: 36, h: 36, T: T, attn: attn, lens: make([]int32, nodes), m: m}
	for j := range c.lens {
		c.lens[j] = T
		if nodes > 1 {
			c.lens[j] = int32(T/2 + rng.IntN(T/2+1))
		}
	}
	if m != nodes {
		c.node = make([]int32, m)
		for i := range c.node {
			c.node[i] = int32(i % nodes)
		}
	}
	f := newGRUFixture(b, rng, c)
	ws := f.g.NewWorkspace(m, nodes, T)
	h, grad, dx := make([]float32, m*T*c.h), make([]float32, f.g.NumParams()), make([]float32, len(f.x))
	var datt []float32
	if attn {
		datt = make([]float32, m*T)
	}
	steps := 0
	for i := 0; i < m; i++ {
		steps += seqLen(c.lens, c.node, i)
	}
	for b.Loop() {
		f.g.Forward(ws, f.params, f.x, c.lens, T, c.node, m, f.att, h)
		if backward {
			f.g.Backward(ws, f.params, f.x, c.lens, T, c.node, m, f.att, f.dh, grad, dx, datt)
		}
	}
	b.ReportMetric(float64(steps)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func BenchmarkGRUForward_Serve(b *testing.B)           { benchGRU(b, false, false, 1, 100) }
func BenchmarkGRUForwardBackward_Serve(b *testing.B)   { benchGRU(b, false, true, 1, 100) }
func BenchmarkGRUForwardBackward_Train(b *testing.B)   { benchGRU(b, false, true, 256, 256) }
func BenchmarkAUGRUForward_Serve(b *testing.B)         { benchGRU(b, true, false, 1, 100) }
func BenchmarkAUGRUForwardBackward_Serve(b *testing.B) { benchGRU(b, true, true, 1, 100) }
func BenchmarkAUGRUForwardBackward_Train(b *testing.B) { benchGRU(b, true, true, 256, 256) }
