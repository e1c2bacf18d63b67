package ctr

import "github.com/xdlgo/xps/densenet"

// The wide part of a Net (config model.wide): the sum w(.) of the dim-1
// weights of a sample's IDs, pooled by the layout into mirror fields at
// the end of each level's block. A node's wide columns are summed once
// (wsum), and a sample's w(.) is the sum over its ancestors' nodes:
//
//	w(s) = Σ_k wsum_k[a_k(s)],  wsum_k[i] = Σ_{c wide} X_k[i][c]
//
// whose gradient for a wide column of node i of level k is the sum of
// dlogits over the samples below it (densenet.ReduceTree).

// splitWide marks the wide part's columns: the last wideCols[k] of each
// level's block, one per mirror field (their table has dim 1).
func (n *Net) splitWide() {
	L := n.Layout.Levels()
	n.wide, n.wideCols, n.deepCols = true, make([]int, L), make([]int, L+1)
	for f := range n.Layout.Fields() {
		if n.Layout.MirrorOf(f) >= 0 {
			n.wideCols[n.Layout.Level(f)]++
		}
	}
	n.wideCol = make([]bool, n.Layout.Width())
	for k := range L {
		n.deepCols[k+1] = n.deepCols[k] + n.Cols[k+1] - n.Cols[k] - n.wideCols[k]
		for c := n.Cols[k+1] - n.wideCols[k]; c < n.Cols[k+1]; c++ {
			n.wideCol[c] = true
		}
	}
}

// inWidth is the width of the MLP's (or Cross's) input: the layout's
// without the wide part's columns.
func (n *Net) inWidth() int {
	if n.wide {
		return n.deepCols[len(n.deepCols)-1]
	}
	return n.Layout.Width()
}

func (n *Net) wideText() string {
	if n.wide {
		return " + the wide part"
	}
	return ""
}

// wideWorkspace holds the wide part's buffers: by level of the tree, the
// nodes' deep columns (deepX) and their gradients (deepDX), the wide
// sums (wsum) and their gradients (dwsum), the deep tree's columns
// (cols); per sample, the sums of its ancestors and dlogits spread over
// the levels (flat, n x L).
type wideWorkspace struct {
	deepX, deepDX, wsum, dwsum [][]float32
	flat                       []float32
	cols                       []int
	levels                     []int // 0, 1, ..., L: the columns of the wsum tree
}

func (n *Net) newWideWorkspace(maxBatch int) *wideWorkspace {
	L := n.Layout.Levels()
	w := &wideWorkspace{deepX: make([][]float32, L), deepDX: make([][]float32, L), wsum: make([][]float32, L),
		dwsum: make([][]float32, L), flat: make([]float32, maxBatch*L), cols: make([]int, L+1), levels: make([]int, L+1)}
	for k := range w.levels {
		w.levels[k] = k
	}
	return w
}

// A tree's levels may be the layout's, or coarser (one level: the flat
// expansion, whose row is the levels' blocks in order): a tree level's
// columns [t.Cols[k], t.Cols[k+1]) are absolute columns of the layout,
// and Net.wideCol says which are the wide part's.

// deepTree is t's tree of its deep columns, in w (after splitTree).
func (w *wideWorkspace) deepTree(t densenet.Tree) densenet.Tree {
	L := len(t.Count)
	return densenet.Tree{Cols: w.cols[:L+1], Count: t.Count, X: w.deepX[:L], Parent: t.Parent}
}

// sumTree is t's tree of the wide sums x, one column per level.
func (w *wideWorkspace) sumTree(t densenet.Tree, x [][]float32) densenet.Tree {
	L := len(t.Count)
	return densenet.Tree{Cols: w.levels[:L+1], Count: t.Count, X: x[:L], Parent: t.Parent}
}

// splitTree copies the deep columns of t's nodes into w and sums their
// wide columns, and returns the deep columns' tree.
func (n *Net) splitTree(w *wideWorkspace, t densenet.Tree) densenet.Tree {
	w.cols[0] = 0
	for k, c := range t.Count {
		lo, hi := t.Cols[k], t.Cols[k+1]
		dw := 0
		for col := lo; col < hi; col++ {
			if !n.wideCol[col] {
				dw++
			}
		}
		w.cols[k+1] = w.cols[k] + dw
		w.deepX[k], w.deepDX[k], w.wsum[k] = grow(w.deepX[k], c*dw), grow(w.deepDX[k], c*dw), grow(w.wsum[k], c)
		for i := range c {
			row, deep := t.X[k][i*(hi-lo):(i+1)*(hi-lo)], w.deepX[k][i*dw:(i+1)*dw]
			var sum float32
			j := 0
			for col, v := range row {
				if n.wideCol[lo+col] {
					sum += v
				} else {
					deep[j] = v
					j++
				}
			}
			w.wsum[k][i] = sum
		}
	}
	return w.deepTree(t)
}

// addWide adds each sample's w(.) to its logit.
func (n *Net) addWide(w *wideWorkspace, t densenet.Tree, logits []float32) {
	b, L := t.Count[0], len(t.Count)
	flat := w.flat[:b*L]
	densenet.ExpandTree(flat, w.sumTree(t, w.wsum))
	for s := range b {
		var sum float32
		for _, v := range flat[s*L : (s+1)*L] {
			sum += v
		}
		logits[s] += sum
	}
}

// mergeWide writes dX: each node's deep columns from w.deepDX, and its
// wide columns the sum of dlogits over the samples below it.
func (n *Net) mergeWide(w *wideWorkspace, t densenet.Tree, dlogits []float32, dX [][]float32) {
	b, L := t.Count[0], len(t.Count)
	flat := w.flat[:b*L]
	for s := range b {
		for k := range L {
			flat[s*L+k] = dlogits[s]
		}
	}
	for k, c := range t.Count {
		w.dwsum[k] = grow(w.dwsum[k], c)
	}
	densenet.ReduceTree(w.dwsum[:L], w.sumTree(t, w.wsum), flat, 0) // the tree's X is not read
	for k, c := range t.Count {
		lo, hi := t.Cols[k], t.Cols[k+1]
		dw := w.cols[k+1] - w.cols[k]
		for i := range c {
			row, deep := dX[k][i*(hi-lo):(i+1)*(hi-lo)], w.deepDX[k][i*dw:(i+1)*dw]
			j := 0
			for col := range row {
				if n.wideCol[lo+col] {
					row[col] = w.dwsum[k][i]
				} else {
					row[col] = deep[j]
					j++
				}
			}
		}
	}
}
