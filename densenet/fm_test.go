package densenet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fmPairwise64 is the FM second-order term of one row by its definition,
// the O(F²·k) sum of the pairwise inner products, in float64.
func fmPairwise64(row []float64, fields, dim int) float64 {
	var s float64
	for f := 0; f < fields; f++ {
		for g := f + 1; g < fields; g++ {
			for d := 0; d < dim; d++ {
				s += row[f*dim+d] * row[g*dim+d]
			}
		}
	}
	return s
}

// fmScale64 is a bound on the magnitude of the terms FMForward adds up
// for a row, for rounding tolerances: 0.5*(Σ_d (Σ_f |v|)² + Σ v²).
func fmScale64(row []float32, fields, dim int) float64 {
	var t, sq float64
	for d := 0; d < dim; d++ {
		var a float64
		for f := 0; f < fields; f++ {
			v := float64(row[f*dim+d])
			a += math.Abs(v)
			sq += v * v
		}
		t += a * a
	}
	return 0.5 * (t + sq)
}

var fmShapes = []struct{ n, fields, dim int }{
	{0, 3, 2}, {1, 0, 4}, {1, 1, 1}, {2, 2, 1}, {3, 5, 3}, {4, 23, 18}, {7, 4, 8},
}

// TestFMForwardAgainstPairwise checks FMForward, and FMSums followed by
// FMCombine, against the pairwise definition of the term.
func TestFMForwardAgainstPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, sh := range fmShapes {
		t.Run(fmt.Sprintf("n=%d/F=%d/k=%d", sh.n, sh.fields, sh.dim), func(t *testing.T) {
			w := sh.fields * sh.dim
			x := randSlice(rng, sh.n*w)
			x0 := slices.Clone(x)
			got, viaSums := nanSlice(sh.n), nanSlice(sh.n)
			FMForward(got, x, sh.fields, sh.dim)
			sums := nanSlice(sh.n * (sh.dim + 1))
			FMSums(sums, x, sh.fields, sh.dim)
			FMCombine(viaSums, sums, sh.dim)
			if !slices.Equal(x, x0) {
				t.Fatal("x modified")
			}
			x64 := f64(x)
			for s := 0; s < sh.n; s++ {
				want := fmPairwise64(x64[s*w:(s+1)*w], sh.fields, sh.dim)
				tol := 4 * float64(w+1) * fmScale64(x[s*w:(s+1)*w], sh.fields, sh.dim) / (1 << 24)
				if math.Abs(float64(got[s])-want) > tol || math.Abs(float64(viaSums[s])-want) > tol {
					t.Fatalf("row %d: FMForward %v, FMSums+FMCombine %v, want %v (tol %g)", s, got[s], viaSums[s], want, tol)
				}
			}
		})
	}
}

// TestFMGradFiniteDifferences checks FMBackward against central
// differences of the float64 pairwise term of the loss Σ_s dout[s]*FM(s).
func TestFMGradFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, sh := range fmShapes {
		t.Run(fmt.Sprintf("n=%d/F=%d/k=%d", sh.n, sh.fields, sh.dim), func(t *testing.T) {
			w := sh.fields * sh.dim
			x, dout := randSlice(rng, sh.n*w), randSlice(rng, sh.n)
			dx := nanSlice(len(x))
			FMBackward(dx, x, dout, sh.fields, sh.dim, 0)
			x64 := f64(x)
			loss := func() float64 {
				var l float64
				for s := 0; s < sh.n; s++ {
					l += float64(dout[s]) * fmPairwise64(x64[s*w:(s+1)*w], sh.fields, sh.dim)
				}
				return l
			}
			const h = 1e-4 // the term is quadratic: central differences are exact but for rounding
			for i := range x64 {
				old := x64[i]
				x64[i] = old + h
				up := loss()
				x64[i] = old - h
				down := loss()
				x64[i] = old
				want := (up - down) / (2 * h)
				if math.Abs(float64(dx[i])-want) > 1e-5+1e-4*math.Abs(want) {
					t.Fatalf("dx[%d] = %v, finite difference %v", i, dx[i], want)
				}
			}
		})
	}
}

// TestFMBackwardBeta checks that beta scales what dx held: beta = 0 does
// not read it (NaN stays out), beta = 1 adds, another beta scales.
func TestFMBackwardBeta(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	const n, fields, dim = 5, 4, 3
	x, dout := randSlice(rng, n*fields*dim), randSlice(rng, n)
	grad := make([]float32, len(x))
	FMBackward(grad, x, dout, fields, dim, 0)
	for _, beta := range []float32{1, 0.5, -2} {
		prev := randSlice(rng, len(x))
		dx := slices.Clone(prev)
		FMBackward(dx, x, dout, fields, dim, beta)
		for i := range dx {
			want := float64(grad[i]) + float64(beta)*float64(prev[i])
			if math.Abs(float64(dx[i])-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("beta %v: dx[%d] = %v, want %v", beta, i, dx[i], want)
			}
		}
	}
}

// TestFMSplitEqualsFlat is the algebra of compression: the partial sums
// of disjoint blocks of fields (a user's and an item's, or any split),
// added up, give the term of the whole row.
func TestFMSplitEqualsFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	const n, dim = 6, 18
	for _, blocks := range [][]int{{23}, {3, 20}, {20, 3}, {0, 23}, {1, 2, 20}, {5, 0, 9, 9}} {
		t.Run(fmt.Sprint(blocks), func(t *testing.T) {
			fields := 0
			for _, b := range blocks {
				fields += b
			}
			w := fields * dim
			x := randSlice(rng, n*w)
			flat := make([]float32, n)
			FMForward(flat, x, fields, dim)
			total := make([]float32, n*(dim+1))
			part := make([]float32, dim+1)
			for s := 0; s < n; s++ {
				off := s * w
				for _, b := range blocks {
					FMSums(part, x[off:off+b*dim], b, dim)
					Axpy(total[s*(dim+1):(s+1)*(dim+1)], 1, part)
					off += b * dim
				}
			}
			split := make([]float32, n)
			FMCombine(split, total, dim)
			for s := range flat {
				tol := 4 * float64(w+1) * fmScale64(x[s*w:(s+1)*w], fields, dim) / (1 << 24)
				if math.Abs(float64(split[s]-flat[s])) > tol {
					t.Fatalf("sample %d: split %v, flat %v", s, split[s], flat[s])
				}
			}
		})
	}
}

// TestFMTreeAgainstFlat checks FMWorkspace's tree passes against FMForward
// and FMBackward on the flat expansion: the same terms, and each node's
// gradient the sum of its samples' flat gradients, for beta 0 and 1.
func TestFMTreeAgainstFlat(t *testing.T) {
	const dim = 3
	tests := []struct {
		name         string
		fields       []int // per level
		count        []int
		nilLevel0DX  bool
		reuseAsOther bool
	}{
		{"1level", []int{4}, []int{6}, false, false},
		{"2levels", []int{2, 5}, []int{9, 3}, false, false},
		{"2levels/nilDX0", []int{2, 5}, []int{9, 3}, true, false},
		{"2levels/width0at0", []int{0, 4}, []int{5, 2}, false, false},
		{"2levels/width0at1", []int{3, 0}, []int{5, 2}, false, false},
		{"2levels/nosharing", []int{1, 2}, []int{4, 4}, false, false},
		{"2levels/empty", []int{2, 1}, []int{0, 0}, false, false},
		{"3levels/top1", []int{1, 3, 2}, []int{13, 5, 1}, false, true},
	}
	for ti, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ti), 29))
			cols := []int{0}
			for _, f := range tt.fields {
				cols = append(cols, cols[len(cols)-1]+f*dim)
			}
			tr := randTree(rng, cols, tt.count)
			n, fields := tt.count[0], cols[len(cols)-1]/dim
			x := expand(tr)
			dout := randSlice(rng, n)
			flat, dflat := make([]float32, n), make([]float32, len(x))
			FMForward(flat, x, fields, dim)
			FMBackward(dflat, x, dout, fields, dim, 0)
			wantDX := sumBlocks(tr, dflat)

			ws := NewFMWorkspace(dim, n+2)
			if tt.reuseAsOther { // a pass on another tree first: nothing stale
				other := randTree(rng, []int{0, 6}, []int{n + 2})
				ws.ForwardTree(other, make([]float32, n+2))
			}
			got := nanSlice(n)
			ws.ForwardTree(tr, got)
			closeTo(t, "terms", got, f64(flat))
			dX := make([][]float32, len(tr.X))
			for k := range dX {
				dX[k] = nanSlice(len(tr.X[k]))
			}
			if tt.nilLevel0DX {
				dX[0] = nil
			}
			ws.BackwardTree(tr, dout, dX, 0)
			prev := make([][]float32, len(dX))
			for k := range dX {
				if dX[k] != nil {
					closeTo(t, fmt.Sprintf("dX[%d]", k), dX[k], wantDX[k])
					prev[k] = slices.Clone(dX[k])
				}
			}
			ws.BackwardTree(tr, dout, dX, 1) // adds the same gradient again
			for k := range dX {
				if dX[k] != nil {
					want := slices.Clone(wantDX[k])
					for i := range want {
						want[i] += float64(prev[k][i])
					}
					closeTo(t, fmt.Sprintf("beta=1: dX[%d]", k), dX[k], want)
				}
			}
		})
	}
}

func TestFMTreeNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 31))
	tr := randTree(rng, []int{0, 54, 144, 414}, []int{64, 9, 2})
	ws := NewFMWorkspace(18, 64)
	out, dout := make([]float32, 64), randSlice(rng, 64)
	var dX [][]float32
	for k := range tr.X {
		dX = append(dX, make([]float32, len(tr.X[k])))
	}
	allocs := testing.AllocsPerRun(3, func() { // the warm-up run makes the level buffers
		ws.ForwardTree(tr, out)
		ws.BackwardTree(tr, dout, dX, 0)
	})
	if allocs > 0 {
		t.Fatalf("ForwardTree+BackwardTree allocate %v times per pass", allocs)
	}
}

func TestFMPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 33))
	good := func() Tree { return randTree(rng, []int{0, 4, 10}, []int{4, 2}) }
	fwd := func(ws *FMWorkspace, tr Tree) { ws.ForwardTree(tr, make([]float32, tr.Count[0])) }
	tests := []struct {
		name string
		f    func()
	}{
		{"FMForward length", func() { FMForward(make([]float32, 2), make([]float32, 7), 2, 2) }},
		{"FMForward dim 0", func() { FMForward(nil, nil, 2, 0) }},
		{"FMForward negative fields", func() { FMForward(nil, nil, -1, 2) }},
		{"FMBackward dx", func() { FMBackward(make([]float32, 7), make([]float32, 8), make([]float32, 2), 2, 2, 0) }},
		{"FMBackward dout", func() { FMBackward(make([]float32, 8), make([]float32, 8), make([]float32, 3), 2, 2, 0) }},
		{"FMSums dst", func() { FMSums(make([]float32, 5), make([]float32, 8), 2, 2) }},
		{"FMSums x", func() { FMSums(make([]float32, 6), make([]float32, 7), 2, 2) }},
		{"FMCombine", func() { FMCombine(make([]float32, 2), make([]float32, 5), 2) }},
		{"workspace dim 0", func() { NewFMWorkspace(0, 4) }},
		{"tree level not whole fields", func() { fwd(NewFMWorkspace(2, 4), randTree(rng, []int{0, 3, 10}, []int{4, 2})) }},
		{"tree too large", func() { fwd(NewFMWorkspace(2, 3), good()) }},
		{"tree bad parent", func() {
			tr := good()
			tr.Parent[0][0] = 2
			fwd(NewFMWorkspace(2, 4), tr)
		}},
		{"tree short out", func() { NewFMWorkspace(2, 4).ForwardTree(good(), make([]float32, 3)) }},
		{"backward before forward", func() { NewFMWorkspace(2, 4).BackwardTree(good(), make([]float32, 4), make([][]float32, 2), 0) }},
		{"backward of another shape", func() {
			ws := NewFMWorkspace(2, 4)
			fwd(ws, good())
			ws.BackwardTree(randTree(rng, []int{0, 4, 10}, []int{4, 3}), make([]float32, 4), make([][]float32, 2), 0)
		}},
		{"backward short dX", func() {
			ws, tr := NewFMWorkspace(2, 4), good()
			fwd(ws, tr)
			ws.BackwardTree(tr, make([]float32, 4), make([][]float32, 1), 0)
		}},
		{"backward short dX[1]", func() {
			ws, tr := NewFMWorkspace(2, 4), good()
			fwd(ws, tr)
			ws.BackwardTree(tr, make([]float32, 4), [][]float32{nil, make([]float32, 11)}, 0)
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
