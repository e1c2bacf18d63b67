package ctr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

// seqModel is the sequence model of the tests, its fields numbered in
// level order (as equivModel's) so that the compressed layout and the
// one-level one give the MLP the same columns:
//
//	level 0: f0 candidate item (items), f1 its category (cats), f2 a bag (a)
//	level 1: f3 user (a), f4 history items, f5 their categories,
//	         f6, f7 the negatives (dien)
func seqModel(kind string, maxLen int) (config.Config, Shape) {
	cfg := config.Config{}
	cfg.Model.Kind = kind
	cfg.Model.Tables = []ams.TableSpec{{Name: "items", Dim: 3}, {Name: "cats", Dim: 2}, {Name: "a", Dim: 3}}
	cfg.Model.FieldTables = []string{"items", "cats", "a", "a", "items", "cats", "items", "cats"}
	cfg.Model.Hidden = []int{8}
	cfg.Model.Sequence = config.SequenceConfig{History: []int{4, 5}, Target: []int{0, 1}, MaxLen: maxLen, Attention: []int{6, 4}}
	if kind == config.KindDIEN {
		cfg.Model.Sequence.Negatives = []int{6, 7}
	}
	cfg.EnsureDefaults()
	return cfg, Shape{Fields: 8, Levels: []int{0, 0, 0, 1, 1, 1, 1, 1}}
}

// seqGroups draws groups of one user line (a history of 0 to maxLen+2
// items, some longer than the model keeps) and 1 to 4 candidates, from
// small vocabularies so that history items and candidates coincide.
func seqGroups(rng *rand.Rand, groups, maxLen int) []*reader.Group {
	item := func() (uint64, uint64) {
		k := rng.Uint64N(9)
		return 1<<40 | k, 2<<40 | k%4 // an item and its category
	}
	var out []*reader.Group
	for gi := range groups {
		g := new(reader.Group)
		g.Reset(2)
		var f []uint32
		var ids []uint64
		var vals []float32
		f, ids, vals = append(f, 3), append(ids, 3<<40|rng.Uint64N(5)), append(vals, 1)
		for range rng.IntN(maxLen + 3) {
			it, c := item()
			n, nc := item()
			f, ids, vals = append(f, 4, 5, 6, 7), append(ids, it, c, n, nc), append(vals, 1, 1, 1, 1)
		}
		g.AddLine(1, 0, f, ids, vals)
		for range 1 + rng.IntN(4) {
			it, c := item()
			f, ids, vals = []uint32{0, 1, 2, 2}, []uint64{it, c, 5<<40 | rng.Uint64N(7), 5<<40 | rng.Uint64N(7)}, []float32{1, 1, 1, 0.5}
			g.AddLine(0, 0, f, ids, vals)
			g.AddLabels(float32(rng.IntN(2)))
		}
		g.Pos = reader.Position{File: "seq", Offset: int64(gi)}
		g.Next = reader.Position{File: "seq", Offset: int64(gi + 1)}
		out = append(out, g)
	}
	return out
}

// pooledTree pools batch bt over rowValue's rows into a tree of l's
// levels, with a gradient buffer of the same shape.
func pooledTree(l *sparsenet.Layout, bt *compress.Batch) (densenet.Tree, [][]float32) {
	L := l.Levels()
	rows := make([][]float32, l.Tables())
	for ti := range rows {
		for _, id := range bt.Sparse.IDs(ti) {
			for j := range l.Dim(ti) {
				rows[ti] = append(rows[ti], rowValue(ti, id, j))
			}
		}
	}
	tree := densenet.Tree{Cols: make([]int, L+1), Count: make([]int, L), X: make([][]float32, L), Parent: bt.Parent}
	dX := make([][]float32, L)
	for k := range L {
		lo, hi := l.LevelCols(k)
		tree.Cols[k], tree.Cols[k+1] = lo, hi
		tree.Count[k] = bt.Sparse.Nodes(k)
		tree.X[k] = make([]float32, tree.Count[k]*(hi-lo))
		dX[k] = make([]float32, tree.Count[k]*(hi-lo))
	}
	bt.Sparse.PoolTree(rows, tree.X)
	return tree, dX
}

// netStep is trainStep with a Net: the step's click loss plus the
// auxiliary loss, logits, dense gradient and per-id sparse gradients.
func netStep(net *Net, params []float32, bt *compress.Batch) stepResult {
	l := net.Layout
	tree, dX := pooledTree(l, bt)
	n := bt.N
	ws := net.NewWorkspace(n, 1)
	res := stepResult{logits: make([]float32, n), dense: make([]float32, net.NumParams()), nodes: tree.Count}
	net.ForwardTree(ws, params, tree, res.logits)
	probs, dlogits := make([]float32, n), make([]float32, n)
	res.loss = densenet.SigmoidBCE(res.logits, bt.Labels[:n], probs, dlogits)
	net.BackwardTree(ws, params, tree, dlogits, res.dense, dX)
	res.loss += ws.seq.auxLoss
	res.sparse = idGrads(l, bt, dX)
	return res
}

// seqNets returns the compressed and the flat Net of kind, which must
// have one dense parameter vector.
func seqNets(t *testing.T, kind string, maxLen int) (tree, flat *Net) {
	t.Helper()
	cfg, sh := seqModel(kind, maxLen)
	tree, err := NewNet(cfg, sh)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	cfg.Train.Compress = &no
	if flat, err = NewNet(cfg, sh); err != nil {
		t.Fatal(err)
	}
	if tree.Layout.Levels() != 2 || flat.Layout.Levels() != 1 || tree.NumParams() != flat.NumParams() {
		t.Fatalf("nets: %d and %d levels, %d and %d parameters", tree.Layout.Levels(), flat.Layout.Levels(), tree.NumParams(), flat.NumParams())
	}
	return tree, flat
}

// TestSequenceCompressedMatchesFlat checks that din and dien on
// prefix-tree batches (the history once per user node: its GRU, its sum,
// its keys) give the loss (with dien's auxiliary loss), logits, dense
// gradient and per-id sparse gradients of the same samples batched flat.
func TestSequenceCompressedMatchesFlat(t *testing.T) {
	for _, kind := range []string{config.KindDIN, config.KindDIEN} {
		for _, bs := range []int{1, 5, 16, 300} {
			t.Run(fmt.Sprintf("%s_B%d", kind, bs), func(t *testing.T) {
				const maxLen = 4
				tree, flat := seqNets(t, kind, maxLen)
				params := make([]float32, tree.NumParams())
				tree.Init(params, 3)
				groups := seqGroups(rand.New(rand.NewPCG(uint64(bs), 9)), 60, maxLen)
				tbs, fbs := batchAll(t, tree.Layout, bs, groups), batchAll(t, flat.Layout, bs, groups)
				if len(tbs) != len(fbs) {
					t.Fatalf("%d compressed batches, %d flat ones", len(tbs), len(fbs))
				}
				var samples, users int
				for bi := range tbs {
					tr, fr := netStep(tree, params, tbs[bi]), netStep(flat, params, fbs[bi])
					checkStepsMatch(t, bi, tr, fr)
					samples += tbs[bi].N
					users += tr.nodes[1]
				}
				if bs > 1 && users >= samples {
					t.Fatalf("%d samples, %d user nodes: nothing was compressed", samples, users)
				}
			})
		}
	}
}

// TestSequenceGradients checks the Net's gradients for din and dien (the
// history's gathering, the attention, dien's GRUs and auxiliary loss,
// the scatter back to the layout) against central differences of its
// loss Σ c_s·logit_s + aux, on one compressed batch.
func TestSequenceGradients(t *testing.T) {
	for _, kind := range []string{config.KindDIN, config.KindDIEN} {
		t.Run(kind, func(t *testing.T) {
			net, _ := seqNets(t, kind, 4)
			params := make([]float32, net.NumParams())
			net.Init(params, 5)
			rng := rand.New(rand.NewPCG(4, 4))
			bts := batchAll(t, net.Layout, 12, seqGroups(rng, 6, 4))
			tree, dX := pooledTree(net.Layout, bts[0])
			n := tree.Count[0]
			c := make([]float32, n)
			for i := range c {
				c[i] = float32(rng.NormFloat64())
			}
			ws := net.NewWorkspace(n, 1)
			logits, grad := make([]float32, n), make([]float32, len(params))
			loss := func() float64 {
				net.ForwardTree(ws, params, tree, logits)
				net.BackwardTree(ws, params, tree, c, grad, dX)
				sum := ws.seq.auxLoss
				for i, z := range logits {
					sum += float64(c[i] * z)
				}
				return sum
			}
			loss()
			dp := append([]float32(nil), grad...)
			dx := [][]float32{append([]float32(nil), dX[0]...), append([]float32(nil), dX[1]...)}
			check := func(what string, v []float32, i int, want float32) {
				t.Helper()
				const eps = 2e-3
				old := v[i]
				v[i] = old + eps
				up := loss()
				v[i] = old - eps
				down := loss()
				v[i] = old
				fd := (up - down) / (2 * eps)
				if math.Abs(fd-float64(want)) > 2e-4+0.01*math.Abs(fd) {
					t.Errorf("%s[%d]: gradient %v, finite difference %v", what, i, want, fd)
				}
			}
			for range 60 {
				i := rng.IntN(len(params))
				check("params", params, i, dp[i])
			}
			for k := range 2 {
				lo, hi := net.Layout.LevelCols(k)
				w := hi - lo
				for range 60 {
					i := rng.IntN(len(dx[k]))
					if lenCol := k == 1 && isLengthCol(net, i%w); lenCol {
						continue // an input, not a row
					}
					check(fmt.Sprintf("X[%d]", k), tree.X[k], i, dx[k][i])
				}
			}
		})
	}
}

// isLengthCol reports whether column c of level 1's block is a sequence
// field's length column.
func isLengthCol(net *Net, c int) bool {
	for f := range net.Layout.Fields() {
		if net.Layout.Level(f) == 1 && net.Layout.SeqLen(f) > 0 {
			if _, hi := net.Layout.Cols(f); c == hi-1 {
				return true
			}
		}
	}
	return false
}
