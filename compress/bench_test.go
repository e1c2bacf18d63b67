package compress

import (
	"math/rand/v2"
	"testing"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

const (
	benchUserFields = 20
	benchItemFields = 3
	benchBagSize    = 3
	benchBatch      = 256
	benchSamples    = 64 * benchBatch
)

// benchLayout has the 3 item fields (0-2) at level 0 and the 20 user fields
// (3-22) at level 1, all in one table of dim 18.
func benchLayout(b *testing.B) *sparsenet.Layout {
	specs := make([]sparsenet.FieldSpec, benchItemFields+benchUserFields)
	for f := benchItemFields; f < len(specs); f++ {
		specs[f].Level = 1
	}
	return mustLayout(b, specs, []int{18}, sparsenet.Sum)
}

// benchGroups generates benchSamples samples in groups of one user and rep
// samples: 2-level groups, or (flat) one group per sample holding the user's
// features on the sample's line.
func benchGroups(rep int, flat bool) []*reader.Group {
	rng := rand.New(rand.NewPCG(uint64(rep), 1))
	feats := func(from, n int) (fs []uint32, ids []uint64, vs []float32) {
		for f := from; f < from+n; f++ {
			for j := 0; j < benchBagSize; j++ {
				fs, ids, vs = append(fs, uint32(f)), append(ids, rng.Uint64N(100_000)), append(vs, 1)
			}
		}
		return fs, ids, vs
	}
	var out []*reader.Group
	for s := 0; s < benchSamples; s += rep {
		ufs, uids, uvs := feats(benchItemFields, benchUserFields)
		if flat {
			for j := 0; j < rep; j++ {
				g := &reader.Group{}
				g.Reset(1)
				fs, ids, vs := feats(0, benchItemFields)
				g.AddLine(0, 0, append(fs, ufs...), append(ids, uids...), append(vs, uvs...))
				g.AddLabels(float32(j % 2))
				g.Pos, g.Next = reader.Position{Offset: int64(len(out))}, reader.Position{Offset: int64(len(out) + 1)}
				out = append(out, g)
			}
			continue
		}
		g := &reader.Group{}
		g.Reset(2)
		g.AddLine(1, 0, ufs, uids, uvs)
		for j := 0; j < rep; j++ {
			fs, ids, vs := feats(0, benchItemFields)
			g.AddLine(0, 0, fs, ids, vs)
			g.AddLabels(float32(j % 2))
		}
		g.Pos, g.Next = reader.Position{Offset: int64(len(out))}, reader.Position{Offset: int64(len(out) + 1)}
		out = append(out, g)
	}
	return out
}

func benchBuilder(b *testing.B, rep int, flat bool) {
	l := benchLayout(b)
	groups := benchGroups(rep, flat)
	bld, err := NewBuilder(Options{BatchSize: benchBatch, Layout: l})
	if err != nil {
		b.Fatal(err)
	}
	samples := 0
	pass := func() {
		for _, g := range groups {
			if err := bld.Add(g); err != nil {
				b.Fatal(err)
			}
			for bt := bld.Take(); bt != nil; bt = bld.Take() {
				samples += bt.N
				bld.Recycle(bt)
			}
		}
	}
	pass() // grow the recycled batches
	samples = 0
	b.ReportAllocs()
	for b.Loop() {
		pass()
	}
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
	s := bld.Stats()
	b.ReportMetric(s.Ratio(1), "samples/user")
}

// BenchmarkBuilder_RepN: 2-level groups of one user and N samples (the fast
// path: line levels match the layout).
func BenchmarkBuilder_Rep1(b *testing.B)  { benchBuilder(b, 1, false) }
func BenchmarkBuilder_Rep5(b *testing.B)  { benchBuilder(b, 5, false) }
func BenchmarkBuilder_Rep20(b *testing.B) { benchBuilder(b, 20, false) }
func BenchmarkBuilder_Rep57(b *testing.B) { benchBuilder(b, 57, false) }

// BenchmarkBuilderFlat_RepN: the same samples as one-line groups (the user's
// features on every line): nodes are found by comparing features.
func BenchmarkBuilderFlat_Rep1(b *testing.B)  { benchBuilder(b, 1, true) }
func BenchmarkBuilderFlat_Rep5(b *testing.B)  { benchBuilder(b, 5, true) }
func BenchmarkBuilderFlat_Rep20(b *testing.B) { benchBuilder(b, 20, true) }
func BenchmarkBuilderFlat_Rep57(b *testing.B) { benchBuilder(b, 57, true) }

// benchPool pools and scatters one batch of 256 samples whose users repeat
// rep times, as trees (PoolTree, ScatterTree) or as flat samples (Pool and
// Scatter of every sample's 69 features under the one-level layout).
func benchPool(b *testing.B, rep int, tree bool) {
	l := benchLayout(b)
	if !tree {
		specs := make([]sparsenet.FieldSpec, benchItemFields+benchUserFields)
		l = mustLayout(b, specs, []int{18}, sparsenet.Sum)
	}
	bld, err := NewBuilder(Options{BatchSize: benchBatch, Layout: l})
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range benchGroups(rep, false) {
		if err := bld.Add(g); err != nil {
			b.Fatal(err)
		}
	}
	bt := bld.Take()
	sp := bt.Sparse
	rows := [][]float32{make([]float32, len(sp.IDs(0))*18)}
	grads := [][]float32{make([]float32, len(rows[0]))}
	xs := make([][]float32, l.Levels())
	for k := range xs {
		lo, hi := l.LevelCols(k)
		xs[k] = make([]float32, sp.Nodes(k)*(hi-lo))
	}
	b.ReportAllocs()
	for b.Loop() {
		sp.PoolTree(rows, xs)
		sp.ScatterTree(xs, grads)
	}
	b.ReportMetric(float64(b.N*bt.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkPoolScatter_Flat_Rep20(b *testing.B) { benchPool(b, 20, false) }
func BenchmarkPoolScatter_Tree_Rep20(b *testing.B) { benchPool(b, 20, true) }
