package compress

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

// randomCase draws a layout of 1-3 levels (mixed tables, dense fields) and a
// stream of groups of 1-3 levels whose lines mostly, but not always, hold
// the fields of their own level, with repeated and duplicated upper lines.
func randomCase(rng *rand.Rand) ([]sparsenet.FieldSpec, []int, []*reader.Group) {
	levels := 1 + rng.IntN(3)
	dims := make([]int, 1+rng.IntN(3))
	for t := range dims {
		dims[t] = 1 + rng.IntN(3)
	}
	var specs []sparsenet.FieldSpec
	for f := 0; f < 3+rng.IntN(6); f++ {
		s := sparsenet.FieldSpec{Table: rng.IntN(len(dims)), Level: rng.IntN(levels)}
		if rng.IntN(4) == 0 {
			s.Table, s.DenseWidth = -1, 1+rng.IntN(2)
		}
		specs = append(specs, s)
	}
	var groups []*reader.Group
	for off := int64(0); off < int64(1+rng.IntN(8)); off++ {
		groups = append(groups, randomCaseGroup(rng, specs, off))
	}
	return specs, dims, groups
}

// groupGen draws the lines of one group of randomCase.
type groupGen struct {
	rng   *rand.Rand
	specs []sparsenet.FieldSpec
	g     *reader.Group
	off   int64 // the group's offset, in its labels
	mixed bool  // lines hold fields of other levels
	home  []int // the group level holding each dense field
	count []int // lines per group level
}

// randomCaseGroup draws the group at offset off of randomCase: 1-3 levels,
// fewer lines on each level than on the one below.
func randomCaseGroup(rng *rand.Rand, specs []sparsenet.FieldSpec, off int64) *reader.Group {
	gl := 1 + rng.IntN(3)
	gen := &groupGen{rng: rng, specs: specs, g: &reader.Group{}, off: off, mixed: rng.IntN(3) == 0,
		home: make([]int, len(specs)), count: make([]int, gl)}
	for f, s := range specs {
		gen.home[f] = min(s.Level, gl-1)
		if gen.mixed {
			gen.home[f] = rng.IntN(gl)
		}
	}
	g := gen.g
	g.Reset(gl)
	gen.count[gl-1] = 1 + rng.IntN(2)
	for k := gl - 2; k >= 0; k-- {
		gen.count[k] = gen.count[k+1] + rng.IntN(4)
	}
	for k := gl - 1; k >= 0; k-- {
		for i := 0; i < gen.count[k]; i++ {
			gen.addLine(k, i)
		}
	}
	g.Pos = reader.Position{File: "r", Offset: off}
	g.Next = reader.Position{File: "r", Offset: off + 1}
	if off == 0 && rng.IntN(4) == 0 {
		g.Pos.Index = rng.IntN(g.NumSamples() + 1)
	}
	return g
}

// addLine adds line i of group level k: under a parent mostly in order,
// sometimes a duplicate of the previous line, with the sparse features
// and dense fields of its level (of others too when mixed).
func (gen *groupGen) addLine(k, i int) {
	rng, g, gl := gen.rng, gen.g, len(gen.count)
	lv := &g.Levels[k]
	var parent int32
	if k < gl-1 {
		parent = int32(min(i*gen.count[k+1]/gen.count[k], gen.count[k+1]-1))
		if rng.IntN(5) == 0 {
			parent = int32(rng.IntN(gen.count[k+1]))
		}
	}
	if k > 0 && i > 0 && rng.IntN(3) == 0 { // a duplicate of the previous line
		fs, ids, vs := lv.Line(i - 1)
		fs, ids, vs = append([]uint32(nil), fs...), append([]uint64(nil), ids...), append([]float32(nil), vs...)
		g.AddLine(k, parent, fs, ids, vs)
		lv.Dense(i-1, func(f uint32, v []float32) { g.AddDense(k, f, append([]float32(nil), v...)) })
		return
	}
	var fs []uint32
	var ids []uint64
	var vs []float32
	for f, s := range gen.specs {
		if s.Table < 0 || (min(s.Level, gl-1) != k && !(gen.mixed && rng.IntN(4) == 0)) {
			continue
		}
		for j := rng.IntN(3); j > 0; j-- {
			fs, ids, vs = append(fs, uint32(f)), append(ids, rng.Uint64N(8)), append(vs, []float32{1, 0.5, -2}[rng.IntN(3)])
		}
	}
	g.AddLine(k, parent, fs, ids, vs)
	for f, s := range gen.specs {
		if s.Table < 0 && gen.home[f] == k && rng.IntN(3) > 0 {
			v := make([]float32, s.DenseWidth)
			for j := range v {
				v[j] = float32(rng.IntN(3))
			}
			g.AddDense(k, uint32(f), v)
		}
	}
	if k == 0 {
		g.AddLabels(float32(gen.off*1000) + float32(i))
	}
}

// flatSample is a sample with the features of its lines, its own first.
type flatSample struct {
	fields []uint32
	ids    []uint64
	values []float32
	dense  map[uint32][]float32
	label  float32
	key    []string // per layout level: its features, printed
}

func flatten(specs []sparsenet.FieldSpec, levels int, groups []*reader.Group) []flatSample {
	var out []flatSample
	for _, g := range groups {
		for j := g.Pos.Index; j < g.NumSamples(); j++ {
			s := flatSample{dense: map[uint32][]float32{}, label: g.Label(j)}
			keys := make([]strings.Builder, levels)
			for m, i := 0, int32(j); m < len(g.Levels); m++ {
				lv := &g.Levels[m]
				fs, ids, vs := lv.Line(int(i))
				for k, f := range fs {
					s.fields, s.ids, s.values = append(s.fields, f), append(s.ids, ids[k]), append(s.values, vs[k])
					fmt.Fprintf(&keys[specs[f].Level], "%d:%d*%x ", f, ids[k], math.Float32bits(vs[k]))
				}
				lv.Dense(int(i), func(f uint32, v []float32) {
					s.dense[f] = v
					fmt.Fprintf(&keys[specs[f].Level], "%d=%v ", f, v)
				})
				if m < len(g.Levels)-1 {
					i = lv.Parent[i]
				}
			}
			for k := range keys {
				s.key = append(s.key, keys[k].String())
			}
			out = append(out, s)
		}
	}
	return out
}

func pulled(b *sparsenet.Batch, dims []int) [][]float32 {
	rows := make([][]float32, len(dims))
	for t, d := range dims {
		for _, id := range b.IDs(t) {
			for j := 0; j < d; j++ {
				rows[t] = append(rows[t], float32(math.Cos(float64(t*100+int(id)*7+j))))
			}
		}
	}
	return rows
}

func near(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-4*(1+math.Abs(float64(b))) }

// TestBuilderTreeMatchesFlat checks, on random streams, that every batch
// shares nodes exactly as the package doc's rule says (against a naive
// comparison of the samples' printed features), that PoolTree expanded per
// sample equals Pool of the flattened samples under the one-level layout
// with the same column order, and that ScatterTree of the per-node sums of a
// flat gradient equals Scatter of that gradient.
func TestBuilderTreeMatchesFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for it := 0; it < 400; it++ {
		specs, dims, groups := randomCase(rng)
		c := newTreeFlatCase(t, it, specs, dims, sparsenet.Pooling(it%2))
		samples := flatten(specs, c.levels, groups)
		bs := 1 + rng.IntN(6)
		bts := build(t, c.l, bs, groups...)
		next := 0
		for bi, bt := range bts {
			checkBatch(t, bt)
			if bi < len(bts)-1 && bt.N != bs {
				t.Fatalf("case %d: batch %d has %d samples, want %d", it, bi, bt.N, bs)
			}
			c.checkAgainstFlat(t, rng, bi, bt, samples[next:next+bt.N])
			next += bt.N
		}
		if next != len(samples) {
			t.Fatalf("case %d: batches hold %d samples, the stream %d", it, next, len(samples))
		}
	}
}

// treeFlatCase is case it of TestBuilderTreeMatchesFlat: the layout l of
// its fields, and the one-level layout fl of the same fields in the same
// column order, (level, field).
type treeFlatCase struct {
	it     int
	dims   []int
	l, fl  *sparsenet.Layout
	levels int
	flatOf []uint32 // the field of fl of each field of l
}

func newTreeFlatCase(t *testing.T, it int, specs []sparsenet.FieldSpec, dims []int, pooling sparsenet.Pooling) *treeFlatCase {
	c := &treeFlatCase{it: it, dims: dims, l: mustLayout(t, specs, dims, pooling)}
	c.levels = c.l.Levels()
	var order []int // fields in (level, field) order
	for k := 0; k < c.levels; k++ {
		for f, s := range specs {
			if s.Level == k {
				order = append(order, f)
			}
		}
	}
	c.flatOf = make([]uint32, len(specs))
	flatSpecs := make([]sparsenet.FieldSpec, len(specs))
	for nf, f := range order {
		c.flatOf[f] = uint32(nf)
		flatSpecs[nf] = sparsenet.FieldSpec{Table: specs[f].Table, DenseWidth: specs[f].DenseWidth}
	}
	c.fl = mustLayout(t, flatSpecs, dims, pooling)
	return c
}

// checkAgainstFlat checks batch bi, bt, built of samples: its nodes are
// shared as the rule says, PoolTree matches Pool of the flat batch and
// ScatterTree of a random gradient summed per node matches Scatter.
func (c *treeFlatCase) checkAgainstFlat(t *testing.T, rng *rand.Rand, bi int, bt *Batch, samples []flatSample) {
	nodeOf := c.nodesOf(bt)
	c.checkSharing(t, bi, bt, samples, nodeOf)
	fb := c.flatBatch(t, samples)
	dx, dxs := c.checkPoolTree(t, rng, bi, bt, fb, nodeOf)
	c.checkScatterTree(t, bt, fb, dx, dxs)
}

// nodesOf returns the node of each sample of bt on each level.
func (c *treeFlatCase) nodesOf(bt *Batch) [][]int32 {
	nodeOf := make([][]int32, bt.N)
	for s := range nodeOf {
		nodeOf[s] = make([]int32, c.levels)
		for k, i := 0, int32(s); k < c.levels; k++ {
			nodeOf[s][k] = i
			if k < c.levels-1 {
				i = bt.Parent[k][i]
			}
		}
	}
	return nodeOf
}

// checkSharing checks the labels and the sharing rule, naively: a sample
// shares the node of the previous sample on level k when their features
// of level k and of every level above are the same.
func (c *treeFlatCase) checkSharing(t *testing.T, bi int, bt *Batch, batch []flatSample, nodeOf [][]int32) {
	for s := range batch {
		if bt.Labels[s] != batch[s].label {
			t.Fatalf("case %d: batch %d sample %d has label %v, want %v", c.it, bi, s, bt.Labels[s], batch[s].label)
		}
		same := true // the level above is shared (the top has none)
		for k := c.levels - 1; k >= 1; k-- {
			same = same && s > 0 && batch[s].key[k] == batch[s-1].key[k]
			want := int32(0)
			if s > 0 {
				want = nodeOf[s-1][k]
				if !same {
					want++
				}
			}
			if nodeOf[s][k] != want {
				t.Fatalf("case %d: batch %d sample %d level %d: node %d, want %d (features %q after %q)",
					c.it, bi, s, k, nodeOf[s][k], want, batch[s].key[k], batch[max(s-1, 0)].key[k])
			}
		}
	}
}

// flatBatch returns the batch of fl holding samples: the reference.
func (c *treeFlatCase) flatBatch(t *testing.T, samples []flatSample) *sparsenet.Batch {
	fb := c.fl.NewBatch()
	for s, smp := range samples {
		fs := make([]uint32, len(smp.fields))
		for i, f := range smp.fields {
			fs[i] = c.flatOf[f]
		}
		if err := fb.Add(fs, smp.ids, smp.values); err != nil {
			t.Fatal(err)
		}
		for f, v := range smp.dense {
			if err := fb.SetDense(0, s, c.flatOf[f], v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fb
}

// checkPoolTree checks that PoolTree of bt, expanded per sample, equals
// Pool of fb. It returns a random flat gradient dx and its sums per node of
// bt, dxs.
func (c *treeFlatCase) checkPoolTree(t *testing.T, rng *rand.Rand, bi int, bt *Batch, fb *sparsenet.Batch,
	nodeOf [][]int32) (dx []float32, dxs [][]float32) {
	l, w := c.l, c.l.Width()
	flat := make([]float32, bt.N*w)
	fb.Pool(pulled(fb, c.dims), flat)
	xs, dxs := make([][]float32, c.levels), make([][]float32, c.levels)
	for k := range xs {
		lo, hi := l.LevelCols(k)
		xs[k], dxs[k] = make([]float32, bt.Sparse.Nodes(k)*(hi-lo)), make([]float32, bt.Sparse.Nodes(k)*(hi-lo))
	}
	bt.Sparse.PoolTree(pulled(bt.Sparse, c.dims), xs)
	dx = make([]float32, len(flat))
	for i := range dx {
		dx[i] = float32(rng.NormFloat64())
	}
	for s := 0; s < bt.N; s++ {
		for k := 0; k < c.levels; k++ {
			lo, hi := l.LevelCols(k)
			cols, n := hi-lo, int(nodeOf[s][k])
			for j := 0; j < cols; j++ {
				if got, want := xs[k][n*cols+j], flat[s*w+lo+j]; !near(got, want) {
					t.Fatalf("case %d: batch %d sample %d level %d col %d: tree %v, flat %v", c.it, bi, s, k, j, got, want)
				}
				dxs[k][n*cols+j] += dx[s*w+lo+j]
			}
		}
	}
	return dx, dxs
}

// checkScatterTree checks that ScatterTree of dxs gives the gradient
// Scatter of dx gives, id by id.
func (c *treeFlatCase) checkScatterTree(t *testing.T, bt *Batch, fb *sparsenet.Batch, dx []float32, dxs [][]float32) {
	fg, tg := make([][]float32, len(c.dims)), make([][]float32, len(c.dims))
	for tab, d := range c.dims {
		fg[tab], tg[tab] = make([]float32, len(fb.IDs(tab))*d), make([]float32, len(bt.Sparse.IDs(tab))*d)
	}
	fb.Scatter(dx, fg)
	bt.Sparse.ScatterTree(dxs, tg)
	for tab, d := range c.dims {
		if len(fb.IDs(tab)) != len(bt.Sparse.IDs(tab)) {
			t.Fatalf("case %d: table %d: %d ids in the tree, %d flat", c.it, tab, len(bt.Sparse.IDs(tab)), len(fb.IDs(tab)))
		}
		at := map[uint64]int{}
		for k, id := range fb.IDs(tab) {
			at[id] = k
		}
		for k, id := range bt.Sparse.IDs(tab) {
			fk, ok := at[id]
			if !ok {
				t.Fatalf("case %d: table %d: id %d only in the tree", c.it, tab, id)
			}
			for j := 0; j < d; j++ {
				if got, want := tg[tab][k*d+j], fg[tab][fk*d+j]; !near(got, want) {
					t.Fatalf("case %d: table %d id %d [%d]: tree grad %v, flat %v", c.it, tab, id, j, got, want)
				}
			}
		}
	}
}
