package sparsenet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLayoutFieldsColumns(t *testing.T) {
	// fields: 0 sparse t0 level 1, 1 dense(2) level 0, 2 sparse t1 level 0,
	// 3 sparse t0 level 2, 4 dense(3) level 1.
	l, err := NewLayoutFields([]FieldSpec{
		{Table: 0, Level: 1}, {Table: -1, DenseWidth: 2}, {Table: 1}, {Table: 0, Level: 2}, {Table: -1, Level: 1, DenseWidth: 3},
	}, []int{4, 5}, Sum)
	if err != nil {
		t.Fatal(err)
	}
	if l.Levels() != 3 || l.Width() != 2+5+4+3+4 {
		t.Fatalf("Levels %d Width %d", l.Levels(), l.Width())
	}
	var got []string
	for k := 0; k < l.Levels(); k++ {
		lo, hi := l.LevelCols(k)
		got = append(got, fmt.Sprintf("%d:[%d,%d)", k, lo, hi))
	}
	for f := 0; f < l.Fields(); f++ {
		got = append(got, fmt.Sprintf("f%d@%d/L%d/t%d/w%d", f, l.offsets[f], l.Level(f), l.Table(f), l.DenseWidth(f)))
	}
	want := []string{"0:[0,7)", "1:[7,14)", "2:[14,18)",
		"f0@7/L1/t0/w0", "f1@0/L0/t-1/w2", "f2@2/L0/t1/w0", "f3@14/L2/t0/w0", "f4@11/L1/t-1/w3"}
	if !slices.Equal(got, want) {
		t.Fatalf("layout\n got %v\nwant %v", got, want)
	}
}

func TestLayoutFieldsErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []FieldSpec
		dims   []int
	}{
		{"no fields", nil, []int{4}},
		{"negative level", []FieldSpec{{Level: -1}}, []int{4}},
		{"level too high", []FieldSpec{{Level: MaxLevels}}, []int{4}},
		{"dense without width", []FieldSpec{{Table: -1}}, []int{4}},
		{"sparse with width", []FieldSpec{{Table: 0, DenseWidth: 2}}, []int{4}},
		{"table out of range", []FieldSpec{{Table: 1}}, []int{4}},
		{"table below -1", []FieldSpec{{Table: -2, DenseWidth: 1}}, []int{4}},
		{"zero dim", []FieldSpec{{Table: 0}}, []int{0}},
	} {
		if _, err := NewLayoutFields(tc.fields, tc.dims, Sum); !errors.Is(err, ErrBadLayout) {
			t.Errorf("%s: NewLayoutFields = %v, want ErrBadLayout", tc.name, err)
		}
	}
	// A layout of dense fields only needs no table.
	if _, err := NewLayoutFields([]FieldSpec{{Table: -1, DenseWidth: 3}}, nil, Mean); err != nil {
		t.Errorf("dense-only layout: %v", err)
	}
}

func TestAddNodeSetDenseErrors(t *testing.T) {
	l, err := NewLayoutFields([]FieldSpec{{Table: 0}, {Table: 0, Level: 1}, {Table: -1, Level: 1, DenseWidth: 2}}, []int{3}, Mean)
	if err != nil {
		t.Fatal(err)
	}
	b := l.NewBatch()
	one := []float32{1}
	for _, tc := range []struct {
		level int
		field uint32
		want  error
	}{
		{0, 3, ErrUnknownField},
		{1, 2, ErrUnknownField}, // dense field given ids
		{0, 1, ErrWrongLevel},
		{1, 0, ErrWrongLevel},
		{2, 0, ErrWrongLevel}, // no such level
	} {
		if _, err := b.AddNode(tc.level, []uint32{tc.field}, []uint64{7}, one); !errors.Is(err, tc.want) {
			t.Errorf("AddNode(%d, field %d) = %v, want %v", tc.level, tc.field, err, tc.want)
		}
	}
	if b.N != 0 || b.Nodes(1) != 0 || b.Features() != 0 || b.Unique() != 0 {
		t.Fatalf("refused nodes left N=%d nodes1=%d features=%d unique=%d", b.N, b.Nodes(1), b.Features(), b.Unique())
	}
	n, err := b.AddNode(1, []uint32{1}, []uint64{7}, one)
	if err != nil || n != 0 {
		t.Fatalf("AddNode = %d, %v", n, err)
	}
	for _, tc := range []struct {
		level  int
		field  uint32
		values []float32
		want   error
	}{
		{1, 3, []float32{1, 2}, ErrUnknownField},
		{1, 1, []float32{1, 2}, ErrUnknownField}, // sparse field given a vector
		{0, 2, []float32{1, 2}, ErrWrongLevel},
		{1, 2, []float32{1}, ErrDenseWidth},
	} {
		if err := b.SetDense(tc.level, 0, tc.field, tc.values); !errors.Is(err, tc.want) {
			t.Errorf("SetDense(%d, field %d, %v) = %v, want %v", tc.level, tc.field, tc.values, err, tc.want)
		}
	}
	if err := b.SetDense(1, 0, 2, []float32{4, 5}); err != nil {
		t.Fatal(err)
	}
	xs := [][]float32{nil, make([]float32, 5)}
	b.PoolTree([][]float32{{1, 2, 3}}, xs)
	if want := []float32{1, 2, 3, 4, 5}; !slices.Equal(xs[1], want) {
		t.Fatalf("pooled user node %v, want %v", xs[1], want)
	}
}

// treeCase is a random layout of up to 3 levels with a random tree of nodes:
// parent[k][i] is the level-(k+1) node of level-k node i.
type treeCase struct {
	specs  []FieldSpec
	dims   []int
	parent [][]int32
	nodes  [][]node // per level
}

type node struct {
	sample
	dense map[uint32][]float32
}

func randomTree(rng *rand.Rand) treeCase {
	var tc treeCase
	levels := 1 + rng.IntN(3)
	tc.dims = make([]int, 1+rng.IntN(3))
	for t := range tc.dims {
		tc.dims[t] = 1 + rng.IntN(4)
	}
	nf := 2 + rng.IntN(7)
	for f := 0; f < nf; f++ {
		s := FieldSpec{Table: rng.IntN(len(tc.dims)), Level: rng.IntN(levels)}
		if rng.IntN(4) == 0 {
			s.Table, s.DenseWidth = -1, 1+rng.IntN(3)
		}
		tc.specs = append(tc.specs, s)
	}
	count := make([]int, levels)
	count[levels-1] = 1 + rng.IntN(3)
	for k := levels - 2; k >= 0; k-- {
		count[k] = count[k+1] + rng.IntN(2*count[k+1]+2)
	}
	tc.parent = make([][]int32, levels-1)
	for k := 0; k < levels-1; k++ {
		for i := 0; i < count[k]; i++ { // every upper node has a child
			p := int32(i)
			if i >= count[k+1] {
				p = int32(rng.IntN(count[k+1]))
			}
			tc.parent[k] = append(tc.parent[k], p)
		}
		rng.Shuffle(count[k], func(i, j int) { tc.parent[k][i], tc.parent[k][j] = tc.parent[k][j], tc.parent[k][i] })
	}
	tc.nodes = make([][]node, levels)
	for k := range tc.nodes {
		for i := 0; i < count[k]; i++ {
			n := node{dense: map[uint32][]float32{}}
			for f, s := range tc.specs {
				if s.Level != k {
					continue
				}
				if s.Table < 0 {
					if rng.IntN(4) > 0 { // a missing dense field pools to zeros
						v := make([]float32, s.DenseWidth)
						for j := range v {
							v[j] = float32(rng.NormFloat64())
						}
						n.dense[uint32(f)] = v
					}
					continue
				}
				for j := rng.IntN(4); j > 0; j-- { // empty bags happen
					n.fields = append(n.fields, uint32(f))
					n.ids = append(n.ids, rng.Uint64N(12))
					n.values = append(n.values, float32(rng.NormFloat64()))
				}
			}
			tc.nodes[k] = append(tc.nodes[k], n)
		}
	}
	return tc
}

func rowsFor(b *Batch, dims []int) [][]float32 {
	rows := make([][]float32, len(dims))
	for t, d := range dims {
		for _, id := range b.IDs(t) {
			for j := 0; j < d; j++ {
				rows[t] = append(rows[t], float32(math.Sin(float64(t*1000+int(id)*10+j))))
			}
		}
	}
	return rows
}

// gradsByID maps (table, id) to the id's gradient row.
func gradsByID(b *Batch, dims []int, grads [][]float32) map[[2]uint64][]float32 {
	m := map[[2]uint64][]float32{}
	for t, d := range dims {
		for k, id := range b.IDs(t) {
			m[[2]uint64{uint64(t), id}] = grads[t][k*d : (k+1)*d]
		}
	}
	return m
}

func close32(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-4*(1+math.Abs(float64(b))) }

// TestPoolTreeMatchesFlat checks PoolTree and ScatterTree against Pool and
// Scatter of the flattened samples (each sample's features and those of its
// ancestors) under the one-level layout with the same column order.
func TestPoolTreeMatchesFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for it := 0; it < 300; it++ {
		tc := randomTree(rng)
		ls := newTreeLayouts(t, tc, Pooling(it%2))
		tb, fb := ls.l.NewBatch(), ls.fl.NewBatch()
		for round := 0; round < 2; round++ { // reuse after Reset
			tb.Reset()
			fb.Reset()
			ls.fillTree(t, tb, tc)
			ls.fillFlat(t, fb, tc)
			if tb.N != fb.N || tb.Unique() != fb.Unique() || tb.Features() > fb.Features() {
				t.Fatalf("N %d/%d unique %d/%d features %d/%d", tb.N, fb.N, tb.Unique(), fb.Unique(), tb.Features(), fb.Features())
			}
			dx, dxs := ls.checkPoolTree(t, rng, it, tc, tb, fb)
			ls.checkScatterTree(t, it, tc, tb, fb, dx, dxs)
		}
	}
}

// treeLayouts is the layout l of a treeCase and the flat layout fl of the
// same fields, renumbered in (level, field) order.
type treeLayouts struct {
	l, fl  *Layout
	levels int
	flatOf []uint32 // the field of fl of each field of l
}

func newTreeLayouts(t *testing.T, tc treeCase, pooling Pooling) *treeLayouts {
	l, err := NewLayoutFields(tc.specs, tc.dims, pooling)
	if err != nil {
		t.Fatal(err)
	}
	ls := &treeLayouts{l: l, levels: l.Levels()}
	var order []int
	for k := 0; k < ls.levels; k++ {
		for f, s := range tc.specs {
			if s.Level == k {
				order = append(order, f)
			}
		}
	}
	ls.flatOf = make([]uint32, len(order))
	flatSpecs := make([]FieldSpec, len(order))
	for nf, f := range order {
		ls.flatOf[f] = uint32(nf)
		flatSpecs[nf] = FieldSpec{Table: tc.specs[f].Table, DenseWidth: tc.specs[f].DenseWidth}
	}
	if ls.fl, err = NewLayoutFields(flatSpecs, tc.dims, pooling); err != nil {
		t.Fatal(err)
	}
	if ls.fl.Width() != l.Width() {
		t.Fatalf("widths %d vs %d", ls.fl.Width(), l.Width())
	}
	return ls
}

// fillTree adds tc's nodes to tb, level by level, checking their indices.
func (ls *treeLayouts) fillTree(t *testing.T, tb *Batch, tc treeCase) {
	for k := ls.levels - 1; k >= 0; k-- { // any order of levels works; top first as package compress does
		for i, n := range tc.nodes[k] {
			got, err := tb.AddNode(k, n.fields, n.ids, n.values)
			if err != nil || got != i {
				t.Fatalf("AddNode(%d) = %d, %v; want %d", k, got, err, i)
			}
			for f, v := range n.dense {
				if err := tb.SetDense(k, i, f, v); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// fillFlat adds to fb one sample per level-0 node of tc, with the features
// of the node and of its ancestors.
func (ls *treeLayouts) fillFlat(t *testing.T, fb *Batch, tc treeCase) {
	for s := range tc.nodes[0] {
		var fs []uint32
		var ids []uint64
		var vs []float32
		dense := map[uint32][]float32{}
		for k, i := 0, int32(s); k < ls.levels; k++ {
			n := tc.nodes[k][i]
			for j, f := range n.fields {
				fs, ids, vs = append(fs, ls.flatOf[f]), append(ids, n.ids[j]), append(vs, n.values[j])
			}
			for f, v := range n.dense {
				dense[ls.flatOf[f]] = v
			}
			if k < ls.levels-1 {
				i = tc.parent[k][i]
			}
		}
		if err := fb.Add(fs, ids, vs); err != nil {
			t.Fatal(err)
		}
		for f, v := range dense {
			if err := fb.SetDense(0, s, f, v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkPoolTree checks that PoolTree of tb, expanded per sample, equals
// Pool of fb. It returns a random flat gradient dx and its sums per node
// of tb, dxs.
func (ls *treeLayouts) checkPoolTree(t *testing.T, rng *rand.Rand, it int, tc treeCase, tb, fb *Batch) (dx []float32, dxs [][]float32) {
	l, w := ls.l, ls.l.Width()
	flat := make([]float32, fb.N*w)
	fb.Pool(rowsFor(fb, tc.dims), flat)
	xs := make([][]float32, ls.levels)
	for k := range xs {
		lo, hi := l.LevelCols(k)
		xs[k] = make([]float32, tb.Nodes(k)*(hi-lo)+rng.IntN(3)) // longer buffers are fine
	}
	tb.PoolTree(rowsFor(tb, tc.dims), xs)
	// expand, and sum a random flat gradient per node
	dx = make([]float32, len(flat))
	for i := range dx {
		dx[i] = float32(rng.NormFloat64())
	}
	dxs = make([][]float32, ls.levels)
	for k := range dxs {
		dxs[k] = make([]float32, len(xs[k]))
	}
	for s := 0; s < fb.N; s++ {
		for k, i := 0, int32(s); k < ls.levels; k++ {
			lo, hi := l.LevelCols(k)
			c := hi - lo
			for j := 0; j < c; j++ {
				if got, want := xs[k][int(i)*c+j], flat[s*w+lo+j]; !close32(got, want) {
					t.Fatalf("case %d: sample %d level %d col %d: tree %v, flat %v", it, s, k, j, got, want)
				}
				dxs[k][int(i)*c+j] += dx[s*w+lo+j]
			}
			if k < ls.levels-1 {
				i = tc.parent[k][i]
			}
		}
	}
	return dx, dxs
}

// checkScatterTree checks that ScatterTree of dxs gives the gradient
// Scatter of dx gives, id by id, overwriting its output.
func (ls *treeLayouts) checkScatterTree(t *testing.T, it int, tc treeCase, tb, fb *Batch, dx []float32, dxs [][]float32) {
	fgrads, tgrads := make([][]float32, len(tc.dims)), make([][]float32, len(tc.dims))
	for t, d := range tc.dims {
		fgrads[t] = make([]float32, len(fb.IDs(t))*d)
		tgrads[t] = make([]float32, len(tb.IDs(t))*d)
		for i := range tgrads[t] {
			tgrads[t][i] = 99 // overwritten
		}
	}
	fb.Scatter(dx, fgrads)
	tb.ScatterTree(dxs, tgrads)
	want, got := gradsByID(fb, tc.dims, fgrads), gradsByID(tb, tc.dims, tgrads)
	if len(want) != len(got) {
		t.Fatalf("case %d: %d ids in the tree, %d flat", it, len(got), len(want))
	}
	for key, g := range got {
		for j := range g {
			if !close32(g[j], want[key][j]) {
				t.Fatalf("case %d: grad of table %d id %d [%d]: tree %v, flat %v", it, key[0], key[1], j, g[j], want[key][j])
			}
		}
	}
}

func TestPoolOneLevelOnly(t *testing.T) {
	l, _ := NewLayoutFields([]FieldSpec{{Table: 0}, {Table: 0, Level: 1}}, []int{2}, Sum)
	defer func() {
		if recover() == nil {
			t.Fatal("Pool on a 2-level layout did not panic")
		}
	}()
	l.NewBatch().Pool([][]float32{nil}, nil)
}

func TestBatchSteadyStateNoAlloc(t *testing.T) {
	l, _ := NewLayoutFields([]FieldSpec{{Table: 0}, {Table: 1, Level: 1}, {Table: -1, Level: 1, DenseWidth: 4}}, []int{8, 4}, Mean)
	b := l.NewBatch()
	fields0, fields1 := []uint32{0, 0, 0}, []uint32{1, 1}
	ids, vals, dense := []uint64{1, 2, 3}, []float32{1, 1, 1}, []float32{1, 2, 3, 4}
	fill := func() {
		b.Reset()
		for u := 0; u < 20; u++ {
			n, _ := b.AddNode(1, fields1, ids[:2], vals[:2])
			_ = b.SetDense(1, n, 2, dense)
			for s := 0; s < 10; s++ {
				ids[0] = uint64(u*100 + s)
				_, _ = b.AddNode(0, fields0, ids, vals)
			}
		}
	}
	fill()
	if a := testing.AllocsPerRun(20, fill); a != 0 {
		t.Fatalf("steady-state fill allocates %v times", a)
	}
}
