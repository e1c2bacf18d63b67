package optim

import (
	"fmt"
	"math"
)

// Optimizer is a server-side update rule. It sees one row at a time: a
// sparse table calls Apply once per pushed ID with that row's weights, its
// optimizer state and its gradient; a dense variable calls it once with the
// whole vector as one long row. Implementations therefore keep all state
// per row (including Adam's step count) and make no assumption on the
// row length.
//
// Implementations are immutable values, safe to share between tables and
// goroutines; the slices they are given belong to the caller.
type Optimizer interface {
	// StateWidth returns the number of float32 state words a row of dim
	// weights needs (0 for SGD).
	StateWidth(dim int) int
	// InitState writes the initial state of a fresh row into state, whose
	// length is StateWidth(dim) for the row's dim.
	InitState(state []float32)
	// Apply updates the weights w and the state in place with gradient g.
	// It panics unless len(g) == len(w) and len(state) == StateWidth(len(w)).
	// g is not modified.
	Apply(w, state, g []float32)
}

// checkApply panics unless len(g) == len(w) and len(state) == width. It
// takes no interface value, so the check allocates nothing.
func checkApply(name string, w, state, g []float32, width int) {
	if len(g) != len(w) || len(state) != width {
		badApply(name, len(w), len(g), len(state), width)
	}
}

func badApply(name string, w, g, state, width int) {
	panic(fmt.Sprintf("optim: %s.Apply: len(w)=%d len(g)=%d len(state)=%d, want len(g)=len(w) and len(state)=%d",
		name, w, g, state, width))
}

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// SGD is plain stochastic gradient descent. It keeps no state.
//
//	for i := range w {
//		w[i] -= LR * g[i]
//	}
type SGD struct {
	LR float32
}

// StateWidth implements Optimizer.
func (SGD) StateWidth(int) int { return 0 }

// InitState implements Optimizer.
func (SGD) InitState([]float32) {}

// Apply implements Optimizer.
func (o SGD) Apply(w, state, g []float32) {
	checkApply("SGD", w, state, g, 0)
	g = g[:len(w)]
	for i := range w {
		w[i] -= o.LR * g[i]
	}
}

// Adagrad keeps a sum of squared gradients per weight (Duchi et al. 2011,
// in the Keras form with Eps outside the root). State: acc[dim], each
// starting at InitialAccumulator.
//
//	for i := range w {
//		acc[i] += g[i] * g[i]
//		w[i] -= LR * g[i] / (sqrt(acc[i]) + Eps)
//	}
type Adagrad struct {
	LR                 float32
	InitialAccumulator float32
	Eps                float32
}

// StateWidth implements Optimizer.
func (Adagrad) StateWidth(dim int) int { return dim }

// InitState implements Optimizer.
func (o Adagrad) InitState(state []float32) {
	for i := range state {
		state[i] = o.InitialAccumulator
	}
}

// Apply implements Optimizer.
func (o Adagrad) Apply(w, state, g []float32) {
	checkApply("Adagrad", w, state, g, len(w))
	acc, g := state[:len(w)], g[:len(w)]
	// Rows of 8 or more run their multiple-of-8 prefix through the vector
	// kernel where there is one (amd64 with AVX, optkernel_amd64.s),
	// bit-identical to this loop, as Adam's: a row of dim 18 does 16 of
	// its square roots and divisions in two instructions each.
	if len(w) >= 8 {
		k := adagradBlocks(w, acc, g, o.LR, o.Eps)
		w, acc, g = w[k:], acc[k:], g[k:]
	}
	acc, g = acc[:len(w)], g[:len(w)]
	for i := range w {
		a := acc[i] + float32(g[i]*g[i]) // the conversion forbids a fused multiply-add
		acc[i] = a
		w[i] -= o.LR * g[i] / (sqrt32(a) + o.Eps)
	}
}

// Adam is Adam (Kingma & Ba 2015) with lazy, per-row moments: a row's
// moments decay only when the row itself is updated, and its bias
// correction uses the row's own step count t, kept in its state (as in
// TensorFlow's LazyAdam, but with a per-row instead of a global step).
// State: m[dim], v[dim], t, all starting at 0. The update is the
// "epsilon hat" form of the paper's section 2 (also TensorFlow's):
//
//	t++
//	lrT := LR * sqrt(1 - Beta2^t) / (1 - Beta1^t)
//	for i := range w {
//		m[i] = Beta1*m[i] + (1-Beta1)*g[i]
//		v[i] = Beta2*v[i] + (1-Beta2)*g[i]*g[i]
//		w[i] -= lrT * m[i] / (sqrt(v[i]) + Eps)
//	}
//
// t is stored as a float32 and so stops growing at 2^24 steps, where both
// bias corrections equal 1 to float32 precision.
type Adam struct {
	LR    float32
	Beta1 float32
	Beta2 float32
	Eps   float32
}

// StateWidth implements Optimizer.
func (Adam) StateWidth(dim int) int { return 2*dim + 1 }

// InitState implements Optimizer.
func (Adam) InitState(state []float32) { clear(state) }

// Apply implements Optimizer.
func (o Adam) Apply(w, state, g []float32) {
	checkApply("Adam", w, state, g, 2*len(w)+1)
	n := len(w)
	m, v, g := state[:n], state[n:2*n], g[:n]
	t := state[2*n] + 1
	state[2*n] = t
	bc1 := 1 - math.Pow(float64(o.Beta1), float64(t))
	bc2 := 1 - math.Pow(float64(o.Beta2), float64(t))
	lrT := float32(float64(o.LR) * math.Sqrt(bc2) / bc1)
	b1, b2 := o.Beta1, o.Beta2
	c1, c2 := 1-b1, 1-b2
	// Rows of 16 or more run through the vector kernel where there is one
	// (amd64 with AVX, see optkernel_amd64.s), which leaves at most 7 elements
	// to the loop; shorter rows, the common sparse case, skip the call.
	// The kernel rounds every operation as the loop does. The float32
	// conversions forbid fused multiply-adds, so the loop rounds the same
	// way on every architecture and GOAMD64 level, and results are
	// bit-identical with and without the kernel.
	if n >= 16 {
		k := adamBlocks(w, m, v, g, b1, c1, b2, c2, lrT, o.Eps)
		w, m, v, g = w[k:], m[k:], v[k:], g[k:]
	}
	m, v, g = m[:len(w)], v[:len(w)], g[:len(w)]
	for i := range w {
		gi := g[i]
		mi := float32(b1*m[i]) + float32(c1*gi)
		vi := float32(b2*v[i]) + float32(c2*gi*gi)
		m[i], v[i] = mi, vi
		w[i] -= lrT * mi / (sqrt32(vi) + o.Eps)
	}
}

// FTRL is FTRL-Proximal (McMahan et al. 2013, "Ad Click Prediction: a View
// from the Trenches", algorithm 1) with per-coordinate learning rates.
// State: z[dim], n[dim], starting at 0. Alpha is the learning rate.
//
//	for i := range w {
//		nNew := n[i] + g[i]*g[i]
//		sigma := (sqrt(nNew) - sqrt(n[i])) / Alpha
//		z[i] += g[i] - sigma*w[i]
//		n[i] = nNew
//		if abs(z[i]) <= L1 {
//			w[i] = 0
//		} else {
//			w[i] = -(z[i] - sign(z[i])*L1) / ((Beta+sqrt(n[i]))/Alpha + L2)
//		}
//	}
//
// The first update of a row starts from its initialised weights (z absorbs
// them through sigma*w), as in TensorFlow's Ftrl; Beta+sqrt(n) must stay
// positive, which OptimizerSpec.Validate ensures by requiring Beta > 0 or
// L2 > 0.
type FTRL struct {
	Alpha float32
	Beta  float32
	L1    float32
	L2    float32
}

// StateWidth implements Optimizer.
func (FTRL) StateWidth(dim int) int { return 2 * dim }

// InitState implements Optimizer.
func (FTRL) InitState(state []float32) { clear(state) }

// Apply implements Optimizer.
func (o FTRL) Apply(w, state, g []float32) {
	checkApply("FTRL", w, state, g, 2*len(w))
	d := len(w)
	z, n, g := state[:d], state[d:2*d], g[:d]
	invAlpha := 1 / o.Alpha
	for i := range w {
		gi := g[i]
		ni := n[i]
		nNew := ni + gi*gi
		sNew := sqrt32(nNew)
		sigma := (sNew - sqrt32(ni)) * invAlpha
		zi := z[i] + gi - sigma*w[i]
		z[i], n[i] = zi, nNew
		switch {
		case zi > o.L1:
			w[i] = -(zi - o.L1) / ((o.Beta+sNew)*invAlpha + o.L2)
		case zi < -o.L1:
			w[i] = -(zi + o.L1) / ((o.Beta+sNew)*invAlpha + o.L2)
		default:
			w[i] = 0
		}
	}
}

// Momentum is SGD with heavy-ball momentum (TensorFlow's MomentumOptimizer
// without Nesterov). State: v[dim], starting at 0.
//
//	for i := range w {
//		v[i] = Momentum*v[i] + g[i]
//		w[i] -= LR * v[i]
//	}
type Momentum struct {
	LR       float32
	Momentum float32
}

// StateWidth implements Optimizer.
func (Momentum) StateWidth(dim int) int { return dim }

// InitState implements Optimizer.
func (Momentum) InitState(state []float32) { clear(state) }

// Apply implements Optimizer.
func (o Momentum) Apply(w, state, g []float32) {
	checkApply("Momentum", w, state, g, len(w))
	v, g := state[:len(w)], g[:len(w)]
	for i := range w {
		vi := o.Momentum*v[i] + g[i]
		v[i] = vi
		w[i] -= o.LR * vi
	}
}
