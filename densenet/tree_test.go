package densenet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randTree returns a tree with the given column offsets and node counts,
// random inputs and random parents (some nodes may have no children).
func randTree(rng *rand.Rand, cols, count []int) Tree {
	t := Tree{Cols: cols, Count: count}
	for k := range count {
		t.X = append(t.X, randSlice(rng, count[k]*(cols[k+1]-cols[k])))
	}
	for k := 0; k+1 < len(count); k++ {
		p := make([]int32, count[k])
		for i := range p {
			p[i] = int32(rng.IntN(count[k+1]))
		}
		t.Parent = append(t.Parent, p)
	}
	return t
}

// ancestors returns a[k][s], the level-k node of sample s (a[0][s] = s).
func ancestors(t Tree) [][]int {
	n := t.Count[0]
	a := [][]int{make([]int, n)}
	for s := range a[0] {
		a[0][s] = s
	}
	for k := 1; k < len(t.Count); k++ {
		next := make([]int, n)
		for s := range next {
			next[s] = int(t.Parent[k-1][a[k-1][s]])
		}
		a = append(a, next)
	}
	return a
}

// expand returns the flat input of t: n rows of width, sample s's row the
// concatenation of its ancestors' blocks.
func expand(t Tree) []float32 {
	n, levels := t.Count[0], len(t.Count)
	width := t.Cols[levels]
	a := ancestors(t)
	x := make([]float32, n*width)
	for s := 0; s < n; s++ {
		for k := 0; k < levels; k++ {
			c0, w := t.Cols[k], t.Cols[k+1]-t.Cols[k]
			copy(x[s*width+c0:s*width+c0+w], t.X[k][a[k][s]*w:(a[k][s]+1)*w])
		}
	}
	return x
}

// sumBlocks returns, per level k, the sum over the samples below each
// level-k node of the flat gradient dx's block k (in float64).
func sumBlocks(t Tree, dx []float32) [][]float64 {
	n, levels := t.Count[0], len(t.Count)
	width := t.Cols[levels]
	a := ancestors(t)
	var out [][]float64
	for k := 0; k < levels; k++ {
		c0, w := t.Cols[k], t.Cols[k+1]-t.Cols[k]
		sum := make([]float64, t.Count[k]*w)
		for s := 0; s < n; s++ {
			for j := 0; j < w; j++ {
				sum[a[k][s]*w+j] += float64(dx[s*width+c0+j])
			}
		}
		out = append(out, sum)
	}
	return out
}

func nanSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

// closeTo fails unless got matches want to within 1e-4 of want's largest
// magnitude.
func closeTo(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	for i := range want {
		if !(math.Abs(float64(got[i])-want[i]) <= 1e-4*scale+1e-30) {
			t.Fatalf("%s[%d] = %v, want %v (scale %v)", what, i, got[i], want[i], scale)
		}
	}
}

// treeFlatCase is an MLP's layer sizes and a tree's column offsets and
// node counts per level.
type treeFlatCase struct {
	name  string
	sizes []int
	cols  []int
	count []int
}

// TestTreeAgainstFlat checks ForwardTree and BackwardTree against Forward
// and Backward on the flat expansion of the same batch, with each of the
// MLPOptions: same outputs, same parameter gradients, and dX[k] the sum of
// the flat input gradient's block k over the samples below each node.
func TestTreeAgainstFlat(t *testing.T) {
	tests := []treeFlatCase{
		{"1level", []int{7, 5, 1}, []int{0, 7}, []int{6}},
		{"1level/nohidden", []int{4, 1}, []int{0, 4}, []int{3}},
		{"2levels", []int{9, 6, 1}, []int{0, 3, 9}, []int{8, 3}},
		{"2levels/width0at0", []int{5, 4, 3, 1}, []int{0, 0, 5}, []int{7, 2}},
		{"2levels/width0at1", []int{5, 4, 1}, []int{0, 5, 5}, []int{5, 2}},
		{"2levels/width1/nohidden", []int{2, 1}, []int{0, 1, 2}, []int{4, 1}},
		{"2levels/nosharing", []int{6, 3, 2, 1}, []int{0, 4, 6}, []int{5, 5}},
		{"2levels/empty", []int{3, 2, 1}, []int{0, 2, 3}, []int{0, 0}},
		{"3levels/top1", []int{11, 7, 5, 1}, []int{0, 2, 6, 11}, []int{13, 5, 1}},
		{"3levels/middle0", []int{6, 3, 1}, []int{0, 1, 1, 6}, []int{9, 4, 2}},
		{"3levels/nohidden", []int{5, 1}, []int{0, 2, 3, 5}, []int{4, 4, 4}},
		{"3levels/outer0", []int{4, 3, 1}, []int{0, 0, 4, 4}, []int{6, 3, 1}},
		{"3levels/single", []int{3, 1}, []int{0, 1, 2, 3}, []int{1, 1, 1}},
		{"2levels/xdl", []int{414, 200, 80, 1}, []int{0, 54, 414}, []int{37, 5}},
		{"3levels/xdl/blocks", []int{414, 200, 80, 1}, []int{0, 54, 134, 414}, []int{300, 61, 7}},
		{"2levels/outputs3", []int{6, 4, 3}, []int{0, 2, 6}, []int{7, 3}},
		{"3levels/outputs5/nohidden", []int{7, 5}, []int{0, 3, 3, 7}, []int{6, 2, 2}},
	}
	for ti, tt := range tests {
		for _, o := range allOptions {
			t.Run(tt.name+"/"+optName(o), func(t *testing.T) { checkTreeAgainstFlat(t, uint64(ti), tt, o) })
		}
	}
}

// checkTreeAgainstFlat checks the tree passes on a random tree of tt
// against the flat passes on its expansion, on one workspace, and that a
// second tree pass after the flat one gives the same bits.
func checkTreeAgainstFlat(t *testing.T, seed uint64, tt treeFlatCase, o MLPOptions) {
	rng := rand.New(rand.NewPCG(seed, 7))
	m, err := NewMLPWith(tt.sizes, o)
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float32, m.NumParams())
	m.Init(params, seed)
	for i := range m.InputBiasParams(params) {
		params[i] = 0.5 * float32(rng.NormFloat64())
	}
	tr := randTree(rng, tt.cols, tt.count)
	n := tt.count[0]
	x := expand(tr)
	dl := randSlice(rng, n*m.OutputWidth())
	ws := m.NewWorkspace(n + 3)

	tree := func() (logits, grad []float32, dX [][]float32) {
		logits, grad = nanSlice(n*m.OutputWidth()), nanSlice(m.NumParams())
		for k := range tt.count {
			dX = append(dX, nanSlice(len(tr.X[k])))
		}
		m.ForwardTree(ws, params, tr, logits)
		m.BackwardTree(ws, params, tr, dl, grad, dX)
		return logits, grad, dX
	}
	logits, grad, dX := tree()

	// The flat pass on the same workspace, after the tree pass.
	flatLogits, flatGrad, flatDx := make([]float32, n*m.OutputWidth()), make([]float32, m.NumParams()), make([]float32, len(x))
	m.Forward(ws, params, x, n, flatLogits)
	m.Backward(ws, params, x, n, dl, flatGrad, flatDx)

	closeTo(t, "logits", logits, f64(flatLogits))
	closeTo(t, "grad", grad, f64(flatGrad))
	for k, want := range sumBlocks(tr, flatDx) {
		closeTo(t, fmt.Sprintf("dX[%d]", k), dX[k], want)
	}

	// Again on the same workspace, after the flat pass: the same
	// bits, nothing stale.
	logits2, grad2, dX2 := tree()
	if !slices.Equal(logits, logits2) || !slices.Equal(grad, grad2) {
		t.Fatal("second tree pass differs from the first")
	}
	for k := range dX {
		if !slices.Equal(dX[k], dX2[k]) {
			t.Fatalf("second tree pass: dX[%d] differs", k)
		}
	}

	checkTreeGradWithoutDX(t, m, ws, params, tr, dl, grad, dX)
}

// checkTreeGradWithoutDX checks that BackwardTree on the workspace ws of a
// tree pass gives the same grad when dX is nil, and when some dX[k] are
// nil; the others are the same as in dX.
func checkTreeGradWithoutDX(t *testing.T, m *MLP, ws *Workspace, params []float32, tr Tree, dl, grad []float32, dX [][]float32) {
	logits2 := make([]float32, tr.Count[0]*m.OutputWidth())
	grad3 := nanSlice(m.NumParams())
	m.ForwardTree(ws, params, tr, logits2)
	m.BackwardTree(ws, params, tr, dl, grad3, nil)
	if !slices.Equal(grad, grad3) {
		t.Fatal("grad depends on whether dX is asked for")
	}
	partial := make([][]float32, len(dX))
	partial[len(dX)-1] = make([]float32, len(dX[len(dX)-1]))
	m.BackwardTree(ws, params, tr, dl, grad3, partial)
	if !slices.Equal(grad, grad3) || !slices.Equal(partial[len(dX)-1], dX[len(dX)-1]) {
		t.Fatal("BackwardTree with some dX[k] nil differs")
	}
}

// TestTreeThreads checks that the number of goroutines does not change a
// bit of the tree passes' results.
func TestTreeThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	m, _ := NewMLP([]int{414, 200, 80, 1})
	params := make([]float32, m.NumParams())
	m.Init(params, 5)
	tr := randTree(rng, []int{0, 54, 414}, []int{256, 13})
	dl := randSlice(rng, 256)
	run := func(threads int) (logits, grad, dX1 []float32) {
		ws := m.NewWorkspace(256)
		ws.Threads = threads
		logits, grad = make([]float32, 256), make([]float32, m.NumParams())
		dX := [][]float32{nil, make([]float32, len(tr.X[1]))}
		m.ForwardTree(ws, params, tr, logits)
		m.BackwardTree(ws, params, tr, dl, grad, dX)
		return logits, grad, dX[1]
	}
	l1, g1, d1 := run(1)
	l4, g4, d4 := run(4)
	if !slices.Equal(l1, l4) || !slices.Equal(g1, g4) || !slices.Equal(d1, d4) {
		t.Fatal("results with 4 goroutines differ from 1")
	}
}

func TestTreeNoAllocs(t *testing.T) {
	for _, o := range allOptions {
		t.Run(optName(o), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, 4))
			m, _ := NewMLPWith([]int{414, 200, 80, 1}, o)
			params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
			m.Init(params, 3)
			tr := randTree(rng, []int{0, 54, 134, 414}, []int{64, 9, 2})
			var dX [][]float32
			for k := range tr.X {
				dX = append(dX, make([]float32, len(tr.X[k])))
			}
			logits, dl := make([]float32, 64), randSlice(rng, 64)
			ws := m.NewWorkspace(64)
			ws.Threads = 1
			// With dX[0] nil, an input bias's gradient needs a buffer of ws.
			for _, dX := range [][][]float32{dX, append([][]float32{nil}, dX[1:]...)} {
				allocs := testing.AllocsPerRun(3, func() { // the warm-up run grows the buffers
					m.ForwardTree(ws, params, tr, logits)
					m.BackwardTree(ws, params, tr, dl, grad, dX)
				})
				if allocs > 0 {
					t.Fatalf("ForwardTree+BackwardTree (dX[0] nil: %v) allocate %v times per pass", dX[0] == nil, allocs)
				}
			}
		})
	}
}

func TestTreePanics(t *testing.T) {
	f := newTreePanicFixture()
	// Both tables draw their trees as they are built, in this order.
	fwd, bwd := f.forwardCases(), f.backwardCases()
	for _, tt := range append(fwd, bwd...) {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				t.Log(r)
			}()
			tt.f()
		})
	}
}

// treePanicCase is a call that must panic.
type treePanicCase struct {
	name string
	f    func()
}

// treePanicFixture is what the cases of TestTreePanics share: an MLP of
// sizes 5, 3, 1 and another one alike, parameters p and a gradient g of
// their size, and the source of random trees.
type treePanicFixture struct {
	m, other *MLP
	p, g     []float32
	rng      *rand.Rand
}

func newTreePanicFixture() *treePanicFixture {
	m, _ := NewMLP([]int{5, 3, 1})
	other, _ := NewMLP([]int{5, 3, 1})
	return &treePanicFixture{m: m, other: other, p: make([]float32, m.NumParams()), g: make([]float32, m.NumParams()),
		rng: rand.New(rand.NewPCG(1, 2))}
}

// good returns a valid tree of 4 samples under 2 nodes.
func (f *treePanicFixture) good() Tree { return randTree(f.rng, []int{0, 2, 5}, []int{4, 2}) }

// with returns a good tree changed by edit.
func (f *treePanicFixture) with(edit func(*Tree)) Tree {
	tr := f.good()
	edit(&tr)
	return tr
}

// fwd returns a call of ForwardTree on tr.
func (f *treePanicFixture) fwd(tr Tree) func() {
	n := 0
	if len(tr.Count) > 0 {
		n = max(0, tr.Count[0])
	}
	return func() { f.m.ForwardTree(f.m.NewWorkspace(4), f.p, tr, make([]float32, n)) }
}

// bwd returns a call that runs ForwardTree on a good tree, then
// BackwardTree as call says.
func (f *treePanicFixture) bwd(call func(ws *Workspace, tr Tree)) func() {
	return func() {
		ws := f.m.NewWorkspace(4)
		tr := f.good()
		f.m.ForwardTree(ws, f.p, tr, make([]float32, 4))
		call(ws, tr)
	}
}

// forwardCases are bad trees, arguments and workspaces of ForwardTree.
func (f *treePanicFixture) forwardCases() []treePanicCase {
	m, other, p, rng := f.m, f.other, f.p, f.rng
	fwd, with, good := f.fwd, f.with, f.good
	return []treePanicCase{
		{"parent too large", fwd(with(func(tr *Tree) { tr.Parent[0][3] = 2 }))},
		{"parent negative", fwd(with(func(tr *Tree) { tr.Parent[0][0] = -1 }))},
		{"count above n", fwd(Tree{Cols: []int{0, 2, 5}, Count: []int{2, 3},
			X: [][]float32{make([]float32, 4), make([]float32, 9)}, Parent: [][]int32{{0, 1}}})},
		{"negative count", fwd(with(func(tr *Tree) { tr.Count = []int{4, -1} }))},
		{"batch too large", func() {
			tr := randTree(rng, []int{0, 2, 5}, []int{5, 2})
			m.ForwardTree(m.NewWorkspace(4), p, tr, make([]float32, 5))
		}},
		{"no levels", fwd(Tree{Cols: []int{0}})},
		{"cols not from 0", fwd(with(func(tr *Tree) { tr.Cols = []int{1, 2, 5} }))},
		{"cols not to width", fwd(with(func(tr *Tree) { tr.Cols = []int{0, 2, 4} }))},
		{"cols decrease", fwd(with(func(tr *Tree) { tr.Cols = []int{0, 6, 5} }))},
		{"short cols", fwd(with(func(tr *Tree) { tr.Cols = []int{0, 5} }))},
		{"short X", fwd(with(func(tr *Tree) { tr.X = tr.X[:1] }))},
		{"short X[1]", fwd(with(func(tr *Tree) { tr.X[1] = tr.X[1][1:] }))},
		{"missing parents", fwd(with(func(tr *Tree) { tr.Parent = nil }))},
		{"short parents", fwd(with(func(tr *Tree) { tr.Parent[0] = tr.Parent[0][1:] }))},
		{"short logits", func() { m.ForwardTree(m.NewWorkspace(4), p, good(), make([]float32, 3)) }},
		{"short params", func() { m.ForwardTree(m.NewWorkspace(4), p[1:], good(), make([]float32, 4)) }},
		{"foreign workspace", func() { m.ForwardTree(other.NewWorkspace(4), p, good(), make([]float32, 4)) }},
	}
}

// backwardCases are calls of BackwardTree without its ForwardTree, or with
// other trees or bad arguments, and of Backward after ForwardTree.
func (f *treePanicFixture) backwardCases() []treePanicCase {
	m, p, g, rng := f.m, f.p, f.g, f.rng
	bwd, good := f.bwd, f.good
	return []treePanicCase{
		{"backward tree before forward", func() {
			m.BackwardTree(m.NewWorkspace(4), p, good(), make([]float32, 4), g, nil)
		}},
		{"empty backward tree before forward", func() {
			tr := Tree{Cols: []int{0, 5}, Count: []int{0}, X: [][]float32{nil}}
			m.BackwardTree(m.NewWorkspace(4), p, tr, nil, g, nil)
		}},
		{"backward after forward tree", bwd(func(ws *Workspace, tr Tree) {
			m.Backward(ws, p, expand(tr), 4, make([]float32, 4), g, nil)
		})},
		{"backward tree after forward", bwd(func(ws *Workspace, tr Tree) {
			m.Forward(ws, p, expand(tr), 4, make([]float32, 4))
			m.BackwardTree(ws, p, tr, make([]float32, 4), g, nil)
		})},
		{"backward tree of another shape", bwd(func(ws *Workspace, _ Tree) {
			tr := randTree(rng, []int{0, 2, 5}, []int{4, 3})
			m.BackwardTree(ws, p, tr, make([]float32, 4), g, nil)
		})},
		{"backward tree with other cols", bwd(func(ws *Workspace, _ Tree) {
			tr := randTree(rng, []int{0, 3, 5}, []int{4, 2})
			m.BackwardTree(ws, p, tr, make([]float32, 4), g, nil)
		})},
		{"backward tree short dlogits", bwd(func(ws *Workspace, tr Tree) {
			m.BackwardTree(ws, p, tr, make([]float32, 3), g, nil)
		})},
		{"backward tree short grad", bwd(func(ws *Workspace, tr Tree) {
			m.BackwardTree(ws, p, tr, make([]float32, 4), g[1:], nil)
		})},
		{"backward tree short dX", bwd(func(ws *Workspace, tr Tree) {
			m.BackwardTree(ws, p, tr, make([]float32, 4), g, [][]float32{nil})
		})},
		{"backward tree short dX[1]", bwd(func(ws *Workspace, tr Tree) {
			m.BackwardTree(ws, p, tr, make([]float32, 4), g, [][]float32{nil, make([]float32, 5)})
		})},
		{"backward tree bad parent", bwd(func(ws *Workspace, tr Tree) {
			tr.Parent[0][1] = 7
			m.BackwardTree(ws, p, tr, make([]float32, 4), g, nil)
		})},
	}
}

// benchTree runs a training step of the 414-200-80-1 model on a batch of
// 256 samples in the XDL layout: 3 fields x 18 dims of the sample's own
// (level 0, 54 columns) and 20 fields x 18 dims of its user's (level 1,
// 360 columns), each user having r consecutive samples. With tree, the
// step is ForwardTree+BackwardTree on the compressed batch; without, it
// is Forward+Backward on the flat expansion (which is given, not built
// in the loop). Both compute the input gradients.
func benchTree(b *testing.B, r int, tree bool) {
	const n = 256
	m, err := NewMLP([]int{414, 200, 80, 1})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	users := (n + r - 1) / r
	tr := Tree{
		Cols:   []int{0, 54, 414},
		Count:  []int{n, users},
		X:      [][]float32{randSlice(rng, n*54), randSlice(rng, users*360)},
		Parent: [][]int32{make([]int32, n)},
	}
	for s := range tr.Parent[0] {
		tr.Parent[0][s] = int32(s / r)
	}
	params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(params, 1)
	labels := make([]float32, n)
	for i := range labels {
		labels[i] = float32(rng.IntN(2))
	}
	logits, probs, dl := make([]float32, n), make([]float32, n), make([]float32, n)
	ws := m.NewWorkspace(n)
	ws.Threads = 1
	x, dx := expand(tr), make([]float32, n*414)
	dX := [][]float32{make([]float32, len(tr.X[0])), make([]float32, len(tr.X[1]))}
	b.ResetTimer()
	for b.Loop() {
		if tree {
			m.ForwardTree(ws, params, tr, logits)
			SigmoidBCE(logits, labels, probs, dl)
			m.BackwardTree(ws, params, tr, dl, grad, dX)
		} else {
			m.Forward(ws, params, x, n, logits)
			SigmoidBCE(logits, labels, probs, dl)
			m.Backward(ws, params, x, n, dl, grad, dx)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkTree compares the compressed and the flat training step for
// users with r samples each.
//
//	go test -run '^$' -bench Tree -benchtime 20x ./densenet
func BenchmarkTree(b *testing.B) {
	for _, r := range []int{1, 5, 20, 57} {
		b.Run(fmt.Sprintf("r=%d/tree", r), func(b *testing.B) { benchTree(b, r, true) })
		b.Run(fmt.Sprintf("r=%d/flat", r), func(b *testing.B) { benchTree(b, r, false) })
	}
}
