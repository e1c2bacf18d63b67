package densenet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// attentionForward64 is the reference loop of Attention.Forward in
// float64, with the unconcatenated first layer; it returns the scores,
// m x T.
func attentionForward64(a *Attention, p, keys []float64, lens []int32, T int, q []float64, node []int32, m int) []float64 {
	d, L := a.Dim, len(a.Hidden)
	scores := make([]float64, m*T)
	for i := 0; i < m; i++ {
		j := nodeOf(node, i)
		qi := q[i*d : (i+1)*d]
		for t := 0; t < int(lens[j]); t++ {
			k := keys[(j*T+t)*d : (j*T+t+1)*d]
			act := make([]float64, 0, 4*d)
			act = append(act, k...)
			act = append(act, qi...)
			for c := range k {
				act = append(act, k[c]-qi[c])
			}
			for c := range k {
				act = append(act, k[c]*qi[c])
			}
			for l := 0; l <= L; l++ {
				in, out := a.layerShape(l)
				next := make([]float64, out)
				for o := range next {
					s := p[a.bOff[l]+o]
					for c := 0; c < in; c++ {
						s += p[a.wOff[l]+o*in+c] * act[c]
					}
					if l < L && s <= 0 {
						s *= p[a.aOff[l]+o]
					}
					next[o] = s
				}
				act = next
			}
			scores[i*T+t] = act[0]
		}
		if a.Softmax && lens[j] > 0 {
			s := scores[i*T : i*T+int(lens[j])]
			var sum float64
			for _, v := range s {
				sum += math.Exp(v)
			}
			for t, v := range s {
				s[t] = math.Exp(v) / sum
			}
		}
	}
	return scores
}

type attCase struct {
	name      string
	dim       int
	hidden    []int
	softmax   bool
	T         int
	lens      []int32
	node      []int32
	m         int
	threads   int
	nanPadded bool
}

var attCases = []attCase{
	{name: "din/identity", dim: 3, hidden: []int{5, 3}, T: 5, lens: []int32{0, 5, 2, 1}, m: 4, nanPadded: true},
	{name: "din/shared", dim: 2, hidden: []int{4}, T: 4, lens: []int32{4, 3, 0}, node: []int32{0, 1, 1, 0, 2, 1, 0}, m: 7, nanPadded: true},
	{name: "din/full", dim: 3, hidden: []int{4, 3}, T: 3, lens: []int32{3, 3}, node: []int32{1, 0, 1}, m: 3},
	{name: "softmax/identity", dim: 3, hidden: []int{5, 3}, softmax: true, T: 5, lens: []int32{5, 0, 3, 1}, m: 4, nanPadded: true},
	{name: "softmax/shared", dim: 2, hidden: []int{3, 4, 2}, softmax: true, T: 4, lens: []int32{2, 4}, node: []int32{1, 0, 0, 1, 1}, m: 5, nanPadded: true},
	{name: "softmax/full", dim: 2, hidden: []int{3}, softmax: true, T: 3, lens: []int32{3, 3, 3}, m: 3},
	{name: "empty", dim: 2, hidden: []int{3}, T: 3, lens: []int32{0}, node: []int32{0, 0}, m: 2},
	{name: "T=0", dim: 2, hidden: []int{3}, softmax: true, T: 0, lens: []int32{0, 0}, m: 2},
	{name: "no-queries", dim: 2, hidden: []int{3}, T: 2, lens: []int32{2}, node: []int32{}, m: 0},
}

type attFixture struct {
	c                   attCase
	a                   *Attention
	params, keys, q, ds []float32
	dkeysBase, dqBase   []float32 // what dkeys and dq hold before Backward adds to them
	nodes               int
}

func newAttFixture(t testing.TB, rng *rand.Rand, c attCase) attFixture {
	a, err := NewAttention(c.dim, c.hidden, c.softmax)
	if err != nil {
		t.Fatal(err)
	}
	f := attFixture{c: c, a: a, nodes: len(c.lens), params: make([]float32, a.NumParams())}
	a.Init(f.params, rng.Uint64())
	for l := range c.hidden { // random slopes and biases: Init's are 0.25 and small
		_, b, alpha := a.LayerParams(f.params, l)
		copy(b, randSlice(rng, len(b)))
		for o := range alpha {
			alpha[o] = rng.Float32()
		}
	}
	f.keys = randSlice(rng, f.nodes*c.T*c.dim)
	f.q = randSlice(rng, c.m*c.dim)
	f.ds = randSlice(rng, c.m*c.T)
	f.dkeysBase, f.dqBase = randSlice(rng, len(f.keys)), randSlice(rng, len(f.q))
	if c.nanPadded {
		for j, l := range c.lens {
			for k := int(l) * c.dim; k < c.T*c.dim; k++ {
				f.keys[j*c.T*c.dim+k] = float32(math.NaN())
			}
		}
		for i := 0; i < c.m; i++ {
			for t := seqLen(c.lens, c.node, i); t < c.T; t++ {
				f.ds[i*c.T+t] = float32(math.NaN())
			}
		}
	}
	return f
}

// run runs Forward and Backward on ws (a fresh one if nil) and returns
// the scores, grad, and what Backward added to dkeys and dq.
func (f attFixture) run(ws *AttentionWorkspace) (scores, grad, dkeys, dq []float32) {
	c := f.c
	if ws == nil {
		ws = f.a.NewWorkspace(c.m, f.nodes, c.T)
		ws.Threads = c.threads
	}
	scores = nanSlice(c.m * c.T)
	f.a.Forward(ws, f.params, f.keys, c.lens, c.T, f.q, c.node, c.m, scores)
	grad = nanSlice(f.a.NumParams())
	dkeys, dq = slices.Clone(f.dkeysBase), slices.Clone(f.dqBase)
	f.a.Backward(ws, f.params, f.keys, c.lens, c.T, f.q, c.node, c.m, f.ds, grad, dkeys, dq)
	return scores, grad, dkeys, dq
}

// TestAttentionFiniteDifferences checks Forward against the float64
// reference loop and Backward against central differences of the float64
// loss Σ dscores ⊙ scores, with respect to every parameter, every valid
// key and every query, with and without the softmax, lengths from 0 to
// T, the identity mapping and queries that share a node. dkeys and dq
// must receive the gradient added to what they held, and the padding
// steps of dkeys must keep theirs; the padding of keys and dscores holds
// NaN, which must not reach any result.
func TestAttentionFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, c := range attCases {
		t.Run(c.name, func(t *testing.T) {
			f := newAttFixture(t, rng, c)
			scores, grad, dkeys, dq := f.run(nil)
			p64, k64, q64 := f64(f.params), f64(f.keys), f64(f.q)
			closeTo(t, "scores", scores, attentionForward64(f.a, p64, k64, c.lens, c.T, q64, c.node, c.m))
			loss := func() float64 {
				var l float64
				for i, v := range attentionForward64(f.a, p64, k64, c.lens, c.T, q64, c.node, c.m) {
					if i%c.T < seqLen(c.lens, c.node, i/c.T) {
						l += float64(f.ds[i]) * v
					}
				}
				return l
			}
			checkFD(t, "grad", grad, p64, loss, nil)
			validKey := func(i int) bool { return i%(c.T*c.dim) < int(c.lens[i/(c.T*c.dim)])*c.dim }
			added := make([]float32, len(dkeys))
			for i := range dkeys {
				added[i] = dkeys[i] - f.dkeysBase[i]
				if !validKey(i) && dkeys[i] != f.dkeysBase[i] {
					t.Fatalf("dkeys[%d] at a padding step changed", i)
				}
			}
			checkFD(t, "dkeys", added, k64, loss, validKey)
			for i := range dq {
				dq[i] -= f.dqBase[i]
			}
			checkFD(t, "dq", dq, q64, loss, nil)
		})
	}
}

// TestAttentionNilGradients checks that nil dkeys and dq leave grad as it
// is with them.
func TestAttentionNilGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	f := newAttFixture(t, rng, attCases[1])
	_, want, _, _ := f.run(nil)
	c := f.c
	ws := f.a.NewWorkspace(c.m, f.nodes, c.T)
	f.a.Forward(ws, f.params, f.keys, c.lens, c.T, f.q, c.node, c.m, make([]float32, c.m*c.T))
	grad := nanSlice(f.a.NumParams())
	f.a.Backward(ws, f.params, f.keys, c.lens, c.T, f.q, c.node, c.m, f.ds, grad, nil, nil)
	if !slices.Equal(grad, want) {
		t.Fatal("grad depends on whether dkeys and dq are asked for")
	}
}

// TestAttentionThreadsAndGrowth runs DIN's unit at a size that crosses
// the GEMM's parallel threshold: the results do not depend on the number
// of goroutines, a workspace made for a smaller shape grows and gives the
// same results, and they match the float64 reference.
func TestAttentionThreadsAndGrowth(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	for _, softmax := range []bool{false, true} {
		c := attCase{dim: 36, hidden: []int{80, 40}, softmax: softmax, T: 30, lens: make([]int32, 40), node: make([]int32, 300), m: 300}
		for j := range c.lens {
			c.lens[j] = int32(rng.IntN(c.T + 1))
		}
		for i := range c.node {
			c.node[i] = int32(rng.IntN(len(c.lens)))
		}
		f := newAttFixture(t, rng, c)
		f.c.threads = 1
		s1, g1, dk1, dq1 := f.run(nil)
		f.c.threads = 4
		s4, g4, dk4, dq4 := f.run(nil)
		if !slices.Equal(s1, s4) || !slices.Equal(g1, g4) || !slices.Equal(dk1, dk4) || !slices.Equal(dq1, dq4) {
			t.Fatalf("softmax=%v: results with 4 goroutines differ from 1", softmax)
		}
		small := f.a.NewWorkspace(1, 1, 1)
		small.Threads = 2
		ss, gs, dks, dqs := f.run(small)
		if !slices.Equal(s1, ss) || !slices.Equal(g1, gs) || !slices.Equal(dk1, dks) || !slices.Equal(dq1, dqs) {
			t.Fatalf("softmax=%v: results on a grown workspace differ", softmax)
		}
		closeTo(t, "scores", s1, attentionForward64(f.a, f64(f.params), f64(f.keys), c.lens, c.T, f64(f.q), c.node, c.m))
	}
}

func TestAttentionNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	c := attCase{dim: 36, hidden: []int{80, 40}, T: 50, lens: []int32{37}, node: make([]int32, 100), m: 100}
	f := newAttFixture(t, rng, c)
	ws := f.a.NewWorkspace(c.m, 1, c.T)
	ws.Threads = 1
	scores, grad := make([]float32, c.m*c.T), make([]float32, f.a.NumParams())
	dkeys, dq, pooled, dw := make([]float32, len(f.keys)), make([]float32, len(f.q)), make([]float32, c.m*c.dim), make([]float32, c.m*c.T)
	allocs := testing.AllocsPerRun(3, func() { // the warm-up run grows the packing buffers
		f.a.Forward(ws, f.params, f.keys, c.lens, c.T, f.q, c.node, c.m, scores)
		AttentionPool(pooled, f.keys, c.lens, c.T, c.dim, c.node, scores)
		AttentionPoolBackward(dkeys, dw, f.keys, c.lens, c.T, c.dim, c.node, scores, pooled, 0)
		f.a.Backward(ws, f.params, f.keys, c.lens, c.T, f.q, c.node, c.m, dw, grad, dkeys, dq)
	})
	if allocs > 0 {
		t.Fatalf("Forward+Backward allocate %v times per pass", allocs)
	}
}

func TestAttentionLayoutAndInit(t *testing.T) {
	a, err := NewAttention(4, []int{6, 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.NumParams(), (6*16+6+6)+(3*6+3+3)+(3+1); got != want {
		t.Fatalf("NumParams = %d, want %d", got, want)
	}
	p := make([]float32, a.NumParams())
	for i := range p {
		p[i] = float32(i)
	}
	off := 0
	for l := 0; l <= 2; l++ {
		w, b, alpha := a.LayerParams(p, l)
		if w[0] != float32(off) || b[0] != float32(off+len(w)) || (l < 2) != (alpha != nil) || (alpha != nil && alpha[0] != float32(off+len(w)+len(b))) {
			t.Fatalf("layer %d does not start at %d with W, b, α", l, off)
		}
		off += len(w) + len(b) + len(alpha)
	}
	q := make([]float32, a.NumParams())
	a.Init(p, 3)
	a.Init(q, 3)
	if !slices.Equal(p, q) {
		t.Fatal("Init is not deterministic")
	}
	for l := 0; l <= 2; l++ {
		in, _ := a.layerShape(l)
		bound := float32(1 / math.Sqrt(float64(in)))
		w, b, alpha := a.LayerParams(p, l)
		if slices.ContainsFunc(append(slices.Clone(w), b...), func(v float32) bool { return v < -bound || v > bound }) {
			t.Fatalf("layer %d: values outside ±%v", l, bound)
		}
		if slices.ContainsFunc(alpha, func(v float32) bool { return v != 0.25 }) {
			t.Fatalf("layer %d: PReLU slopes %v, want 0.25", l, alpha)
		}
	}
}

// attentionPool64 is AttentionPool's reference in float64.
func attentionPool64(keys []float64, lens []int32, T, dim int, node []int32, w []float64, m int) []float64 {
	out := make([]float64, m*dim)
	for i := 0; i < m; i++ {
		j := nodeOf(node, i)
		for t := 0; t < int(lens[j]); t++ {
			for c := 0; c < dim; c++ {
				out[i*dim+c] += w[i*T+t] * keys[(j*T+t)*dim+c]
			}
		}
	}
	return out
}

// TestAttentionPool checks AttentionPool against its reference and
// AttentionPoolBackward against central differences, with beta 0 (dkeys
// holds NaN before), 1 and 0.5.
func TestAttentionPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 80))
	const T, dim = 4, 3
	lens := []int32{4, 0, 2}
	for _, node := range [][]int32{nil, {2, 0, 0, 1, 2}} {
		m := len(node)
		if node == nil {
			m = len(lens)
		}
		keys, w, dout := randSlice(rng, len(lens)*T*dim), randSlice(rng, m*T), randSlice(rng, m*dim)
		for j, l := range lens { // NaN padding must not be read
			for k := int(l) * dim; k < T*dim; k++ {
				keys[j*T*dim+k] = float32(math.NaN())
			}
		}
		out := nanSlice(m * dim)
		AttentionPool(out, keys, lens, T, dim, node, w)
		k64, w64 := f64(keys), f64(w)
		closeTo(t, "out", out, attentionPool64(k64, lens, T, dim, node, w64, m))
		loss := func() float64 {
			var l float64
			for i, v := range attentionPool64(k64, lens, T, dim, node, w64, m) {
				l += float64(dout[i]) * v
			}
			return l
		}
		for _, beta := range []float32{0, 1, 0.5} {
			base := randSlice(rng, len(keys))
			dkeys, dw := slices.Clone(base), nanSlice(m*T)
			if beta == 0 {
				dkeys = nanSlice(len(keys))
			}
			AttentionPoolBackward(dkeys, dw, keys, lens, T, dim, node, w, dout, beta)
			validKey := func(i int) bool { return i%(T*dim) < int(lens[i/(T*dim)])*dim }
			for i := range dkeys {
				if beta != 0 {
					dkeys[i] -= beta * base[i]
				}
			}
			checkFD(t, fmt.Sprintf("dkeys(beta=%v)", beta), dkeys, k64, loss, validKey)
			checkFD(t, "dw", dw, w64, loss, func(i int) bool { return i%T < seqLen(lens, node, i/T) })
		}
	}
}

func TestAttentionErrorsAndPanics(t *testing.T) {
	for _, bad := range []struct {
		dim    int
		hidden []int
	}{{0, []int{3}}, {2, nil}, {2, []int{3, 0}}, {-1, []int{2}}} {
		if _, err := NewAttention(bad.dim, bad.hidden, false); !errors.Is(err, ErrBadSizes) {
			t.Errorf("NewAttention(%d, %v): %v, want ErrBadSizes", bad.dim, bad.hidden, err)
		}
	}
	a, _ := NewAttention(2, []int{3}, false)
	other, _ := NewAttention(2, []int{3}, false)
	p := make([]float32, a.NumParams())
	lens := []int32{2, 1}
	keys, q, s := make([]float32, 2*2*2), make([]float32, 2*2), make([]float32, 2*2)
	fwd := func() *AttentionWorkspace {
		ws := a.NewWorkspace(2, 2, 2)
		a.Forward(ws, p, keys, lens, 2, q, nil, 2, s)
		return ws
	}
	g := make([]float32, len(p))
	tests := []struct {
		name string
		f    func()
	}{
		{"layer out of range", func() { a.LayerParams(p, 2) }},
		{"short params", func() { a.Forward(a.NewWorkspace(2, 2, 2), p[1:], keys, lens, 2, q, nil, 2, s) }},
		{"short keys", func() { a.Forward(a.NewWorkspace(2, 2, 2), p, keys[1:], lens, 2, q, nil, 2, s) }},
		{"short q", func() { a.Forward(a.NewWorkspace(2, 2, 2), p, keys, lens, 2, q[1:], nil, 2, s) }},
		{"short scores", func() { a.Forward(a.NewWorkspace(2, 2, 2), p, keys, lens, 2, q, nil, 2, s[1:]) }},
		{"length over T", func() { a.Forward(a.NewWorkspace(2, 2, 2), p, keys, []int32{2, 3}, 2, q, nil, 2, s) }},
		{"node out of range", func() { a.Forward(a.NewWorkspace(2, 2, 2), p, keys, lens, 2, q, []int32{0, -1}, 2, s) }},
		{"foreign workspace", func() { a.Forward(other.NewWorkspace(2, 2, 2), p, keys, lens, 2, q, nil, 2, s) }},
		{"backward before forward", func() { a.Backward(a.NewWorkspace(2, 2, 2), p, keys, lens, 2, q, nil, 2, s, g, nil, nil) }},
		{"backward other shape", func() { a.Backward(fwd(), p, keys, lens, 2, q[:2], []int32{0}, 1, s[:2], g, nil, nil) }},
		{"backward short dkeys", func() { a.Backward(fwd(), p, keys, lens, 2, q, nil, 2, s, g, keys[1:], nil) }},
		{"backward short dq", func() { a.Backward(fwd(), p, keys, lens, 2, q, nil, 2, s, g, nil, q[1:]) }},
		{"pool short out", func() { AttentionPool(q[1:], keys, lens, 2, 2, nil, s) }},
		{"pool short w", func() { AttentionPool(q, keys, lens, 2, 2, nil, s[1:]) }},
		{"pool backward short dw", func() { AttentionPoolBackward(nil, s[1:], keys, lens, 2, 2, nil, s, q, 0) }},
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

// benchAttention runs DIN's unit (Dim 36, hidden [80, 40]) at the shapes
// of benchGRU (serving: one node with a full sequence of 50 and 100
// queries; training: 256 nodes with lengths between 25 and 50, a query
// each): Forward and the pooling, and with backward also the pooling's
// adjoint and Backward with dkeys and dq.
func benchAttention(b *testing.B, softmax, backward bool, nodes, m int) {
	rng := rand.New(rand.NewPCG(10, 10))
	const T = 50
	c := attCase{dim: 36, hidden: []int{80, 40}, softmax: softmax, T: T, lens: make([]int32, nodes), m: m}
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
	f := newAttFixture(b, rng, c)
	ws := f.a.NewWorkspace(m, nodes, T)
	scores, grad := make([]float32, m*T), make([]float32, f.a.NumParams())
	dkeys, dq, pooled, dw := make([]float32, len(f.keys)), make([]float32, len(f.q)), make([]float32, m*c.dim), make([]float32, m*T)
	pairs := 0
	for i := 0; i < m; i++ {
		pairs += seqLen(c.lens, c.node, i)
	}
	for b.Loop() {
		f.a.Forward(ws, f.params, f.keys, c.lens, T, f.q, c.node, m, scores)
		AttentionPool(pooled, f.keys, c.lens, T, c.dim, c.node, scores)
		if backward {
			AttentionPoolBackward(dkeys, dw, f.keys, c.lens, T, c.dim, c.node, scores, pooled, 0)
			f.a.Backward(ws, f.params, f.keys, c.lens, T, f.q, c.node, m, dw, grad, dkeys, dq)
		}
	}
	b.ReportMetric(float64(pairs)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

func BenchmarkAttentionForward_Serve(b *testing.B)         { benchAttention(b, false, false, 1, 100) }
func BenchmarkAttentionForwardBackward_Serve(b *testing.B) { benchAttention(b, false, true, 1, 100) }
func BenchmarkAttentionForwardBackward_Train(b *testing.B) { benchAttention(b, false, true, 256, 256) }
func BenchmarkAttentionSoftmaxForwardBackward_Train(b *testing.B) {
	benchAttention(b, true, true, 256, 256)
}
