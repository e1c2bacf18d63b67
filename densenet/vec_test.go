package densenet

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestVecKernels checks the element-wise kernels that have a SIMD part
// (addPReLU, preluBackward, Axpy) against their reference loops, written
// out here, at every length from 0 to 41 (so every split of SIMD part
// and Go tail), on values with both signs, zeros of both signs and a
// NaN, which must come out NaN as in the loops.
func TestVecKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		if n > 3 {
			v[1], v[2] = 0, float32(math.Copysign(0, -1))
		}
		return v
	}
	for h := 0; h <= 41; h++ {
		for _, withY := range []bool{false, true} {
			z, x, alpha := vec(h), vec(h), vec(h)
			var y []float32
			if withY {
				y = vec(h)
			}
			if h > 5 {
				z[5] = float32(math.NaN())
			}
			wantZ, wantAct := append([]float32(nil), z...), make([]float32, h)
			for o := range wantZ {
				wantZ[o] += x[o]
				if withY {
					wantZ[o] += y[o]
				}
				wantAct[o] = max(wantZ[o], 0) + alpha[o]*min(wantZ[o], 0)
			}
			act := make([]float32, h)
			addPReLU(act, z, x, y, alpha)
			vecClose(t, "addPReLU z", h, z, wantZ)
			vecClose(t, "addPReLU act", h, act, wantAct)
		}
		for _, rows := range []int{1, 3} {
			g, z, alpha := vec(rows*h), vec(rows*h), vec(h)
			wantG, wantGA := append([]float32(nil), g...), make([]float32, h)
			for r := 0; r < rows; r++ {
				for o := 0; o < h; o++ {
					v := z[r*h+o]
					wantGA[o] += wantG[r*h+o] * min(v, 0)
					if math.Signbit(float64(v)) {
						wantG[r*h+o] *= alpha[o]
					}
				}
			}
			galpha := vec(h) // overwritten
			preluBackward(g, z, alpha, galpha)
			vecClose(t, "preluBackward g", h, g, wantG)
			vecClose(t, "preluBackward galpha", h, galpha, wantGA)
		}
		dst, x := vec(h), vec(h)
		want := append([]float32(nil), dst...)
		for i := range want {
			want[i] += 0.7 * x[i]
		}
		Axpy(dst, 0.7, x)
		vecClose(t, "Axpy", h, dst, want)
	}
}

func vecClose(t *testing.T, what string, h int, got, want []float32) {
	t.Helper()
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) != math.IsNaN(g) || math.Abs(g-w) > 1e-6*(1+math.Abs(w)) {
			t.Fatalf("%s, length %d: [%d] = %v, want %v", what, h, i, got[i], want[i])
		}
	}
}

// TestReLUKernels checks AddBiasReLU, AddBiasReLUTo, ReLUBackward and
// ColSums, which have a SIMD part, bit for bit against their reference
// loops, written out here, at every row width from 0 to 41 and 1 or 3 rows,
// on values with both signs, zeros of both signs, a NaN and an infinity:
// -0 and NaN must pass the ReLU as in the loop, and a NaN activation must
// stop the gradient.
func TestReLUKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			switch rng.IntN(10) {
			case 0:
				v[i] = float32(math.Copysign(0, -1))
			case 1:
				v[i] = 0
			case 2:
				v[i] = float32(math.NaN())
			case 3:
				v[i] = float32(math.Inf(rng.IntN(2)*2 - 1))
			default:
				v[i] = float32(rng.NormFloat64())
			}
		}
		return v
	}
	same := func(name string, h, rows int, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s, width %d, %d rows: element %d = %v (%#x), the loop gives %v (%#x)",
					name, h, rows, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	for h := 0; h <= 41; h++ {
		for _, rows := range []int{1, 3} {
			x, bias := vec(rows*h), vec(h)
			want := make([]float32, len(x))
			for i := range rows {
				for j := range h {
					v := x[i*h+j] + bias[j]
					if v < 0 {
						v = 0
					}
					want[i*h+j] = v
				}
			}
			got := make([]float32, len(x))
			AddBiasReLUTo(got, x, bias)
			same("AddBiasReLUTo", h, rows, got, want)
			got = append([]float32(nil), x...)
			AddBiasReLU(got, bias)
			same("AddBiasReLU", h, rows, got, want)

			grad, act := vec(rows*h), vec(rows*h)
			want = make([]float32, len(grad))
			for i, a := range act {
				if a > 0 {
					want[i] = grad[i]
				}
			}
			got = make([]float32, len(grad))
			ReLUBackward(got, grad, act)
			same("ReLUBackward", h, rows, got, want)
			ReLUBackward(grad, grad, act) // in place
			same("ReLUBackward in place", h, rows, grad, want)

			src := vec(rows * h)
			want = make([]float32, h)
			for j := range h {
				for i := range rows {
					want[j] += src[i*h+j]
				}
			}
			got = vec(h) // overwritten
			ColSums(got, src)
			same("ColSums", h, rows, got, want)
		}
	}
}
