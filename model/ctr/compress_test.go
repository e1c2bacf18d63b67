package ctr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

// equivCase shapes one random stream for TestCompressedMatchesUncompressed.
type equivCase struct {
	seed      uint64
	levels    int // levels of the groups and of the compressed layout: 2 or 3
	groups    int
	batchSize int
	pooling   string
}

// equivModel is the model of the property test: its fields are numbered in
// level order (level-0 fields first), so the compressed layout, whose input
// concatenates the level blocks, and the all-level-0 layout, whose input is
// in field order, have the same columns and one MLP fits both.
//
//	level 0: f0 (table a), f1 (table b), f2 (dense, width 2)
//	level 1: f3 (table a), f4 (table b), f5 (dense, width 3)
//	level 2: f6 (table a), f7 (table b)      (3-level cases only)
func equivModel(levels int, pooling string) (config.Config, Shape) {
	cfg := config.Config{}
	cfg.Model.Tables = []ams.TableSpec{{Name: "a", Dim: 3}, {Name: "b", Dim: 2}}
	cfg.Model.Pooling = pooling
	cfg.Model.Hidden = []int{16, 8}
	sh := Shape{Fields: 6, Levels: []int{0, 0, 0, 1, 1, 1}, DenseWidths: []int{0, 0, 2, 0, 0, 3}}
	cfg.Model.FieldTables = []string{"a", "b", "a", "a", "b", "a"}
	if levels == 3 {
		sh.Fields = 8
		sh.Levels = append(sh.Levels, 2, 2)
		sh.DenseWidths = append(sh.DenseWidths, 0, 0)
		cfg.Model.FieldTables = append(cfg.Model.FieldTables, "a", "b")
	}
	cfg.EnsureDefaults()
	return cfg, sh
}

// equivGroups draws c.groups sample groups of c.levels levels. Level-k lines
// hold the fields of level k (0 to 3 ids each, from small vocabularies so
// that ids repeat); a group's top line is often the previous group's again
// (a user who comes back in the next group), and upper lines are often
// duplicates of the line before them, so runs of samples share nodes across
// lines and across groups.
func equivGroups(rng *rand.Rand, c equivCase) []*reader.Group {
	fieldsOf := [][]uint32{{0, 1}, {3, 4}, {6, 7}}
	type line struct {
		fields []uint32
		ids    []uint64
		values []float32
		dense  []float32 // f5's vector on level-1 lines, f2's on level-0 lines; nil for none
	}
	draw := func(k int) line {
		var l line
		for _, f := range fieldsOf[k] {
			for j := rng.IntN(4); j > 0; j-- {
				l.fields = append(l.fields, f)
				l.ids = append(l.ids, uint64(f)<<40|rng.Uint64N(12))
				l.values = append(l.values, []float32{1, 0.5, 2, -1}[rng.IntN(4)])
			}
		}
		width := map[int]int{0: 2, 1: 3}[k]
		if width > 0 && rng.IntN(4) > 0 {
			l.dense = make([]float32, width)
			for j := range l.dense {
				l.dense[j] = float32(rng.IntN(5)) / 4
			}
		}
		return l
	}
	add := func(g *reader.Group, k int, parent int32, l line) {
		g.AddLine(k, parent, l.fields, l.ids, l.values)
		if l.dense != nil {
			g.AddDense(k, map[int]uint32{0: 2, 1: 5}[k], l.dense)
		}
	}
	var out []*reader.Group
	top := c.levels - 1
	var prevTop line
	for gi := 0; gi < c.groups; gi++ {
		g := new(reader.Group)
		g.Reset(c.levels)
		t := prevTop
		if gi == 0 || rng.IntN(3) > 0 {
			t = draw(top)
		}
		prevTop = t
		add(g, top, 0, t)
		// The levels below the top, top down: each line picks a parent, in
		// non-decreasing order, and is sometimes a duplicate of the line
		// before it.
		for k := top - 1; k >= 0; k-- {
			above := g.Levels[k+1].Len()
			n := above + rng.IntN(2*above+3)
			var prev line
			parent := int32(0)
			for i := 0; i < n; i++ {
				if i > 0 && parent < int32(above-1) && rng.IntN(3) == 0 {
					parent++
				}
				l := draw(k)
				if k > 0 && i > 0 && rng.IntN(2) == 0 {
					l = prev
				}
				prev = l
				add(g, k, parent, l)
				if k == 0 {
					g.AddLabels(float32(rng.IntN(2)))
				}
			}
		}
		g.Pos = reader.Position{File: "equiv", Offset: int64(gi)}
		g.Next = reader.Position{File: "equiv", Offset: int64(gi + 1)}
		out = append(out, g)
	}
	return out
}

// batchAll feeds groups through a builder and returns every batch.
func batchAll(t *testing.T, l *sparsenet.Layout, bs int, groups []*reader.Group) []*compress.Batch {
	t.Helper()
	b, err := compress.NewBuilder(compress.Options{BatchSize: bs, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	var out []*compress.Batch
	for _, g := range groups {
		if err := b.Add(g); err != nil {
			t.Fatal(err)
		}
		for bt := b.Take(); bt != nil; bt = b.Take() {
			out = append(out, bt)
		}
	}
	b.Flush()
	for bt := b.Take(); bt != nil; bt = b.Take() {
		out = append(out, bt)
	}
	return out
}

// rowValue is the pulled value of column j of id's row in table t: a hash of
// the three, in [-0.5, 0.5).
func rowValue(t int, id uint64, j int) float32 {
	h := id*0x9e3779b97f4a7c15 ^ uint64(t)<<56 ^ uint64(j)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	h ^= h >> 29
	return float32(h>>40)/float32(1<<24) - 0.5
}

// stepResult is one training step's outputs, the sparse gradient keyed by id.
type stepResult struct {
	loss   float64
	logits []float32
	dense  []float32
	sparse []map[uint64][]float32 // per table
	nodes  []int
}

// trainStep runs what Trainer.step does on a batch, with rows from rowValue.
func trainStep(l *sparsenet.Layout, mlp *densenet.MLP, params []float32, bt *compress.Batch) stepResult {
	tree, dX := pooledTree(l, bt)
	n := bt.N
	ws := mlp.NewWorkspace(n)
	res := stepResult{logits: make([]float32, n), dense: make([]float32, mlp.NumParams()), nodes: tree.Count}
	mlp.ForwardTree(ws, params, tree, res.logits)
	probs, dlogits := make([]float32, n), make([]float32, n)
	res.loss = densenet.SigmoidBCE(res.logits, bt.Labels[:n], probs, dlogits)
	mlp.BackwardTree(ws, params, tree, dlogits, res.dense, dX)
	res.sparse = idGrads(l, bt, dX)
	return res
}

// idGrads scatters the level gradients dX of batch bt into its row
// gradients, keyed by id, per table.
func idGrads(l *sparsenet.Layout, bt *compress.Batch, dX [][]float32) []map[uint64][]float32 {
	grads := make([][]float32, l.Tables())
	for ti := range grads {
		grads[ti] = make([]float32, len(bt.Sparse.IDs(ti))*l.Dim(ti))
	}
	bt.Sparse.ScatterTree(dX, grads)
	var out []map[uint64][]float32
	for ti := range grads {
		dim, m := l.Dim(ti), map[uint64][]float32{}
		for k, id := range bt.Sparse.IDs(ti) {
			if _, dup := m[id]; dup {
				panic(fmt.Sprintf("id %d twice among the unique ids of table %d", id, ti))
			}
			m[id] = grads[ti][k*dim : (k+1)*dim]
		}
		out = append(out, m)
	}
	return out
}

func closeTo(a, b float32, tol float64) bool {
	return math.Abs(float64(a)-float64(b)) <= tol*(1+math.Abs(float64(b)))
}

// equivLayouts returns the compressed layout of case c (c.levels levels)
// and the flat one (one level) of the same model, failing t unless they
// have those levels and the same width.
func equivLayouts(t *testing.T, c equivCase) (tree, flat *sparsenet.Layout) {
	t.Helper()
	cfg, sh := equivModel(c.levels, c.pooling)
	tree, err := NewLayout(cfg, sh)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	cfg.Train.Compress = &no
	flat, err = NewLayout(cfg, sh)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Levels() != c.levels || flat.Levels() != 1 || tree.Width() != flat.Width() {
		t.Fatalf("layouts: %d and %d levels, widths %d and %d", tree.Levels(), flat.Levels(), tree.Width(), flat.Width())
	}
	return tree, flat
}

// equivMLP returns a small MLP over width inputs and its parameters,
// initialised from seed.
func equivMLP(t *testing.T, width int, seed uint64) (*densenet.MLP, []float32) {
	t.Helper()
	mlp, err := densenet.NewMLP([]int{width, 16, 8, 1})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float32, mlp.NumParams())
	mlp.Init(params, seed)
	return mlp, params
}

// checkStepsMatch fails t unless the step on compressed batch bi (tr) has
// the loss, logits, dense gradient and per-id sparse gradients of the
// step on the flat batch (fr).
func checkStepsMatch(t *testing.T, bi int, tr, fr stepResult) {
	t.Helper()
	if math.Abs(tr.loss-fr.loss) > 1e-5*math.Abs(fr.loss) {
		t.Fatalf("batch %d: loss %v compressed, %v flat", bi, tr.loss, fr.loss)
	}
	for i := range fr.logits {
		if !closeTo(tr.logits[i], fr.logits[i], 1e-4) {
			t.Fatalf("batch %d sample %d: logit %v compressed, %v flat", bi, i, tr.logits[i], fr.logits[i])
		}
	}
	for i := range fr.dense {
		if !closeTo(tr.dense[i], fr.dense[i], 1e-4) {
			t.Fatalf("batch %d: dense gradient %d is %v compressed, %v flat", bi, i, tr.dense[i], fr.dense[i])
		}
	}
	for ti := range fr.sparse {
		if len(tr.sparse[ti]) != len(fr.sparse[ti]) {
			t.Fatalf("batch %d table %d: %d unique ids compressed, %d flat", bi, ti, len(tr.sparse[ti]), len(fr.sparse[ti]))
		}
		for id, fg := range fr.sparse[ti] {
			tg, ok := tr.sparse[ti][id]
			if !ok {
				t.Fatalf("batch %d table %d: id %#x only in the flat batch", bi, ti, id)
			}
			for j := range fg {
				if !closeTo(tg[j], fg[j], 1e-4) {
					t.Fatalf("batch %d table %d id %#x: gradient %v compressed, %v flat", bi, ti, id, tg, fg)
				}
			}
		}
	}
}

// TestCompressedMatchesUncompressed checks, on random 2- and 3-level
// streams, that training on prefix-tree batches gives the same loss, logits,
// dense gradient and per-id sparse gradients as training on the same samples
// batched flat (every field at level 0), batch by batch, and that the trees
// really share upper nodes, also across batch boundaries that split a tree.
func TestCompressedMatchesUncompressed(t *testing.T) {
	cases := []equivCase{
		{seed: 1, levels: 2, groups: 40, batchSize: 7, pooling: "sum"},
		{seed: 2, levels: 2, groups: 60, batchSize: 16, pooling: "mean"},
		{seed: 3, levels: 3, groups: 30, batchSize: 5, pooling: "sum"},
		{seed: 4, levels: 3, groups: 30, batchSize: 13, pooling: "mean"},
		{seed: 5, levels: 2, groups: 25, batchSize: 1, pooling: "sum"},
		{seed: 6, levels: 3, groups: 20, batchSize: 1000, pooling: "sum"},
	}
	for _, c := range cases {
		for _, seed := range []uint64{c.seed, c.seed + 100} { // two streams per shape
			c := c
			c.seed = seed
			t.Run(fmt.Sprintf("seed%d_L%d_B%d_%s", c.seed, c.levels, c.batchSize, c.pooling), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(c.seed, 77))
				tree, flat := equivLayouts(t, c)
				mlp, params := equivMLP(t, tree.Width(), c.seed)

				groups := equivGroups(rng, c)
				tbs, fbs := batchAll(t, tree, c.batchSize, groups), batchAll(t, flat, c.batchSize, groups)
				if len(tbs) != len(fbs) {
					t.Fatalf("%d compressed batches, %d flat ones", len(tbs), len(fbs))
				}
				var samples, upper, top, splitTrees int
				for bi := range tbs {
					tb, fb := tbs[bi], fbs[bi]
					if tb.N != fb.N || tb.End != fb.End || !slices.Equal(tb.Labels[:tb.N], fb.Labels[:fb.N]) {
						t.Fatalf("batch %d: %d samples ending at %v vs %d ending at %v, or other labels",
							bi, tb.N, tb.End, fb.N, fb.End)
					}
					if tb.End.Index > 0 && bi < len(tbs)-1 {
						splitTrees++
					}
					tr, fr := trainStep(tree, mlp, params, tb), trainStep(flat, mlp, params, fb)
					samples += tb.N
					upper += tr.nodes[1]
					top += tr.nodes[len(tr.nodes)-1]
					if tr.nodes[1] > tb.N {
						t.Fatalf("batch %d: %d level-1 nodes for %d samples", bi, tr.nodes[1], tb.N)
					}
					checkStepsMatch(t, bi, tr, fr)
				}
				if c.batchSize > 1 && (upper >= samples || (c.levels == 3 && top >= upper)) {
					t.Fatalf("%d samples, %d level-1 nodes, %d top-level nodes: nothing was compressed", samples, upper, top)
				}
				if c.batchSize > 1 && len(tbs) > 1 && splitTrees == 0 {
					t.Fatalf("no batch boundary falls inside a group: the case does not test split trees")
				}
				t.Logf("%d samples, %d batches, %d level-1 nodes, %d batches end inside a group", samples, len(tbs), upper, splitTrees)
			})
		}
	}
}
