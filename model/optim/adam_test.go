package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// adamLoopRef is Adam.Apply's element loop as it was before the vector
// kernel, kept verbatim as the reference. The compiler may fuse its
// multiply-adds (arm64, GOAMD64=v3), so it matches Apply to within a few
// ulps of each sum's terms, and bit for bit where it does not fuse
// (GOAMD64=v1, the default).
func adamLoopRef(w, m, v, g []float32, b1, b2, lrT, eps float32) {
	for i := range w {
		gi := g[i]
		mi := b1*m[i] + (1-b1)*gi
		vi := b2*v[i] + (1-b2)*gi*gi
		m[i], v[i] = mi, vi
		w[i] -= lrT * mi / (sqrt32(vi) + eps)
	}
}

// adamLRT is Adam.Apply's bias-corrected learning rate for step t.
func adamLRT(o Adam, t float32) float32 {
	bc1 := 1 - math.Pow(float64(o.Beta1), float64(t))
	bc2 := 1 - math.Pow(float64(o.Beta2), float64(t))
	return float32(float64(o.LR) * math.Sqrt(bc2) / bc1)
}

// adamInputs returns random weights, state [m v t] and gradients for a
// row of n, with zeros, tiny and large gradients mixed in. The slices are
// separate allocations: w, the state and g must not overlap (m and v are
// disjoint parts of the state), for the kernel as for Apply.
func adamInputs(rng *rand.Rand, n int) (w, state, g []float32) {
	w, state, g = make([]float32, n), make([]float32, 2*n+1), make([]float32, n)
	for i := range n {
		w[i] = float32(rng.NormFloat64() * 0.1)
		state[i] = float32(rng.NormFloat64() * 0.01)
		state[n+i] = float32(math.Abs(rng.NormFloat64()) * 1e-3)
		switch rng.IntN(8) {
		case 0:
			g[i] = 0
		case 1:
			g[i] = float32(rng.NormFloat64() * 1e-20) // g*g underflows
		case 2:
			g[i] = float32(rng.NormFloat64() * 1e3)
		default:
			g[i] = float32(rng.NormFloat64())
		}
	}
	state[2*n] = float32(rng.IntN(20))
	return w, state, g
}

// within reports whether got is within a relative 1e-6 of want, measured
// against scale, the sum of the magnitudes of the terms that make want
// (so that cancellation does not magnify a rounding difference).
func within(got, want, scale float32) bool {
	s := math.Max(math.Abs(float64(want)), math.Abs(float64(scale)))
	return math.Abs(float64(got)-float64(want)) <= 1e-6*s
}

func abs32(x float32) float32 { return float32(math.Abs(float64(x))) }

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

var adamTestOpts = []Adam{
	{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
	{LR: 0.1, Beta1: 0.5, Beta2: 0.7, Eps: 1e-3},
}

var adamTestLens = func() []int {
	ns := []int{1000, 100_003}
	for n := 40; n >= 0; n-- {
		ns = append([]int{n}, ns...)
	}
	return ns
}()

// withOptAVX runs f with the vector kernel enabled (if the CPU has it) or
// disabled.
func withOptAVX(on bool, f func()) {
	saved := haveOptAVX
	haveOptAVX = on && saved
	defer func() { haveOptAVX = saved }()
	f()
}

// TestAdamApplyKernel checks Adam.Apply, with the vector kernel (where this
// build and CPU have one) and without, against the old scalar loop within
// a relative 1e-6 on w, m and v, and the two paths against each other bit
// for bit.
func TestAdamApplyKernel(t *testing.T) {
	t.Logf("vector kernel: %v", haveOptAVX)
	for _, o := range adamTestOpts {
		for _, n := range adamTestLens {
			rng := rand.New(rand.NewPCG(uint64(n), 11))
			for step := range 3 {
				w0, st0, g := adamInputs(rng, n)
				gCopy := slices.Clone(g)

				wRef, stRef := slices.Clone(w0), slices.Clone(st0)
				lrT := adamLRT(o, st0[2*n]+1)
				adamLoopRef(wRef, stRef[:n], stRef[n:2*n], g, o.Beta1, o.Beta2, lrT, o.Eps)

				wVec, stVec := slices.Clone(w0), slices.Clone(st0)
				withOptAVX(true, func() { o.Apply(wVec, stVec, g) })
				wGo, stGo := slices.Clone(w0), slices.Clone(st0)
				withOptAVX(false, func() { o.Apply(wGo, stGo, g) })

				if !sameBits(g, gCopy) {
					t.Fatalf("%v n=%d: Apply modified g", o, n)
				}
				if !sameBits(wVec, wGo) || !sameBits(stVec, stGo) {
					t.Fatalf("%v n=%d step %d: kernel and scalar loop differ", o, n, step)
				}
				if got, want := stVec[2*n], st0[2*n]+1; got != want {
					t.Fatalf("%v n=%d: t = %v, want %v", o, n, got, want)
				}
				for i := range n {
					mScale := abs32(o.Beta1*st0[i]) + abs32((1-o.Beta1)*g[i])
					vScale := o.Beta2*st0[n+i] + (1-o.Beta2)*g[i]*g[i]
					wScale := abs32(w0[i]) + abs32(w0[i]-wRef[i])
					if !within(wVec[i], wRef[i], wScale) || !within(stVec[i], stRef[i], mScale) || !within(stVec[n+i], stRef[n+i], vScale) {
						t.Fatalf("%v n=%d step %d: i=%d w, m, v = %v %v %v, reference %v %v %v", o, n, step, i,
							wVec[i], stVec[i], stVec[n+i], wRef[i], stRef[i], stRef[n+i])
					}
				}
			}
		}
	}
}

// TestAdamBlocks calls the kernel directly on every length (Apply uses it
// only from 16 up): it must do the longest multiple-of-8 prefix, or nothing
// without AVX, bit for bit as Apply's scalar loop does, and leave the rest
// alone.
func TestAdamBlocks(t *testing.T) {
	o := adamTestOpts[0]
	for _, n := range adamTestLens {
		rng := rand.New(rand.NewPCG(uint64(n), 12))
		w0, st0, g := adamInputs(rng, n)
		st0[2*n] = 2
		lrT := adamLRT(o, 3)
		wGo, stGo := slices.Clone(w0), slices.Clone(st0)
		withOptAVX(false, func() { o.Apply(wGo, stGo, g) })
		w, st := slices.Clone(w0), slices.Clone(st0)
		m, v := st[:n], st[n:2*n]
		k := adamBlocks(w, m, v, g, o.Beta1, 1-o.Beta1, o.Beta2, 1-o.Beta2, lrT, o.Eps)
		want := 0
		if haveOptAVX {
			want = n &^ 7
		}
		if k != want {
			t.Fatalf("n=%d: adamBlocks did %d elements, want %d", n, k, want)
		}
		if !sameBits(w[:k], wGo[:k]) || !sameBits(m[:k], stGo[:k]) || !sameBits(v[:k], stGo[n:n+k]) {
			t.Fatalf("n=%d: kernel differs from the scalar loop", n)
		}
		if !sameBits(w[k:], w0[k:]) || !sameBits(m[k:], st0[k:n]) || !sameBits(v[k:], st0[n+k:2*n]) {
			t.Fatalf("n=%d: kernel wrote past element %d", n, k)
		}
	}
}

// Run:
//
//	go test -run='^$' -bench=AdamApply -benchtime=2000x ./ams
func BenchmarkAdamApply_N8(b *testing.B)      { benchAdamApply(b, 8) }
func BenchmarkAdamApply_N18(b *testing.B)     { benchAdamApply(b, 18) }
func BenchmarkAdamApply_N100000(b *testing.B) { benchAdamApply(b, 100_000) }

func benchAdamApply(b *testing.B, n int) {
	opt := Adam{LR: 0.001, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	rng := rand.New(rand.NewPCG(1, 2))
	w, st, g := make([]float32, n), make([]float32, opt.StateWidth(n)), make([]float32, n)
	for i := range n {
		// Normal numbers only: subnormal operands take microcode assists
		// that would swamp what this measures.
		w[i] = float32(rng.NormFloat64() * 0.1)
		g[i] = float32(rng.NormFloat64() * 0.1)
	}
	b.SetBytes(int64(n) * 4 * 4)
	b.ResetTimer()
	for range b.N {
		opt.Apply(w, st, g)
		st[2*n] = 0 // stay at t = 1, whatever b.N
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/element")
}

// TestAdagradApplyKernel checks Adagrad.Apply with the vector kernel (where
// this build and CPU have one) against the scalar loop alone, bit for bit,
// on every length up to 40 and two long ones, over three steps (the
// accumulators grow), and adagradBlocks called directly: the longest
// multiple-of-8 prefix, or nothing without AVX, and nothing past it.
func TestAdagradApplyKernel(t *testing.T) {
	t.Logf("vector kernel: %v", haveOptAVX)
	o := Adagrad{LR: 0.05, InitialAccumulator: 0.1, Eps: 1e-7}
	for _, n := range adamTestLens {
		rng := rand.New(rand.NewPCG(uint64(n), 13))
		w0, st, g := adamInputs(rng, n)
		acc0 := st[n : 2*n] // non-negative
		wVec, accVec := slices.Clone(w0), slices.Clone(acc0)
		wGo, accGo := slices.Clone(w0), slices.Clone(acc0)
		gCopy := slices.Clone(g)
		for step := range 3 {
			withOptAVX(true, func() { o.Apply(wVec, accVec, g) })
			withOptAVX(false, func() { o.Apply(wGo, accGo, g) })
			if !sameBits(g, gCopy) {
				t.Fatalf("n=%d: Apply modified g", n)
			}
			if !sameBits(wVec, wGo) || !sameBits(accVec, accGo) {
				t.Fatalf("n=%d step %d: kernel and scalar loop differ", n, step)
			}
		}
		w, acc := slices.Clone(w0), slices.Clone(acc0)
		k := adagradBlocks(w, acc, g, o.LR, o.Eps)
		want := 0
		if haveOptAVX {
			want = n &^ 7
		}
		wGo, accGo = slices.Clone(w0), slices.Clone(acc0)
		withOptAVX(false, func() { o.Apply(wGo, accGo, g) })
		if k != want {
			t.Fatalf("n=%d: adagradBlocks did %d elements, want %d", n, k, want)
		}
		if !sameBits(w[:k], wGo[:k]) || !sameBits(acc[:k], accGo[:k]) {
			t.Fatalf("n=%d: adagradBlocks differs from the scalar loop", n)
		}
		if !sameBits(w[k:], w0[k:]) || !sameBits(acc[k:], acc0[k:]) {
			t.Fatalf("n=%d: adagradBlocks wrote past element %d", n, k)
		}
	}
}

// Run:
//
//	go test -run='^$' -bench=AdagradApply -benchtime=2000x ./ams
func BenchmarkAdagradApply_N18(b *testing.B) {
	for _, vec := range []bool{false, true} {
		b.Run(fmt.Sprintf("kernel=%v", vec && haveOptAVX), func(b *testing.B) {
			const n = 18
			o := Adagrad{LR: 0.05, InitialAccumulator: 0.1, Eps: 1e-7}
			rng := rand.New(rand.NewPCG(1, 2))
			rows := make([][3][]float32, 1024) // w, acc, g of rows in L1/L2
			for i := range rows {
				for j := range rows[i] {
					rows[i][j] = make([]float32, n)
					for k := range n {
						rows[i][j][k] = float32(rng.Float64()*0.1 + 0.01)
					}
				}
			}
			withOptAVX(vec, func() {
				for i := 0; b.Loop(); i++ {
					r := &rows[i%len(rows)]
					o.Apply(r[0], r[1], r[2])
				}
			})
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
		})
	}
}
