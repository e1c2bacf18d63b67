package densenet

import (
	"fmt"
	"slices"
)

// treeDone is the value of Workspace.n after a completed ForwardTree. It
// is not a batch size, so Backward rejects it; Forward overwrites it
// before it touches the activations, so BackwardTree after Forward (even
// one that panicked half-way) is rejected too.
const treeDone = -2

// Tree is a compressed batch (XDL's multi-prefix tree): the input of a
// sample is the concatenation of L level blocks, where level 0 holds the
// sample's own features and level k >= 1 the features of its level-k
// ancestor (its user, say), which many samples share.
//
// Columns [Cols[k], Cols[k+1]) of the MLP input belong to level k. Level k
// has Count[k] nodes, whose blocks are the rows of X[k] (Count[k] x
// (Cols[k+1]-Cols[k]), row-major). The nodes of level 0 are the n =
// Count[0] samples. Parent[k][i] is the level-(k+1) node of level-k node
// i. The flat input row of sample s is
//
//	X[0][s] ++ X[1][a_1(s)] ++ ... ++ X[L-1][a_{L-1}(s)]
//
// with a_1(s) = Parent[0][s] and a_k(s) = Parent[k-1][a_{k-1}(s)].
//
// A Tree is valid for an MLP and a Workspace when L = len(Count) >= 1;
// len(Cols) = L+1, Cols[0] = 0, Cols[L] = InputWidth() and Cols does not
// decrease (a level may have width 0); 0 <= Count[0] <= the workspace's
// maxBatch and 0 <= Count[k] <= Count[0]; len(X[k]) = Count[k] times the
// width of level k; len(Parent) = L-1, len(Parent[k]) = Count[k] and
// every Parent[k][i] is in [0, Count[k+1]). The passes panic on a tree
// that is not. A node without samples is allowed (its gradient is 0).
// For the blocks without an MLP (FMWorkspace, ExpandTree, ReduceTree) the
// input width is the tree's own, Cols[L].
type Tree struct {
	Cols   []int       // L+1 column offsets of the levels in the MLP input
	Count  []int       // L node counts; Count[0] is the number of samples
	X      [][]float32 // X[k]: the level-k nodes' input blocks, row-major
	Parent [][]int32   // L-1 indicator arrays: level-k node to level-(k+1) node
}

// ForwardTree computes the outputs of the samples of the compressed batch
// t, the same (up to float32 rounding) as Forward on t's flat expansion.
// The first layer is computed once per node rather than once per sample:
//
//	Y_k = A_k · W_0[:, Cols[k]:Cols[k+1]]ᵀ   (Count[k] x Sizes[1])
//	z_s = Y_0[s] + Σ_{k>=1} Y_k[a_k(s)] + b_0
//
// where A_k = X_k, or with InputBias A_k = ReLU(X_k + b_in[Cols[k]:Cols[k+1]])
// (the input bias and its ReLU act on each column alone, so on each node's
// block), and the layers above run as in Forward. out has length Count[0]
// x OutputWidth() (the logits of a NewMLP network). It keeps the
// activations and the ancestors in ws for BackwardTree and reads params
// and t only. It panics on an MLP without weight layers, a workspace of
// another MLP, an invalid tree (see Tree) or wrong lengths.
func (m *MLP) ForwardTree(ws *Workspace, params []float32, t Tree, out []float32) {
	m.checkTree(ws, params, t)
	n, levels := t.Count[0], len(t.Count)
	m.checkOut("out", out, n)
	ws.n = -1 // until this pass completes
	ws.growTree(t)
	threads := ws.threads()
	inW, h1 := m.Sizes[0], m.Sizes[1]
	w0, b0 := m.LayerParams(params, 0)
	bin := m.InputBiasParams(params)
	z := m.layerOut(ws, 0, n, out) // layer 0's output, n x h1

	// Y_0 goes straight into z (with a level-0 width of 0, Gemm zeroes z).
	for k := 0; k < levels; k++ {
		c0, w, cnt := t.Cols[k], t.Cols[k+1]-t.Cols[k], t.Count[k]
		if k > 0 && w == 0 {
			continue
		}
		a := t.X[k]
		if bin != nil && w > 0 {
			a = ws.treeIn[k][:cnt*w]
			AddBiasReLUTo(a, t.X[k], bin[c0:c0+w])
		}
		y := z
		if k > 0 {
			y = ws.treeBuf[k][:cnt*h1]
		}
		// Y_k (cnt x h1) = A_k (cnt x w) · W_0[:, c0:c0+w]ᵀ (w x h1)
		gemm(threads, &ws.scratch, NoTrans, Trans, cnt, h1, w, 1, a, max(1, w), w0[c0:], inW, 0, y, h1)
	}
	anc := []int32(nil) // a_k(s) for the current level k
	for k := 1; k < levels; k++ {
		p := t.Parent[k-1]
		if k == 1 {
			anc = p[:n]
		} else {
			next := ws.treeAnc[k][:n]
			for s, a := range anc {
				next[s] = p[a]
			}
			anc = next
		}
		if t.Cols[k+1] == t.Cols[k] {
			continue
		}
		y := ws.treeBuf[k][:t.Count[k]*h1]
		for s, a := range anc {
			row := z[s*h1 : (s+1)*h1]
			src := y[int(a)*h1 : (int(a)+1)*h1]
			for j, v := range src {
				row[j] += v
			}
		}
	}
	m.activate(0, z, b0)
	m.forwardUpper(ws, threads, params, n, out)

	ws.treeN = n
	ws.treeCols = append(ws.treeCols[:0], t.Cols...)
	ws.treeCount = append(ws.treeCount[:0], t.Count...)
	ws.n = treeDone
}

// BackwardTree computes the gradients of a loss after ForwardTree(ws,
// params, t, ...) with the same ws, params and t, given dout (Count[0] x
// OutputWidth()). The layers above the first run as in Backward and give
// δ, dLoss/dz of layer 0 (n x Sizes[1]); then, per level,
//
//	δ_0 = δ,  δ_k[i] = Σ_{j: Parent[k-1][j] = i} δ_{k-1}[j]
//	dW_0[:, Cols[k]:Cols[k+1]] = δ_kᵀ · A_k,  db_0 = column sums of δ
//	dX[k] = δ_k · W_0[:, Cols[k]:Cols[k+1]]
//
// so dX[k][i] is the gradient with respect to the shared block of node i:
// the sum over the samples below it of the flat gradient's block. With
// InputBias, dX[k] is passed back through the ReLU (masked where A_k is
// not positive) and db_in[Cols[k]:Cols[k+1]] is its column sums.
//
// It OVERWRITES grad (length NumParams()) with dLoss/dparams, the same (up
// to float32 rounding) as Backward on t's flat expansion, and dX[k]
// (Count[k] x width of level k) with dLoss/dX[k]. dX may be nil, and so
// may any dX[k], to skip those input gradients; otherwise len(dX) = L.
// grad and dX must not overlap params, t.X, dout or each other. It
// panics if ForwardTree was not the last pass run on ws, or was run on a
// tree of another shape (Cols, Count), on an invalid tree or wrong
// lengths.
func (m *MLP) BackwardTree(ws *Workspace, params []float32, t Tree, dout, grad []float32, dX [][]float32) {
	m.checkTree(ws, params, t)
	n, levels := t.Count[0], len(t.Count)
	if ws.n != treeDone || ws.treeN != n || !slices.Equal(ws.treeCols, t.Cols) || !slices.Equal(ws.treeCount, t.Count) {
		panic("densenet: BackwardTree without a ForwardTree of a tree of this shape just before")
	}
	m.checkOut("dout", dout, n)
	m.checkParams("grad", grad)
	if dX != nil && len(dX) != levels {
		panic(fmt.Sprintf("densenet: len(dX) = %d, want %d levels", len(dX), levels))
	}
	for k := range dX {
		if want := t.Count[k] * (t.Cols[k+1] - t.Cols[k]); dX[k] != nil && len(dX[k]) != want {
			panic(fmt.Sprintf("densenet: len(dX[%d]) = %d, want %d", k, len(dX[k]), want))
		}
	}
	threads := ws.threads()
	inW, h1 := m.Sizes[0], m.Sizes[1]
	delta := m.backwardUpper(ws, threads, params, n, dout, grad)
	w0, _ := m.LayerParams(params, 0)
	gw, gb := m.LayerParams(grad, 0)
	gbin := m.InputBiasParams(grad)
	ColSums(gb, delta)
	d := delta // δ_k, cnt x h1
	for k := 0; k < levels; k++ {
		c0, w, cnt := t.Cols[k], t.Cols[k+1]-t.Cols[k], t.Count[k]
		if k > 0 {
			up := ws.treeBuf[k][:cnt*h1]
			clear(up)
			for i, p := range t.Parent[k-1] {
				row := up[int(p)*h1 : (int(p)+1)*h1]
				src := d[i*h1 : (i+1)*h1]
				for j, v := range src {
					row[j] += v
				}
			}
			d = up
		}
		if w == 0 {
			continue
		}
		a := t.X[k]
		if gbin != nil {
			a = ws.treeIn[k][:cnt*w]
		}
		// dW_0[:, c0:c0+w] (h1 x w) = δ_kᵀ (h1 x cnt) · A_k (cnt x w)
		gemm(threads, &ws.scratch, Trans, NoTrans, h1, w, cnt, 1, d, h1, a, w, 0, gw[c0:], inW)
		var dx []float32
		if dX != nil && dX[k] != nil {
			dx = dX[k]
		} else if gbin != nil {
			dx = ws.treeDIn[k][:cnt*w]
		}
		if dx == nil {
			continue
		}
		// dX_k (cnt x w) = δ_k (cnt x h1) · W_0[:, c0:c0+w] (h1 x w)
		gemm(threads, &ws.scratch, NoTrans, NoTrans, cnt, w, h1, 1, d, h1, w0[c0:], inW, 0, dx, w)
		if gbin != nil {
			ReLUBackward(dx, dx, a)
			ColSums(gbin[c0:c0+w], dx)
		}
	}
}

// forwardUpper runs the layers 1 .. NumLayers()-1 of Forward on the n
// rows of ws.acts[0], writing the outputs into out (with OutputReLU, the
// last layer writes ws.acts[NumLayers()-1], which is copied into out).
func (m *MLP) forwardUpper(ws *Workspace, threads int, params []float32, n int, out []float32) {
	last := m.NumLayers() - 1
	for l := 1; l <= last; l++ {
		inW, outW := m.Sizes[l], m.Sizes[l+1]
		w, b := m.LayerParams(params, l)
		in := ws.acts[l-1][:n*inW]
		z := m.layerOut(ws, l, n, out)
		gemm(threads, &ws.scratch, NoTrans, Trans, n, outW, inW, 1, in, inW, w, inW, 0, z, outW)
		m.activate(l, z, b)
	}
	if m.opts.OutputReLU {
		copy(out, ws.acts[last][:n*m.Sizes[last+1]])
	}
}

// backwardUpper runs the output's ReLU (with OutputReLU) and the layers
// NumLayers()-1 .. 1 of Backward, writing their gradients into grad, and
// returns dLoss/dz of layer 0 (n x Sizes[1]: dout itself when nothing
// runs, else a buffer of ws, never ws.delta[0]). Without weight layers it
// returns dout.
func (m *MLP) backwardUpper(ws *Workspace, threads int, params []float32, n int, dout, grad []float32) []float32 {
	L := m.NumLayers()
	delta := dout
	if L > 0 && m.opts.OutputReLU {
		outW := m.Sizes[L]
		next := ws.delta[L%2][:n*outW] // layer l's δ is in delta[(l+1)%2]
		ReLUBackward(next, dout, ws.acts[L-1][:n*outW])
		delta = next
	}
	for l := L - 1; l >= 1; l-- {
		inW, outW := m.Sizes[l], m.Sizes[l+1]
		w, _ := m.LayerParams(params, l)
		gw, gb := m.LayerParams(grad, l)
		in := ws.acts[l-1][:n*inW]
		gemm(threads, &ws.scratch, Trans, NoTrans, outW, inW, n, 1, delta, outW, in, inW, 0, gw, inW)
		ColSums(gb, delta)
		next := ws.delta[l%2][:n*inW] // never the buffer delta is in
		gemm(threads, &ws.scratch, NoTrans, NoTrans, n, inW, outW, 1, delta, outW, w, inW, 0, next, inW)
		ReLUBackward(next, next, in)
		delta = next
	}
	return delta
}

// growTree makes sure ws has the per-level buffers of the tree t:
// treeBuf[k] for k >= 1 and treeAnc[k] for k >= 2 (a_1 is Parent[0]
// itself), allocated once for maxBatch nodes and kept; with InputBias
// also treeIn[k] and treeDIn[k] for maxBatch nodes of level k's width,
// reallocated only for a wider level than before.
func (ws *Workspace) growTree(t Tree) {
	levels := len(t.Count)
	for len(ws.treeBuf) < levels {
		ws.treeBuf = append(ws.treeBuf, nil)
		ws.treeAnc = append(ws.treeAnc, nil)
		ws.treeIn = append(ws.treeIn, nil)
		ws.treeDIn = append(ws.treeDIn, nil)
	}
	h1 := ws.mlp.Sizes[1]
	for k := 1; k < levels; k++ {
		if ws.treeBuf[k] == nil {
			ws.treeBuf[k] = make([]float32, ws.maxBatch*h1)
		}
		if k >= 2 && ws.treeAnc[k] == nil {
			ws.treeAnc[k] = make([]int32, ws.maxBatch)
		}
	}
	if !ws.mlp.opts.InputBias {
		return
	}
	for k := 0; k < levels; k++ {
		if need := ws.maxBatch * (t.Cols[k+1] - t.Cols[k]); len(ws.treeIn[k]) < need {
			ws.treeIn[k] = make([]float32, need)
			ws.treeDIn[k] = make([]float32, need)
		}
	}
}

// checkTree panics unless ws and params fit m and t is a valid tree for
// them (see Tree).
func (m *MLP) checkTree(ws *Workspace, params []float32, t Tree) {
	if ws.mlp != m {
		panic("densenet: workspace belongs to another MLP")
	}
	if m.NumLayers() == 0 {
		panic("densenet: tree pass of an MLP without weight layers")
	}
	m.checkParams("params", params)
	checkTreeShape(t, m.InputWidth(), ws.maxBatch)
}

// checkTreeShape panics unless t is a valid tree (see Tree) of width
// columns with at most maxBatch samples.
func checkTreeShape(t Tree, width, maxBatch int) {
	levels := len(t.Count)
	if levels == 0 {
		panic("densenet: Tree without levels (len(Count) = 0)")
	}
	if len(t.Cols) != levels+1 || len(t.X) != levels || len(t.Parent) != levels-1 {
		panic(fmt.Sprintf("densenet: Tree with %d levels has len(Cols) = %d, len(X) = %d, len(Parent) = %d, want %d, %d, %d",
			levels, len(t.Cols), len(t.X), len(t.Parent), levels+1, levels, levels-1))
	}
	if t.Cols[0] != 0 || t.Cols[levels] != width {
		panic(fmt.Sprintf("densenet: Tree.Cols runs from %d to %d, want 0 to the input width %d", t.Cols[0], t.Cols[levels], width))
	}
	n := t.Count[0]
	if n < 0 || n > maxBatch {
		panic(fmt.Sprintf("densenet: batch of %d outside [0, %d]", n, maxBatch))
	}
	for k := 0; k < levels; k++ {
		if t.Cols[k+1] < t.Cols[k] {
			panic(fmt.Sprintf("densenet: Tree.Cols decreases at level %d: %v", k, t.Cols))
		}
	}
	for k := 0; k < levels; k++ {
		w := t.Cols[k+1] - t.Cols[k]
		if t.Count[k] < 0 || t.Count[k] > n {
			panic(fmt.Sprintf("densenet: Tree.Count[%d] = %d outside [0, Count[0] = %d]", k, t.Count[k], n))
		}
		if len(t.X[k]) != t.Count[k]*w {
			panic(fmt.Sprintf("densenet: len(Tree.X[%d]) = %d, want Count*width = %d", k, len(t.X[k]), t.Count[k]*w))
		}
	}
	for k, p := range t.Parent {
		if len(p) != t.Count[k] {
			panic(fmt.Sprintf("densenet: len(Tree.Parent[%d]) = %d, want Count[%d] = %d", k, len(p), k, t.Count[k]))
		}
		up := t.Count[k+1]
		for i, v := range p {
			if v < 0 || int(v) >= up {
				panic(fmt.Sprintf("densenet: Tree.Parent[%d][%d] = %d outside [0, Count[%d] = %d)", k, i, v, k+1, up))
			}
		}
	}
}
