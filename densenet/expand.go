package densenet

import (
	"fmt"
	"math"
)

// ExpandTree sets dst (Count[0] rows of the tree's width Cols[L]) to the
// flat expansion of the compressed batch t: row s is the concatenation of
// the blocks of sample s and of its ancestors,
//
//	for s := 0; s < t.Count[0]; s++ {
//		a := s
//		for k := 0; k < L; k++ {
//			if k > 0 {
//				a = int(t.Parent[k-1][a])
//			}
//			w := t.Cols[k+1] - t.Cols[k]
//			copy(dst[s*width+t.Cols[k]:][:w], t.X[k][a*w:][:w])
//		}
//	}
//
// It is how a block that cannot split by node (Cross, whose every layer
// multiplies by the whole input row) runs on a compressed batch; ReduceTree
// takes its input gradient back to the nodes. It panics on an invalid tree
// (see Tree, with the tree's own width) or len(dst) != Count[0]*Cols[L].
// dst must not overlap t.X.
func ExpandTree(dst []float32, t Tree) {
	width := treeWidth(t)
	checkTreeShape(t, width, math.MaxInt)
	n := t.Count[0]
	if len(dst) != n*width {
		panic(fmt.Sprintf("densenet: ExpandTree: len(dst) = %d, want Count[0]*width = %d*%d", len(dst), n, width))
	}
	for s := 0; s < n; s++ {
		row, a := dst[s*width:(s+1)*width], int32(s)
		for k := range t.Count {
			if k > 0 {
				a = t.Parent[k-1][a]
			}
			c0, w := t.Cols[k], t.Cols[k+1]-t.Cols[k]
			copy(row[c0:c0+w], t.X[k][int(a)*w:(int(a)+1)*w])
		}
	}
}

// ReduceTree is ExpandTree's adjoint: it sets dX[k] (Count[k] x the width
// of level k) to the sums, over the samples below each level-k node, of
// block k of their rows of dx (Count[0] x Cols[L], the gradient of a flat
// expansion), plus beta times dX[k]:
//
//	for k := range dX {
//		w := t.Cols[k+1] - t.Cols[k]
//		for j := range dX[k] {
//			dX[k][j] *= beta
//		}
//		for s := 0; s < t.Count[0]; s++ {
//			a := a_k(s) // the level-k ancestor of s, s itself at level 0
//			for j := 0; j < w; j++ {
//				dX[k][a*w+j] += dx[s*width+t.Cols[k]+j]
//			}
//		}
//	}
//
// except that with beta = 0, dX is not read. A nil dX[k] skips level k.
// It panics on an invalid tree, len(dX) other than the number of levels,
// or wrong lengths. dX must not overlap dx or t.X.
func ReduceTree(dX [][]float32, t Tree, dx []float32, beta float32) {
	width := treeWidth(t)
	checkTreeShape(t, width, math.MaxInt)
	n := t.Count[0]
	if len(dx) != n*width || len(dX) != len(t.Count) {
		panic(fmt.Sprintf("densenet: ReduceTree: len(dx) = %d, len(dX) = %d, want %d*%d, %d", len(dx), len(dX), n, width, len(t.Count)))
	}
	for k, d := range dX {
		if w := t.Cols[k+1] - t.Cols[k]; d != nil && len(d) != t.Count[k]*w {
			panic(fmt.Sprintf("densenet: ReduceTree: len(dX[%d]) = %d, want %d", k, len(d), t.Count[k]*w))
		}
		switch {
		case d == nil || beta == 1:
		case beta == 0:
			clear(d)
		default:
			for j := range d {
				d[j] *= beta
			}
		}
	}
	for s := 0; s < n; s++ {
		row, a := dx[s*width:(s+1)*width], int32(s)
		for k := range t.Count {
			if k > 0 {
				a = t.Parent[k-1][a]
			}
			c0, w := t.Cols[k], t.Cols[k+1]-t.Cols[k]
			if dX[k] != nil && w > 0 {
				Axpy(dX[k][int(a)*w:(int(a)+1)*w], 1, row[c0:c0+w])
			}
		}
	}
}

// treeWidth returns the last of t.Cols (0 without any).
func treeWidth(t Tree) int {
	if len(t.Cols) == 0 {
		return 0
	}
	return t.Cols[len(t.Cols)-1]
}
