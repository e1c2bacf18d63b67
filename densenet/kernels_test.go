package densenet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var vectorLengths = []int{0, 1, 2, 3, 4, 5, 7, 8, 17, 64, 1001}

func TestAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range vectorLengths {
		for _, alpha := range []float32{0, 1, -2.5} {
			t.Run(fmt.Sprintf("n=%d/alpha=%v", n, alpha), func(t *testing.T) {
				dst, x := randSlice(rng, n), randSlice(rng, n)
				want := f64(dst)
				for i := range want {
					want[i] += float64(alpha) * float64(x[i])
				}
				x0 := slices.Clone(x)
				Axpy(dst, alpha, x)
				if !slices.Equal(x, x0) {
					t.Fatal("Axpy modified x")
				}
				for i := range want {
					// One rounding, or two without a fused multiply-add.
					if tol := 2 * (math.Abs(want[i]) + math.Abs(float64(alpha*x[i]))) / (1 << 24); math.Abs(float64(dst[i])-want[i]) > tol {
						t.Fatalf("Axpy[%d] = %v, want %v", i, dst[i], want[i])
					}
				}
			})
		}
	}
}

func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range vectorLengths {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			x, y := randSlice(rng, n), randSlice(rng, n)
			var want, scale float64
			for i := range x {
				want += float64(x[i]) * float64(y[i])
				scale += math.Abs(float64(x[i]) * float64(y[i]))
			}
			got := float64(Dot(x, y))
			if tol := float64(n+1) * scale / (1 << 23); math.Abs(got-want) > tol {
				t.Fatalf("Dot = %v, want %v (tol %g)", got, want, tol)
			}
		})
	}
}

func TestRowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	shapes := []struct{ rows, cols int }{{0, 3}, {1, 1}, {3, 5}, {4, 7}, {17, 33}, {2, 1}}
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("%dx%d", sh.rows, sh.cols), func(t *testing.T) {
			n := sh.rows * sh.cols
			bias, m := randSlice(rng, sh.cols), randSlice(rng, n)

			gotB, wantB := slices.Clone(m), slices.Clone(m)
			gotR, wantR := slices.Clone(m), slices.Clone(m)
			for i := 0; i < sh.rows; i++ {
				for j := 0; j < sh.cols; j++ {
					v := wantB[i*sh.cols+j] + bias[j]
					wantB[i*sh.cols+j] = v
					wantR[i*sh.cols+j] = max(v, 0)
				}
			}
			AddBias(gotB, bias)
			AddBiasReLU(gotR, bias)
			if !slices.Equal(gotB, wantB) {
				t.Errorf("AddBias = %v, want %v", gotB, wantB)
			}
			if !slices.Equal(gotR, wantR) {
				t.Errorf("AddBiasReLU = %v, want %v", gotR, wantR)
			}
			m0 := slices.Clone(m)
			gotT := randSlice(rng, n) // overwritten
			AddBiasReLUTo(gotT, m, bias)
			if !slices.Equal(gotT, wantR) || !slices.Equal(m, m0) {
				t.Errorf("AddBiasReLUTo = %v, want %v (x modified: %v)", gotT, wantR, !slices.Equal(m, m0))
			}
			AddBiasReLUTo(m0, m0, bias) // in place
			if !slices.Equal(m0, wantR) {
				t.Errorf("in-place AddBiasReLUTo = %v, want %v", m0, wantR)
			}

			grad, act := randSlice(rng, n), slices.Clone(wantR)
			wantG := make([]float32, n)
			for i := range act {
				if act[i] > 0 {
					wantG[i] = grad[i]
				}
			}
			gotG := make([]float32, n)
			ReLUBackward(gotG, grad, act)
			if !slices.Equal(gotG, wantG) {
				t.Errorf("ReLUBackward = %v, want %v", gotG, wantG)
			}
			ReLUBackward(grad, grad, act) // in place
			if !slices.Equal(grad, wantG) {
				t.Errorf("in-place ReLUBackward = %v, want %v", grad, wantG)
			}

			sums := randSlice(rng, sh.cols) // overwritten
			wantS := make([]float32, sh.cols)
			for i := 0; i < sh.rows; i++ {
				for j := 0; j < sh.cols; j++ {
					wantS[j] += m[i*sh.cols+j]
				}
			}
			ColSums(sums, m)
			if !slices.Equal(sums, wantS) {
				t.Errorf("ColSums = %v, want %v", sums, wantS)
			}
		})
	}
}

func TestAddBiasReLUKeepsNaN(t *testing.T) {
	x := []float32{float32(math.NaN()), -1}
	AddBiasReLU(x, []float32{0})
	if !math.IsNaN(float64(x[0])) || x[1] != 0 {
		t.Fatalf("got %v, want [NaN 0]", x)
	}
	y := make([]float32, 2)
	AddBiasReLUTo(y, []float32{float32(math.NaN()), -1}, []float32{0})
	if !math.IsNaN(float64(y[0])) || y[1] != 0 {
		t.Fatalf("AddBiasReLUTo: got %v, want [NaN 0]", y)
	}
}

func TestVectorKernelPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"Axpy", func() { Axpy(make([]float32, 3), 1, make([]float32, 2)) }},
		{"Dot", func() { Dot(make([]float32, 3), make([]float32, 4)) }},
		{"AddBias", func() { AddBias(make([]float32, 5), make([]float32, 2)) }},
		{"AddBiasReLU zero cols", func() { AddBiasReLU(make([]float32, 1), nil) }},
		{"AddBiasReLUTo", func() { AddBiasReLUTo(make([]float32, 4), make([]float32, 6), make([]float32, 2)) }},
		{"AddBiasReLUTo rows", func() { AddBiasReLUTo(make([]float32, 5), make([]float32, 5), make([]float32, 2)) }},
		{"ReLUBackward", func() { ReLUBackward(make([]float32, 2), make([]float32, 2), make([]float32, 3)) }},
		{"ColSums", func() { ColSums(make([]float32, 3), make([]float32, 4)) }},
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
