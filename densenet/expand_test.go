package densenet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExpandReduceTree checks ExpandTree against the tests' expansion and
// ReduceTree against the sums of the flat gradient's blocks, with beta 0
// (dX not read), 1 and another value, and a nil dX[k].
func TestExpandReduceTree(t *testing.T) {
	tests := []struct {
		cols, count []int
	}{
		{[]int{0, 5}, []int{4}},
		{[]int{0, 3, 9}, []int{8, 3}},
		{[]int{0, 0, 5}, []int{7, 2}},
		{[]int{0, 2, 2}, []int{5, 2}},
		{[]int{0, 2, 3}, []int{0, 0}},
		{[]int{0, 2, 6, 11}, []int{13, 5, 1}},
	}
	for ti, tt := range tests {
		t.Run(fmt.Sprint(tt.cols, tt.count), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ti), 51))
			tr := randTree(rng, tt.cols, tt.count)
			got := nanSlice(tt.count[0] * tt.cols[len(tt.cols)-1])
			ExpandTree(got, tr)
			if want := expand(tr); !slices.Equal(got, want) {
				t.Fatalf("ExpandTree = %v, want %v", got, want)
			}
			dx := randSlice(rng, len(got))
			want := sumBlocks(tr, dx)
			for _, beta := range []float32{0, 1, -0.5} {
				dX, prev := make([][]float32, len(tr.X)), make([][]float32, len(tr.X))
				for k := range dX {
					dX[k] = randSlice(rng, len(tr.X[k]))
					if beta == 0 {
						dX[k] = nanSlice(len(tr.X[k]))
					}
					prev[k] = slices.Clone(dX[k])
				}
				dX[len(dX)-1] = nil
				ReduceTree(dX, tr, dx, beta)
				for k := 0; k+1 < len(dX); k++ {
					w := slices.Clone(want[k])
					for i := range w {
						if beta != 0 {
							w[i] += float64(beta) * float64(prev[k][i])
						}
					}
					closeTo(t, fmt.Sprintf("beta=%v: dX[%d]", beta, k), dX[k], w)
				}
			}
		})
	}
}

// TestRowSums checks RowSums against its loop and RowSumsGrad against
// central differences of Σ_i dout[i]*RowSums(x)[i] (exact for a linear
// function but for rounding), with beta.
func TestRowSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(52, 53))
	for _, sh := range [][2]int{{0, 0}, {1, 1}, {3, 23}, {5, 1}, {4, 0}} {
		rows, cols := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			x, dout := randSlice(rng, rows*cols), randSlice(rng, rows)
			got := nanSlice(rows)
			RowSums(got, x)
			for i := 0; i < rows; i++ {
				var want float64
				for j := 0; j < cols; j++ {
					want += float64(x[i*cols+j])
				}
				if math.Abs(float64(got[i])-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("RowSums[%d] = %v, want %v", i, got[i], want)
				}
			}
			dx := nanSlice(len(x))
			RowSumsGrad(dx, dout, 0)
			loss := func(x []float32) float64 {
				s := make([]float32, rows)
				RowSums(s, x)
				var l float64
				for i := range s {
					l += float64(dout[i]) * float64(s[i])
				}
				return l
			}
			const h = 1e-2
			for i := range x {
				old := x[i]
				x[i] = old + h
				up := loss(x)
				x[i] = old - h
				down := loss(x)
				x[i] = old
				if want := (up - down) / (2 * h); math.Abs(float64(dx[i])-want) > 1e-3*(1+math.Abs(want)) {
					t.Fatalf("RowSumsGrad[%d] = %v, finite difference %v", i, dx[i], want)
				}
			}
			prev := slices.Clone(dx)
			RowSumsGrad(dx, dout, 2)
			for i := range dx {
				if want := dout[i/cols] + 2*prev[i]; dx[i] != want {
					t.Fatalf("beta=2: dx[%d] = %v, want %v", i, dx[i], want)
				}
			}
		})
	}
}

func TestExpandLinearPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(54, 55))
	tr := randTree(rng, []int{0, 2, 5}, []int{4, 2})
	tests := []struct {
		name string
		f    func()
	}{
		{"ExpandTree short dst", func() { ExpandTree(make([]float32, 19), tr) }},
		{"ExpandTree no levels", func() { ExpandTree(nil, Tree{}) }},
		{"ReduceTree short dx", func() { ReduceTree(make([][]float32, 2), tr, make([]float32, 19), 0) }},
		{"ReduceTree short dX", func() { ReduceTree(make([][]float32, 1), tr, make([]float32, 20), 0) }},
		{"ReduceTree short dX[1]", func() { ReduceTree([][]float32{nil, make([]float32, 5)}, tr, make([]float32, 20), 0) }},
		{"RowSums", func() { RowSums(make([]float32, 3), make([]float32, 7)) }},
		{"RowSums no rows", func() { RowSums(nil, make([]float32, 1)) }},
		{"RowSumsGrad", func() { RowSumsGrad(make([]float32, 7), make([]float32, 2), 0) }},
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
