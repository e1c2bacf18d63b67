package optim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refOpt is a dumb per-element reference of an optimizer, in float64, with
// its state in named per-element arrays (independent of the packed layout).
type refOpt struct {
	w      []float64
	a, b   []float64 // acc | m, v | z, n | v
	t      float64   // Adam's step count
	update func(r *refOpt, i int, g float64)
	step   func(r *refOpt) // once per Apply, before the elements
}

func newRef(w0 []float32, a0 float64, update func(r *refOpt, i int, g float64), step func(r *refOpt)) *refOpt {
	r := &refOpt{w: make([]float64, len(w0)), a: make([]float64, len(w0)), b: make([]float64, len(w0)), update: update, step: step}
	for i := range w0 {
		r.w[i] = float64(w0[i])
		r.a[i] = a0
	}
	return r
}

func (r *refOpt) apply(g []float32) {
	if r.step != nil {
		r.step(r)
	}
	for i := range g {
		r.update(r, i, float64(g[i]))
	}
}

func refFor(o Optimizer, w0 []float32) *refOpt {
	switch o := o.(type) {
	case SGD:
		lr := float64(o.LR)
		return newRef(w0, 0, func(r *refOpt, i int, g float64) { r.w[i] -= lr * g }, nil)
	case Adagrad:
		lr, eps := float64(o.LR), float64(o.Eps)
		return newRef(w0, float64(o.InitialAccumulator), func(r *refOpt, i int, g float64) {
			r.a[i] += g * g
			r.w[i] -= lr * g / (math.Sqrt(r.a[i]) + eps)
		}, nil)
	case Adam:
		lr, b1, b2, eps := float64(o.LR), float64(o.Beta1), float64(o.Beta2), float64(o.Eps)
		return newRef(w0, 0, func(r *refOpt, i int, g float64) {
			m := b1*r.a[i] + (1-b1)*g
			v := b2*r.b[i] + (1-b2)*g*g
			r.a[i], r.b[i] = m, v
			lrT := lr * math.Sqrt(1-math.Pow(b2, r.t)) / (1 - math.Pow(b1, r.t))
			r.w[i] -= lrT * m / (math.Sqrt(v) + eps)
		}, func(r *refOpt) { r.t++ })
	case FTRL:
		alpha, beta, l1, l2 := float64(o.Alpha), float64(o.Beta), float64(o.L1), float64(o.L2)
		return newRef(w0, 0, func(r *refOpt, i int, g float64) {
			z, n := r.a[i], r.b[i]
			nNew := n + g*g
			sigma := (math.Sqrt(nNew) - math.Sqrt(n)) / alpha
			z += g - sigma*r.w[i]
			r.a[i], r.b[i] = z, nNew
			if math.Abs(z) <= l1 {
				r.w[i] = 0
			} else {
				sign := 1.0
				if z < 0 {
					sign = -1
				}
				r.w[i] = -(z - sign*l1) / ((beta+math.Sqrt(nNew))/alpha + l2)
			}
		}, nil)
	case Momentum:
		lr, mu := float64(o.LR), float64(o.Momentum)
		return newRef(w0, 0, func(r *refOpt, i int, g float64) {
			r.a[i] = mu*r.a[i] + g
			r.w[i] -= lr * r.a[i]
		}, nil)
	}
	panic("no reference")
}

var testOptimizers = []struct {
	name string
	opt  Optimizer
}{
	{"sgd", SGD{LR: 0.1}},
	{"adagrad", Adagrad{LR: 0.05, InitialAccumulator: 0.1, Eps: 1e-8}},
	{"adagrad-zero-acc", Adagrad{LR: 0.05, InitialAccumulator: 0, Eps: 1e-6}},
	{"adam", Adam{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}},
	{"adam-fast-decay", Adam{LR: 0.1, Beta1: 0.5, Beta2: 0.7, Eps: 1e-3}},
	{"ftrl", FTRL{Alpha: 0.1, Beta: 1, L1: 0, L2: 0}},
	{"ftrl-l1-l2", FTRL{Alpha: 0.5, Beta: 1, L1: 0.3, L2: 0.2}},
	{"momentum", Momentum{LR: 0.05, Momentum: 0.9}},
}

func closeTo(got float32, want float64) bool {
	return math.Abs(float64(got)-want) <= 2e-5*math.Max(1, math.Abs(want))
}

// TestOptimizersAgainstReference runs each optimizer for several steps on
// rows of several lengths (a dense vector is one long row) and compares
// every weight with the float64 reference.
func TestOptimizersAgainstReference(t *testing.T) {
	for _, tc := range testOptimizers {
		for _, dim := range []int{1, 3, 16, 10_001} {
			rng := rand.New(rand.NewPCG(uint64(dim), 7))
			w := make([]float32, dim)
			for i := range w {
				w[i] = float32(rng.NormFloat64() * 0.1)
			}
			ref := refFor(tc.opt, w)
			state := make([]float32, tc.opt.StateWidth(dim))
			tc.opt.InitState(state)
			g := make([]float32, dim)
			for step := 0; step < 6; step++ {
				for i := range g {
					g[i] = float32(rng.NormFloat64())
					if step == 2 && i%3 == 0 {
						g[i] = 0 // zero gradients are updates too
					}
				}
				gCopy := append([]float32(nil), g...)
				tc.opt.Apply(w, state, g)
				ref.apply(g)
				for i := range g {
					if g[i] != gCopy[i] {
						t.Fatalf("%s: Apply modified g", tc.name)
					}
				}
				for i := range w {
					if !closeTo(w[i], ref.w[i]) {
						t.Fatalf("%s dim %d step %d: w[%d] = %v, reference %v", tc.name, dim, step, i, w[i], ref.w[i])
					}
				}
			}
			if a, ok := tc.opt.(Adam); ok {
				if got := state[2*dim]; got != 6 {
					t.Fatalf("%v: step count %v after 6 steps, want 6", a, got)
				}
			}
		}
	}
}

func TestOptimizerStateLayout(t *testing.T) {
	for _, tc := range []struct {
		opt   Optimizer
		width int // for dim 5
		init  float32
	}{
		{SGD{LR: 1}, 0, 0},
		{Adagrad{LR: 1, InitialAccumulator: 0.25, Eps: 1e-8}, 5, 0.25},
		{Adam{LR: 1, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}, 11, 0},
		{FTRL{Alpha: 1, Beta: 1}, 10, 0},
		{Momentum{LR: 1, Momentum: 0.9}, 5, 0},
	} {
		if got := tc.opt.StateWidth(5); got != tc.width {
			t.Errorf("%T: StateWidth(5) = %d, want %d", tc.opt, got, tc.width)
		}
		state := make([]float32, tc.width)
		for i := range state {
			state[i] = 42
		}
		tc.opt.InitState(state)
		for i, v := range state {
			if v != tc.init {
				t.Errorf("%T: state[%d] = %v after InitState, want %v", tc.opt, i, v, tc.init)
			}
		}
	}
}

func TestOptimizerApplyPanicsOnLengthMismatch(t *testing.T) {
	for _, tc := range testOptimizers {
		for _, c := range []struct{ w, state, g int }{
			{4, tc.opt.StateWidth(4), 3},
			{4, tc.opt.StateWidth(4) + 1, 4},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: Apply(len w %d, state %d, g %d) did not panic", tc.name, c.w, c.state, c.g)
					}
				}()
				tc.opt.Apply(make([]float32, c.w), make([]float32, c.state), make([]float32, c.g))
			}()
		}
	}
}

func TestOptimizerApplyDoesNotAllocate(t *testing.T) {
	for _, tc := range testOptimizers {
		w := make([]float32, 16)
		st := make([]float32, tc.opt.StateWidth(16))
		tc.opt.InitState(st)
		g := make([]float32, 16)
		opt := tc.opt
		if n := testing.AllocsPerRun(100, func() { opt.Apply(w, st, g) }); n != 0 {
			t.Errorf("%s: Apply allocates %v times", tc.name, n)
		}
	}
}
