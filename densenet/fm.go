package densenet

import (
	"fmt"
	"slices"
)

// The factorization machine's second-order term (Rendle, 2010) over F
// field embeddings v_1 .. v_F of dim k, in O(F·k) rather than O(F²·k):
//
//	Σ_{f<f'} <v_f, v_f'> = 0.5 * Σ_d [(Σ_f v_fd)² - Σ_f v_fd²]
//
// and its gradient dFM/dv_fd = (Σ_f' v_f'd) - v_fd. A sample's row is the
// concatenation of its F embeddings (row-major, v_fd at f*k+d), which is
// how the pooled fields of one table of dim k lie in an MLP's input.
//
// # Splitting by user node
//
// The term depends on a sample only through the k sums S_d = Σ_f v_fd and
// the scalar Q = Σ_f Σ_d v_fd², and both are sums over fields. When the
// fields fall into blocks (a multi-prefix tree's levels: the sample's own
// fields, its user's, ...), S and Q are the sums of the blocks' partial
// sums, so a block that many samples share has its partial sums computed
// once (FMSums, one row of k+1 values per node) and each sample adds those
// of its ancestors to its own:
//
//	S_d(s) = Σ_levels S_d(node),  Q(s) = Σ_levels Q(node)
//	FM(s)  = 0.5 * (Σ_d S_d(s)² - Q(s))                     (FMCombine)
//
// With two levels, user U and item I, this is FM_U + FM_I + <S_U, S_I>:
// the cross term between the user's and the item's fields is one dot
// product of dim k per sample. Backward splits the same way: the gradient
// of a shared node's v_fd is the sum over the samples s below it of
// g_s·(S_d(s) - v_fd), with g_s = dLoss/dFM(s), which is
//
//	dv_fd = G_d - g·v_fd,  G_d = Σ_s g_s·S_d(s),  g = Σ_s g_s
//
// so the samples pass k+1 values up the tree and each node's gradient
// costs O(F_node·k). FMWorkspace runs both passes on a Tree.
//
// The FM kernels are pure Go in both builds (they do O(F·k) work per
// sample against the MLP's O(F·k·h); no assembly is needed). They keep a
// row's sums on the stack for dims up to 128; a larger dim costs one
// allocation per call.

// FMForward sets dst[s] to the FM second-order term of row s of x, which
// has n = len(dst) rows of fields embeddings of dim dim:
//
//	for s := range dst {
//		var sq float32
//		var sum [dim]float32
//		for f := 0; f < fields; f++ {
//			for d := 0; d < dim; d++ {
//				v := x[s*fields*dim+f*dim+d]
//				sum[d] += v
//				sq += v * v
//			}
//		}
//		dst[s] = 0
//		for d := range sum {
//			dst[s] += sum[d] * sum[d]
//		}
//		dst[s] = 0.5 * (dst[s] - sq)
//	}
//
// (summed in another order, so the result may differ from the loop in
// the last bits). It panics unless fields >= 0, dim >= 1 and len(x) =
// len(dst)*fields*dim. x is not modified; dst must not overlap it.
func FMForward(dst, x []float32, fields, dim int) {
	checkFM("FMForward", len(dst), x, fields, dim)
	var buf [2 * fmStackDim]float32
	b := fmSumBuf(&buf, dim)
	sum, sqs := b[:dim], b[dim:]
	w := fields * dim
	for s := range dst {
		sq := fmRowSums(sum, sqs, x[s*w:(s+1)*w])
		var t float32
		for _, v := range sum {
			t += v * v
		}
		dst[s] = 0.5 * (t - sq)
	}
}

// fmStackDim is the largest embedding dim whose sums the FM kernels keep
// on the stack; a larger one takes one allocation per call.
const fmStackDim = 128

// fmSumBuf returns 2*dim values of buf, or of a new slice if dim is
// larger than fmStackDim.
func fmSumBuf(buf *[2 * fmStackDim]float32, dim int) []float32 {
	if dim <= fmStackDim {
		return buf[:2*dim]
	}
	return make([]float32, 2*dim)
}

// fmRowSums sets sum[d] to the sum of component d of the embeddings of
// dim len(sum) that make up row and returns their sum of squared
// components, accumulated per component in sq (len(sum) values of
// scratch) so that the additions of consecutive components do not wait
// on each other.
func fmRowSums(sum, sq, row []float32) float32 {
	clear(sum)
	clear(sq)
	dim := len(sum)
	sq = sq[:dim]
	for len(row) >= dim && dim > 0 {
		v := row[:dim]
		su, sq := sum[:len(v)], sq[:len(v)] // no bounds checks in the loop
		for d, x := range v {
			su[d] += x
			sq[d] += x * x
		}
		row = row[dim:]
	}
	var t float32
	for _, v := range sq {
		t += v
	}
	return t
}

// FMBackward sets dx to the gradient of the FM second-order terms of the
// rows of x (as FMForward) given dout, the gradient with respect to each
// row's term, plus beta times dx:
//
//	for s := range dout {
//		for d := 0; d < dim; d++ {
//			var sum float32
//			for f := 0; f < fields; f++ {
//				sum += x[s*fields*dim+f*dim+d]
//			}
//			for f := 0; f < fields; f++ {
//				i := s*fields*dim + f*dim + d
//				dx[i] = dout[s]*(sum-x[i]) + beta*dx[i]
//			}
//		}
//	}
//
// except that with beta = 0, dx is not read (it may hold garbage or NaN).
// beta = 1 adds the gradient to dx (the embeddings' gradient from another
// block, say). It panics unless fields >= 0, dim >= 1 and len(x) = len(dx)
// = len(dout)*fields*dim. x and dout are not modified; dx must not
// overlap them.
func FMBackward(dx, x, dout []float32, fields, dim int, beta float32) {
	checkFM("FMBackward", len(dout), x, fields, dim)
	if len(dx) != len(x) {
		panic(fmt.Sprintf("densenet: FMBackward: len(dx) = %d, want len(x) = %d", len(dx), len(x)))
	}
	var buf [2 * fmStackDim]float32
	b := fmSumBuf(&buf, dim)
	sum, sqs := b[:dim], b[dim:]
	w := fields * dim
	for s, g := range dout {
		row, drow := x[s*w:(s+1)*w], dx[s*w:(s+1)*w]
		fmRowSums(sum, sqs, row)
		fmGradRow(drow, row, sum, g, g, beta)
	}
}

// fmGradRow sets the gradient drow of the fields of dim len(sum) that
// make up row to gs*sum[d] - g*v_fd + beta*drow: the FM gradient of a node
// whose samples pass up gs*sum = Σ g_s·S(s) and g = Σ g_s.
func fmGradRow(drow, row, sum []float32, gs, g, beta float32) {
	dim := len(sum)
	for len(row) >= dim && dim > 0 {
		v, dv, sum := row[:dim], drow[:dim], sum[:dim]
		dv, sum = dv[:len(v)], sum[:len(v)] // no bounds checks in the loops
		if beta == 0 {
			for d, x := range v {
				dv[d] = gs*sum[d] - g*x
			}
		} else {
			for d, x := range v {
				dv[d] = gs*sum[d] - g*x + beta*dv[d]
			}
		}
		row, drow = row[dim:], drow[dim:]
	}
}

// FMSums sets each row of dst, of dim+1 values, to the FM partial sums of
// the same row of x (fields embeddings of dim dim, as in FMForward): the
// sum of the embeddings and the sum of their squared components,
//
//	for s := 0; s < len(dst)/(dim+1); s++ {
//		out := dst[s*(dim+1) : (s+1)*(dim+1)]
//		clear(out)
//		for f := 0; f < fields; f++ {
//			for d := 0; d < dim; d++ {
//				v := x[s*fields*dim+f*dim+d]
//				out[d] += v
//				out[dim] += v * v
//			}
//		}
//	}
//
// Partial sums of disjoint sets of fields add up to those of their union
// (see the package's FM notes), so a shared block's sums are computed
// once. With fields = 0 the sums are 0. It panics unless fields >= 0, dim
// >= 1, len(dst) is a multiple of dim+1 and len(x) = len(dst)/(dim+1) *
// fields*dim. x is not modified; dst must not overlap it.
func FMSums(dst, x []float32, fields, dim int) {
	if dim < 1 || len(dst)%(dim+1) != 0 {
		panic(fmt.Sprintf("densenet: FMSums: len(dst) = %d is not a multiple of dim+1 = %d", len(dst), dim+1))
	}
	n := len(dst) / (dim + 1)
	checkFM("FMSums", n, x, fields, dim)
	var buf [2 * fmStackDim]float32
	sqs := fmSumBuf(&buf, dim)[dim:]
	w := fields * dim
	for s := 0; s < n; s++ {
		out := dst[s*(dim+1) : (s+1)*(dim+1)]
		out[dim] = fmRowSums(out[:dim], sqs, x[s*w:(s+1)*w])
	}
}

// FMCombine sets dst[s] to the FM second-order term of the partial sums
// in row s of sums (dim+1 values, as FMSums writes them, summed over all
// the fields of sample s):
//
//	for s := range dst {
//		row := sums[s*(dim+1) : (s+1)*(dim+1)]
//		var t float32
//		for d := 0; d < dim; d++ {
//			t += row[d] * row[d]
//		}
//		dst[s] = 0.5 * (t - row[dim])
//	}
//
// It panics unless dim >= 1 and len(sums) = len(dst)*(dim+1).
func FMCombine(dst, sums []float32, dim int) {
	if dim < 1 || len(sums) != len(dst)*(dim+1) {
		panic(fmt.Sprintf("densenet: FMCombine: len(sums) = %d, want len(dst)*(dim+1) = %d*%d", len(sums), len(dst), dim+1))
	}
	for s := range dst {
		row := sums[s*(dim+1) : (s+1)*(dim+1)]
		var t float32
		for _, v := range row[:dim] {
			t += v * v
		}
		dst[s] = 0.5 * (t - row[dim])
	}
}

// checkFM panics unless x holds n rows of fields embeddings of dim dim.
func checkFM(fn string, n int, x []float32, fields, dim int) {
	if fields < 0 || dim < 1 {
		panic(fmt.Sprintf("densenet: %s with %d fields of dim %d", fn, fields, dim))
	}
	if len(x) != n*fields*dim {
		panic(fmt.Sprintf("densenet: %s: len(x) = %d, want %d rows x %d fields x dim %d", fn, len(x), n, fields, dim))
	}
}

// FMWorkspace runs the FM second-order term on a compressed batch (a
// Tree), each shared node's partial sums computed once (see the package's
// FM notes). Every level's width must be a multiple of the embedding dim:
// the FM covers all the tree's columns, level k holding (Cols[k+1] -
// Cols[k])/dim fields. It keeps the samples' sums between ForwardTree and
// BackwardTree and is not safe for concurrent use; give each goroutine
// its own.
type FMWorkspace struct {
	dim, maxBatch int
	node          [][]float32 // node[k]: level-k nodes' partial sums (k >= 1), then their gradient sums
	samp          []float32   // the samples' total sums, maxBatch x (dim+1), kept for BackwardTree
	cols, count   []int       // the shape of the last completed ForwardTree's tree
	done          bool        // a ForwardTree completed and nothing ran since
}

// NewFMWorkspace returns a workspace for trees of up to maxBatch samples
// whose fields have embeddings of dim dim. It panics unless dim >= 1 and
// maxBatch >= 0.
func NewFMWorkspace(dim, maxBatch int) *FMWorkspace {
	if dim < 1 || maxBatch < 0 {
		panic(fmt.Sprintf("densenet: NewFMWorkspace(dim %d, maxBatch %d)", dim, maxBatch))
	}
	return &FMWorkspace{dim: dim, maxBatch: maxBatch, samp: make([]float32, maxBatch*(dim+1))}
}

// ForwardTree sets out[s] (Count[0] values) to the FM second-order term
// of sample s's fields in its flat expansion: FMSums once per node of each
// level, each sample's row the sum of its own and its ancestors', then
// FMCombine. It equals FMForward on t's flat expansion up to float32
// rounding. It keeps the samples' sums for BackwardTree and reads t only.
// It panics on an invalid tree (see Tree, with the tree's own width),
// a level whose width is not a multiple of dim, or a wrong len(out).
func (ws *FMWorkspace) ForwardTree(t Tree, out []float32) {
	ws.done = false
	ws.checkTree(t)
	n, c := t.Count[0], ws.dim+1
	if len(out) != n {
		panic(fmt.Sprintf("densenet: FMWorkspace.ForwardTree: len(out) = %d, want Count[0] = %d", len(out), n))
	}
	for len(ws.node) < len(t.Count) {
		ws.node = append(ws.node, nil)
	}
	samp := ws.samp[:n*c]
	FMSums(samp, t.X[0], t.Cols[1]/ws.dim, ws.dim)
	for k := 1; k < len(t.Count); k++ {
		if ws.node[k] == nil {
			ws.node[k] = make([]float32, ws.maxBatch*c)
		}
		FMSums(ws.node[k][:t.Count[k]*c], t.X[k], (t.Cols[k+1]-t.Cols[k])/ws.dim, ws.dim)
	}
	for s := 0; s < n; s++ {
		row, a := samp[s*c:(s+1)*c], int32(s)
		for k := 1; k < len(t.Count); k++ {
			a = t.Parent[k-1][a]
			Axpy(row, 1, ws.node[k][int(a)*c:(int(a)+1)*c])
		}
	}
	FMCombine(out, samp, ws.dim)
	ws.cols = append(ws.cols[:0], t.Cols...)
	ws.count = append(ws.count[:0], t.Count...)
	ws.done = true
}

// BackwardTree sets dX[k] (Count[k] x the width of level k) to the
// gradient of the loss with respect to the level-k nodes' embeddings,
// plus beta times dX[k], after ForwardTree(t, ...) on ws with the same t,
// given dout (Count[0] values), the gradient with respect to each
// sample's term. For a node, the gradient is the sum over the samples
// below it of their flat gradient (FMBackward on the flat expansion), up
// to float32 rounding; it is computed from k+1 values per node, as the
// package's FM notes show. With beta = 0, dX is not read. A nil dX[k]
// skips level k. It panics unless ForwardTree on a tree of this shape was
// the last pass on ws, or on wrong lengths (len(dX) must be the number of
// levels). dX must not overlap t.X or dout.
func (ws *FMWorkspace) BackwardTree(t Tree, dout []float32, dX [][]float32, beta float32) {
	ws.checkTree(t)
	n, c, levels := t.Count[0], ws.dim+1, len(t.Count)
	if !ws.done || !slices.Equal(ws.cols, t.Cols) || !slices.Equal(ws.count, t.Count) {
		panic("densenet: FMWorkspace.BackwardTree without a ForwardTree of a tree of this shape just before")
	}
	if len(dout) != n || len(dX) != levels {
		panic(fmt.Sprintf("densenet: FMWorkspace.BackwardTree: len(dout) = %d, len(dX) = %d, want %d, %d", len(dout), len(dX), n, levels))
	}
	for k := range dX {
		if w := t.Cols[k+1] - t.Cols[k]; dX[k] != nil && len(dX[k]) != t.Count[k]*w {
			panic(fmt.Sprintf("densenet: FMWorkspace.BackwardTree: len(dX[%d]) = %d, want %d", k, len(dX[k]), t.Count[k]*w))
		}
	}
	for k := 1; k < levels; k++ {
		clear(ws.node[k][:t.Count[k]*c])
	}
	samp := ws.samp[:n*c]
	for s, g := range dout {
		row, a := samp[s*c:(s+1)*c], int32(s)
		for k := 1; k < levels; k++ {
			a = t.Parent[k-1][a]
			up := ws.node[k][int(a)*c : (int(a)+1)*c]
			Axpy(up[:ws.dim], g, row[:ws.dim])
			up[ws.dim] += g
		}
	}
	for k := 0; k < levels; k++ {
		w := t.Cols[k+1] - t.Cols[k]
		if dX[k] == nil || w == 0 {
			continue
		}
		for i := 0; i < t.Count[k]; i++ {
			row, drow := t.X[k][i*w:(i+1)*w], dX[k][i*w:(i+1)*w]
			if k == 0 {
				fmGradRow(drow, row, samp[i*c:i*c+ws.dim], dout[i], dout[i], beta)
				continue
			}
			up := ws.node[k][i*c : (i+1)*c]
			fmGradRow(drow, row, up[:ws.dim], 1, up[ws.dim], beta)
		}
	}
}

// checkTree panics unless t is a valid tree of at most maxBatch samples
// whose levels hold whole fields of dim ws.dim.
func (ws *FMWorkspace) checkTree(t Tree) {
	width := 0
	if len(t.Cols) > 0 {
		width = t.Cols[len(t.Cols)-1]
	}
	checkTreeShape(t, width, ws.maxBatch)
	for k := 0; k+1 < len(t.Cols); k++ {
		if w := t.Cols[k+1] - t.Cols[k]; w%ws.dim != 0 {
			panic(fmt.Sprintf("densenet: FM tree level %d has width %d, not a multiple of dim %d", k, w, ws.dim))
		}
	}
}
