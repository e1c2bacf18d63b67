package densenet

import (
	"fmt"
	"math"
	"runtime"
)

// Attention is DIN's local activation unit (Zhou et al. 2018): it scores
// the T keys of a sequence (a user's behaviours) against a query (the
// candidate item). For key k and query q, both Dim wide, the input
// [k, q, k−q, k⊙q] (4·Dim values) goes through len(Hidden) layers with
// PReLU and a final linear layer to one score:
//
//	a_0 = [k, q, k−q, k⊙q]
//	a_{l+1} = PReLU_l(W_l·a_l + b_l)   (l = 0 .. len(Hidden)-1; PReLU_l(z) = z if z > 0, else α_l ⊙ z)
//	score = W_L·a_L + b_L              (L = len(Hidden))
//
// With Softmax the scores of a sequence are normalised over its valid
// steps (DIEN's attention); without, they are used raw (DIN, which
// abandons the softmax to keep the intensity of the user's interests).
//
// The parameters are one flat []float32 of NumParams() values, layer by
// layer, each W_l row-major out x in like nn.Linear.weight and each α_l
// one slope per unit like nn.PReLU(num_parameters=H_{l+1}):
//
//	W_0 (H_1 x 4·Dim), b_0 (H_1), α_0 (H_1),
//	W_1 (H_2 x H_1), b_1 (H_2), α_1 (H_2), ...,
//	W_L (1 x H_L), b_L (1)
//
// with H_l = Hidden[l-1] (LayerParams gives the slices). The columns of
// W_0 are the four blocks of its input: W_0 = [W_k, W_q, W_d, W_p], each
// H_1 x Dim. The gradient has the same layout.
//
// # Splitting the first layer
//
// The first layer splits by what its input depends on:
//
//	W_0·a_0 = (W_k + W_d)·k + (W_q − W_d)·q + W_p·(k ⊙ q)
//
// so the key part is computed once per key (a node's step) by one Gemm
// over the valid steps of all nodes, the query part once per query by one
// Gemm, and only W_p·(k⊙q) once per (query, step), by one Gemm over the
// valid (query, step) pairs. The layers above run on Gemm over those
// pairs; padding steps cost nothing. Backward splits the same way:
// W_k's gradient is that of W_k + W_d, summed over the keys, W_q's that of
// W_q − W_d, summed over the queries, and W_d's their difference.
//
// An Attention is immutable and safe for concurrent use; an
// AttentionWorkspace is not (see MLP for the protocol: Forward, then
// Backward with the same workspace and arguments).
type Attention struct {
	// Dim is the width of a key and of a query, Hidden the widths of the
	// hidden layers, Softmax whether scores are normalised. They must not
	// be modified.
	Dim     int
	Hidden  []int
	Softmax bool

	wOff, bOff, aOff []int // per layer: offsets of W_l, b_l and α_l (aOff[L] unused)
	numParams        int
}

// NewAttention returns the local activation unit with keys and queries of
// dim values and hidden layers of the given widths (DIN's is [80, 40]),
// with the softmax over a sequence's scores if softmax. It is an error
// (ErrBadSizes) to give a width that is not positive or no hidden layer.
// hidden is copied.
func NewAttention(dim int, hidden []int, softmax bool) (*Attention, error) {
	if dim <= 0 || len(hidden) == 0 {
		return nil, fmt.Errorf("%w: attention of dim %d with hidden layers %v", ErrBadSizes, dim, hidden)
	}
	a := &Attention{Dim: dim, Hidden: append([]int(nil), hidden...), Softmax: softmax}
	in, off := 4*dim, 0
	for l := 0; l <= len(hidden); l++ {
		out := 1
		if l < len(hidden) {
			out = hidden[l]
			if out <= 0 {
				return nil, fmt.Errorf("%w: attention hidden layer %d of width %d", ErrBadSizes, l, out)
			}
		}
		a.wOff = append(a.wOff, off)
		a.bOff = append(a.bOff, off+out*in)
		a.aOff = append(a.aOff, off+out*in+out)
		off += out*in + out
		if l < len(hidden) {
			off += out
		}
		in = out
	}
	a.numParams = off
	return a, nil
}

// NumParams returns the length of the parameter vector (and of the
// gradient vector).
func (a *Attention) NumParams() int { return a.numParams }

// layerShape returns layer l's input and output widths.
func (a *Attention) layerShape(l int) (in, out int) {
	in, out = 4*a.Dim, 1
	if l > 0 {
		in = a.Hidden[l-1]
	}
	if l < len(a.Hidden) {
		out = a.Hidden[l]
	}
	return in, out
}

// LayerParams returns layer l's weights (out x in, row-major), bias and
// PReLU slopes (nil for the last layer, l = len(Hidden)) as subslices of
// params, which may be a parameter or a gradient vector of length
// NumParams. It panics if l is outside [0, len(Hidden)] or len(params) !=
// NumParams().
func (a *Attention) LayerParams(params []float32, l int) (w, b, alpha []float32) {
	a.checkParams("params", params)
	if l < 0 || l > len(a.Hidden) {
		panic(fmt.Sprintf("densenet: attention layer %d outside [0, %d]", l, len(a.Hidden)))
	}
	in, out := a.layerShape(l)
	w = params[a.wOff[l] : a.wOff[l]+out*in : a.wOff[l]+out*in]
	b = params[a.bOff[l] : a.bOff[l]+out : a.bOff[l]+out]
	if l < len(a.Hidden) {
		alpha = params[a.aOff[l] : a.aOff[l]+out : a.aOff[l]+out]
	}
	return w, b, alpha
}

// Init fills params with PyTorch's defaults: every weight and bias of
// layer l uniform in [-1/sqrt(in_l), 1/sqrt(in_l)] (nn.Linear) and every
// PReLU slope 0.25 (nn.PReLU). The values depend only on seed (a
// SplitMix64 stream, drawn layer by layer, W_l then b_l), not on the Go
// version or the platform. It panics if len(params) != NumParams().
func (a *Attention) Init(params []float32, seed uint64) {
	a.checkParams("params", params)
	rng := splitMix64{state: seed}
	for l := 0; l <= len(a.Hidden); l++ {
		in, _ := a.layerShape(l)
		bound := 1 / math.Sqrt(float64(in))
		w, b, alpha := a.LayerParams(params, l)
		for _, s := range [][]float32{w, b} {
			for i := range s {
				s[i] = float32((2*rng.float64() - 1) * bound)
			}
		}
		for i := range alpha {
			alpha[i] = 0.25
		}
	}
}

func (a *Attention) checkParams(name string, p []float32) {
	if len(p) != a.numParams {
		panic(fmt.Sprintf("densenet: len(%s) = %d, want Attention.NumParams() = %d", name, len(p), a.numParams))
	}
}

// AttentionWorkspace holds what Attention.Forward keeps for Backward (the
// key and query parts of the first layer, every layer's activations over
// the valid (query, step) pairs, the scores) and the scratch of both
// passes. NewWorkspace sizes it for a shape; a call with more queries or
// valid steps grows it (that call allocates), and later calls of at most
// that size allocate nothing (see Gemm for its helper goroutines). It
// belongs to the Attention that made it and is not safe for concurrent
// use.
type AttentionWorkspace struct {
	// Threads caps the goroutines one matrix product may use, as
	// Workspace.Threads. The default value is 0, meaning
	// runtime.GOMAXPROCS(0).
	Threads int

	att *Attention
	// The shape of the last completed Forward; m is -1 before the first
	// and while a Forward runs.
	m, nodes, T int
	krows, R    int // valid keys (Σ_j lens[j]) and valid (query, step) pairs

	koff, qoff []int32      // first packed row of node j's keys, of query i's pairs
	kc         []float32    // the valid keys, packed node after node (unless keys has no padding)
	wkd, wqd   []float32    // W_k + W_d and W_q − W_d, H_1 x Dim
	kp, qp     []float32    // (W_k+W_d)·k per key, (W_q−W_d)·q + b_0 per query
	e          []float32    // k ⊙ q per pair, R x Dim
	z, act     [][]float32  // hidden layer l's pre- and post-PReLU outputs per pair, R x H_{l+1}
	s          []float32    // per pair: the raw score, or with Softmax the probability
	ds         []float32    // Backward: the gradient of the raw scores per pair
	dbuf       [2][]float32 // Backward: a hidden layer's gradients, R x max(Hidden)
	de         []float32    // Backward: dLoss/d(k⊙q) per pair
	dqp, dkp   []float32    // Backward: the gradients of the query and key parts
	dkc        []float32    // Backward: the keys' gradient from the key part, packed

	scratch []float32 // GEMM packing buffer
}

// NewWorkspace returns a workspace for calls with up to maxQueries
// queries, maxNodes key sequences and maxLen steps (larger calls grow
// it). It panics if a size is negative.
func (a *Attention) NewWorkspace(maxQueries, maxNodes, maxLen int) *AttentionWorkspace {
	if maxQueries < 0 || maxNodes < 0 || maxLen < 0 {
		panic("densenet: negative attention workspace size")
	}
	ws := &AttentionWorkspace{att: a, m: -1}
	ws.z = make([][]float32, len(a.Hidden))
	ws.act = make([][]float32, len(a.Hidden))
	ws.grow(maxQueries, maxNodes, maxNodes*maxLen, maxQueries*maxLen)
	return ws
}

func (ws *AttentionWorkspace) threads() int {
	if ws.Threads > 0 {
		return ws.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// grow makes sure the buffers hold m queries, nodes key sequences, krows
// valid keys and R valid pairs.
func (ws *AttentionWorkspace) grow(m, nodes, krows, R int) {
	a := ws.att
	d, h1 := a.Dim, a.Hidden[0]
	maxH := 0
	for l, h := range a.Hidden {
		growFloats(&ws.z[l], R*h)
		growFloats(&ws.act[l], R*h)
		maxH = max(maxH, h)
	}
	growInt32(&ws.koff, nodes)
	growInt32(&ws.qoff, m+1)
	for _, b := range []struct {
		buf *[]float32
		n   int
	}{
		{&ws.kc, krows * d}, {&ws.wkd, h1 * d}, {&ws.wqd, h1 * d}, {&ws.kp, krows * h1}, {&ws.qp, m * h1},
		{&ws.e, R * d}, {&ws.s, R}, {&ws.ds, R}, {&ws.dbuf[0], R * maxH}, {&ws.dbuf[1], R * maxH}, {&ws.de, R * d},
		{&ws.dqp, m * h1}, {&ws.dkp, krows * h1}, {&ws.dkc, krows * d},
	} {
		growFloats(b.buf, b.n)
	}
}

// Forward sets scores (m x T) to the attention scores of the m queries q
// (m x Dim, row-major) against their keys: query i's keys are the first
// lens[j] steps of node j = node[i] (node nil: j = i, m = len(lens)) of
// keys (nodes x T x Dim, node-major: keys[(j*T+t)*Dim:][:Dim] is step t
// of node j; the padding steps are not read), with
//
//	for i := 0; i < m; i++ {
//		j := node[i] // i if node is nil
//		for t := 0; t < T; t++ {
//			scores[i*T+t] = 0
//			if t < lens[j] {
//				k, qi := keys[(j*T+t)*Dim:][:Dim], q[i*Dim:][:Dim]
//				scores[i*T+t] = unit(k, qi) // the network of the type's doc
//			}
//		}
//		if Softmax && lens[j] > 0 {
//			// scores[i*T+t] = exp(scores[i*T+t]) / Σ_{t'<lens[j]} exp(scores[i*T+t']) for t < lens[j]
//		}
//	}
//
// (on Gemm, with the first layer split as the type's doc says, so results
// differ from the loop in the last bits; the softmax is computed in
// float64). Scores of padding steps are 0, and all of a length-0
// sequence's. Forward keeps what Backward needs in ws and reads params,
// keys, lens, q and node only. It panics on a workspace of another
// Attention, a length outside [0, T], a node out of range or wrong
// lengths. scores must not overlap the inputs.
func (a *Attention) Forward(ws *AttentionWorkspace, params, keys []float32, lens []int32, T int, q []float32, node []int32, m int, scores []float32) {
	nodes := a.check(ws, params, keys, lens, T, q, node, m)
	checkLen("Attention.Forward", "scores", scores, m*T)
	ws.m = -1
	d, h1 := a.Dim, a.Hidden[0]
	krows, R := ws.plan(lens, T, node, m)
	ws.krows, ws.R = krows, R
	threads := ws.threads()
	w0, b0, _ := a.LayerParams(params, 0)
	for o := 0; o < h1; o++ {
		row := w0[o*4*d : (o+1)*4*d]
		for c := 0; c < d; c++ {
			ws.wkd[o*d+c] = row[c] + row[2*d+c]
			ws.wqd[o*d+c] = row[d+c] - row[2*d+c]
		}
	}
	kr := packSeqs(&ws.kc, keys, lens, T, d, ws.koff)
	// Kp (krows x H_1) = K (krows x Dim) · (W_k+W_d)ᵀ; Qp (m x H_1) = Q · (W_q−W_d)ᵀ + b_0
	gemm(threads, &ws.scratch, NoTrans, Trans, krows, h1, d, 1, kr, d, ws.wkd, d, 0, ws.kp[:krows*h1], h1)
	qp := ws.qp[:m*h1]
	gemm(threads, &ws.scratch, NoTrans, Trans, m, h1, d, 1, q, d, ws.wqd, d, 0, qp, h1)
	AddBias(qp, b0)
	e := ws.e[:R*d]
	a.forEachPair(ws, lens, T, node, m, func(i, j, t, r int) {
		k, qi, er := keys[(j*T+t)*d:][:d], q[i*d:][:d], e[r*d:][:d]
		for c, v := range k {
			er[c] = v * qi[c]
		}
	})
	a.forwardLayers(ws, params, lens, T, node, m)
	a.writeScores(ws, lens, T, node, m, scores)
	ws.m, ws.nodes, ws.T = m, nodes, T
}

// forwardLayers runs the layers over the R pairs: the first from E =
// k⊙q, the key and query parts, then the hidden layers, then the scores
// into ws.s (raw).
func (a *Attention) forwardLayers(ws *AttentionWorkspace, params []float32, lens []int32, T int, node []int32, m int) {
	d, R, L := a.Dim, ws.R, len(a.Hidden)
	threads := ws.threads()
	w0, _, alpha0 := a.LayerParams(params, 0)
	h1 := a.Hidden[0]
	z := ws.z[0][:R*h1]
	// Z_0 (R x H_1) = E (R x Dim) · W_pᵀ, W_p = W_0's last Dim columns (row stride 4·Dim)
	gemm(threads, &ws.scratch, NoTrans, Trans, R, h1, d, 1, ws.e[:R*d], d, w0[3*d:], 4*d, 0, z, h1)
	act := ws.act[0][:R*h1]
	a.forEachPair(ws, lens, T, node, m, func(i, j, t, r int) {
		kp, qp := ws.kp[(int(ws.koff[j])+t)*h1:][:h1], ws.qp[i*h1:][:h1]
		addPReLU(act[r*h1:][:h1], z[r*h1:][:h1], kp, qp, alpha0)
	})
	for l := 1; l < L; l++ {
		in, out := a.layerShape(l)
		w, b, alpha := a.LayerParams(params, l)
		zl, al := ws.z[l][:R*out], ws.act[l][:R*out]
		gemm(threads, &ws.scratch, NoTrans, Trans, R, out, in, 1, ws.act[l-1][:R*in], in, w, in, 0, zl, out)
		for r := 0; r < R; r++ {
			addPReLU(al[r*out:][:out], zl[r*out:][:out], b, nil, alpha)
		}
	}
	wl, bl, _ := a.LayerParams(params, L)
	hl := a.Hidden[L-1]
	last := ws.act[L-1]
	for r := 0; r < R; r++ {
		ws.s[r] = Dot(last[r*hl:(r+1)*hl], wl) + bl[0]
	}
}

// writeScores applies the softmax, if any, to ws.s (in place) and writes
// scores, with 0 at the padding steps.
func (a *Attention) writeScores(ws *AttentionWorkspace, lens []int32, T int, node []int32, m int, scores []float32) {
	for i := 0; i < m; i++ {
		lo, hi := int(ws.qoff[i]), int(ws.qoff[i+1])
		s := ws.s[lo:hi]
		if a.Softmax && len(s) > 0 {
			mx := s[0]
			for _, v := range s {
				mx = max(mx, v)
			}
			var sum float64
			for _, v := range s {
				sum += math.Exp(float64(v - mx))
			}
			for r, v := range s {
				s[r] = float32(math.Exp(float64(v-mx)) / sum)
			}
		}
		copy(scores[i*T:], s)
		clear(scores[i*T+len(s) : (i+1)*T])
	}
}

// forEachPair calls f(i, j, t, r) for every valid pair of query i and step
// t < lens[j] of its node j, with r the pair's packed row, in order of r.
func (a *Attention) forEachPair(ws *AttentionWorkspace, lens []int32, T int, node []int32, m int, f func(i, j, t, r int)) {
	for i := 0; i < m; i++ {
		j := nodeOf(node, i)
		r0 := int(ws.qoff[i])
		for t := 0; t < int(lens[j]); t++ {
			f(i, j, t, r0+t)
		}
	}
}

// Backward computes the gradients of a loss after Forward(ws, params,
// keys, lens, T, q, node, m, scores) with the same arguments, given
// dscores (m x T), the gradient with respect to the scores (the padding
// steps' entries are not read). Through the softmax, if any, the
// gradient of a raw score is p_t·(g_t − Σ_t' g_t'·p_t'); the layers go
// back as an MLP's with PReLU (dα = Σ dLoss/da ⊙ z over z <= 0), and the
// first layer as the type's doc splits it. It OVERWRITES grad
// (NumParams()) with dLoss/dparams, and ADDS dLoss/dkeys to dkeys (nodes
// x T x Dim; the padding steps are left alone) and dLoss/dq to dq (m x
// Dim), because keys and queries are inputs of other blocks too (the
// pooling, the MLP) whose gradients the caller sums; dkeys or dq may be
// nil. The outputs must not overlap the inputs or each other. It panics
// if the last Forward on ws had another shape, or on wrong lengths.
func (a *Attention) Backward(ws *AttentionWorkspace, params, keys []float32, lens []int32, T int, q []float32, node []int32, m int, dscores, grad, dkeys, dq []float32) {
	nodes := a.check(ws, params, keys, lens, T, q, node, m)
	if ws.m != m || ws.nodes != nodes || ws.T != T {
		panic(fmt.Sprintf("densenet: Attention.Backward with %d queries, %d nodes, T = %d after Forward with %d, %d, %d", m, nodes, T, ws.m, ws.nodes, ws.T))
	}
	checkLen("Attention.Backward", "dscores", dscores, m*T)
	a.checkParams("grad", grad)
	if dkeys != nil {
		checkLen("Attention.Backward", "dkeys", dkeys, len(keys))
	}
	if dq != nil {
		checkLen("Attention.Backward", "dq", dq, len(q))
	}
	R, L := ws.R, len(a.Hidden)
	hl := a.Hidden[L-1]
	ds := ws.ds[:R]
	for i := 0; i < m; i++ {
		lo, hi := int(ws.qoff[i]), int(ws.qoff[i+1])
		softmaxBackward(ds[lo:hi], ws.s[lo:hi], dscores[i*T:i*T+hi-lo], a.Softmax)
	}
	wl, _, _ := a.LayerParams(params, L)
	gwl, gbl, _ := a.LayerParams(grad, L)
	last, cur := ws.act[L-1][:R*hl], ws.dbuf[0][:R*hl]
	clear(gwl)
	var db float64
	for r, g := range ds {
		Axpy(gwl, g, last[r*hl:(r+1)*hl])
		db += float64(g)
		cr := cur[r*hl : (r+1)*hl]
		for o, w := range wl {
			cr[o] = g * w
		}
	}
	gbl[0] = float32(db)
	dz0 := a.backwardHidden(ws, params, grad, cur)
	a.backwardFirst(ws, params, keys, lens, T, q, node, m, dz0, grad, dkeys, dq)
}

// softmaxBackward sets ds to the gradient of one query's raw scores given
// g, the gradient of its output scores, and s, its outputs (the
// probabilities with softmax; without, ds is g).
func softmaxBackward(ds, s, g []float32, softmax bool) {
	if !softmax {
		copy(ds, g)
		return
	}
	var dot float64
	for t, p := range s {
		dot += float64(p) * float64(g[t])
	}
	for t, p := range s {
		ds[t] = float32(float64(p) * (float64(g[t]) - dot))
	}
}

// backwardHidden goes back through the hidden layers L-1 .. 0 from cur,
// dLoss/da_L (R x H_L), writing their gradients (layer 0's PReLU slopes
// only); it returns dLoss/dZ_0 (R x H_1).
func (a *Attention) backwardHidden(ws *AttentionWorkspace, params, grad, cur []float32) []float32 {
	R, threads := ws.R, ws.threads()
	for l, k := len(a.Hidden)-1, 0; ; l, k = l-1, k+1 {
		in, out := a.layerShape(l)
		_, _, alpha := a.LayerParams(params, l)
		gw, gb, galpha := a.LayerParams(grad, l)
		preluBackward(cur, ws.z[l][:R*out], alpha, galpha)
		if l == 0 {
			return cur
		}
		w, _, _ := a.LayerParams(params, l)
		// dW_l (out x in) = dZᵀ · A_{l-1}; dA_{l-1} (R x in) = dZ · W_l
		gemm(threads, &ws.scratch, Trans, NoTrans, out, in, R, 1, cur, out, ws.act[l-1][:R*in], in, 0, gw, in)
		ColSums(gb, cur)
		next := ws.dbuf[(k+1)%2][:R*in]
		gemm(threads, &ws.scratch, NoTrans, NoTrans, R, in, out, 1, cur, out, w, in, 0, next, in)
		cur = next
	}
}

// backwardFirst computes the first layer's gradients from dz, dLoss/dZ_0
// (R x H_1): W_p's from E, the query part's and the key part's (summed
// per query and per key), W_d's as their difference, and adds the
// gradients of q and the keys to dq and dkeys unless they are nil.
func (a *Attention) backwardFirst(ws *AttentionWorkspace, params, keys []float32, lens []int32, T int, q []float32, node []int32, m int, dz, grad, dkeys, dq []float32) {
	d, h1, R, krows := a.Dim, a.Hidden[0], ws.R, ws.krows
	threads := ws.threads()
	w0, _, _ := a.LayerParams(params, 0)
	gw0, gb0, _ := a.LayerParams(grad, 0)
	// dW_p (H_1 x Dim, into W_0's last Dim columns) = dZᵀ · E
	gemm(threads, &ws.scratch, Trans, NoTrans, h1, d, R, 1, dz, h1, ws.e[:R*d], d, 0, gw0[3*d:], 4*d)
	dqp, dkp := ws.dqp[:m*h1], ws.dkp[:krows*h1]
	clear(dqp)
	clear(dkp)
	a.forEachPair(ws, lens, T, node, m, func(i, j, t, r int) {
		zr := dz[r*h1 : (r+1)*h1]
		Axpy(dqp[i*h1:(i+1)*h1], 1, zr)
		Axpy(dkp[(int(ws.koff[j])+t)*h1:][:h1], 1, zr)
	})
	ColSums(gb0, dqp)
	kr := packedRows(ws.kc, keys, krows, len(lens), T, d)
	// d(W_k+W_d) = dKpᵀ · K and d(W_q−W_d) = dQpᵀ · Q, into W_k's and W_q's columns
	gemm(threads, &ws.scratch, Trans, NoTrans, h1, d, krows, 1, dkp, h1, kr, d, 0, gw0, 4*d)
	gemm(threads, &ws.scratch, Trans, NoTrans, h1, d, m, 1, dqp, h1, q, d, 0, gw0[d:], 4*d)
	for o := 0; o < h1; o++ {
		row := gw0[o*4*d : (o+1)*4*d]
		for c := 0; c < d; c++ {
			row[2*d+c] = row[c] - row[d+c]
		}
	}
	if dkeys == nil && dq == nil {
		return
	}
	de := ws.de[:R*d]
	// dE (R x Dim) = dZ · W_p
	gemm(threads, &ws.scratch, NoTrans, NoTrans, R, d, h1, 1, dz, h1, w0[3*d:], 4*d, 0, de, d)
	if dq != nil {
		// dQ += dQp · (W_q−W_d), then the k⊙q part
		gemm(threads, &ws.scratch, NoTrans, NoTrans, m, d, h1, 1, dqp, h1, ws.wqd, d, 1, dq, d)
	}
	if dkeys != nil {
		a.addKeyGrads(ws, lens, T, dkp, dkeys)
	}
	a.forEachPair(ws, lens, T, node, m, func(i, j, t, r int) {
		dr, qi, k := de[r*d:][:d], q[i*d:][:d], keys[(j*T+t)*d:][:d]
		if dq != nil {
			dqi := dq[i*d:][:d]
			for c, v := range dr {
				dqi[c] += v * k[c]
			}
		}
		if dkeys != nil {
			dk := dkeys[(j*T+t)*d:][:d]
			for c, v := range dr {
				dk[c] += v * qi[c]
			}
		}
	})
}

// addKeyGrads adds dKp · (W_k+W_d), the keys' gradient through the key
// part, to dkeys: by Gemm straight into dkeys when it has no padding,
// else packed and then added step by step.
func (a *Attention) addKeyGrads(ws *AttentionWorkspace, lens []int32, T int, dkp, dkeys []float32) {
	d, h1, krows := a.Dim, a.Hidden[0], ws.krows
	if krows == len(lens)*T {
		gemm(ws.threads(), &ws.scratch, NoTrans, NoTrans, krows, d, h1, 1, dkp, h1, ws.wkd, d, 1, dkeys, d)
		return
	}
	dkc := ws.dkc[:krows*d]
	gemm(ws.threads(), &ws.scratch, NoTrans, NoTrans, krows, d, h1, 1, dkp, h1, ws.wkd, d, 0, dkc, d)
	unpackSeqs(dkeys, dkc, lens, T, d, ws.koff, true)
}

// addPReLU adds x (and y, unless it is nil) to the row z and sets the
// row act to PReLU(z) with the slopes alpha: act[o] = z[o] if it is > 0,
// else alpha[o]*z[o]. It computes max(z, 0) + alpha·min(z, 0), without
// branches, which a random sign would mispredict.
func addPReLU(act, z, x, y, alpha []float32) {
	h := len(z)
	act, x, alpha = act[:h], x[:h], alpha[:h]
	if y != nil {
		y = y[:h]
	}
	n := vecPReLUAdd(act, z, x, y, alpha) // the first columns, by SIMD where it runs
	if y != nil {
		for o := n; o < h; o++ {
			z[o] += x[o] + y[o]
		}
	} else {
		for o := n; o < h; o++ {
			z[o] += x[o]
		}
	}
	for o := n; o < h; o++ {
		v := z[o]
		act[o] = max(v, 0) + alpha[o]*min(v, 0)
	}
}

// preluBackward turns g, dLoss/dPReLU(z), into dLoss/dz in place and
// overwrites galpha with dLoss/dalpha = Σ_rows g ⊙ min(z, 0). The slope
// (1 or alpha, by z's sign bit) is selected with bit masks, not branches.
// Each galpha[o] sums its rows in row order, whichever columns the SIMD
// kernel did.
func preluBackward(g, z, alpha, galpha []float32) {
	h := len(alpha)
	galpha = galpha[:h]
	clear(galpha)
	n := vecPReLUBack(g, z, alpha, galpha)
	if n == h {
		return
	}
	for len(z) >= h && len(g) >= h {
		zr, gr := z[:h], g[:h]
		for o := n; o < h; o++ {
			v := zr[o]
			neg := uint32(int32(math.Float32bits(v)) >> 31) // all ones if z < 0 (or -0)
			slope := math.Float32frombits(neg&math.Float32bits(alpha[o]) | ^neg&0x3f800000)
			galpha[o] += gr[o] * min(v, 0)
			gr[o] *= slope
		}
		z, g = z[h:], g[h:]
	}
}

// check panics unless the arguments of a pass fit a and ws; it returns
// the number of key sequences.
func (a *Attention) check(ws *AttentionWorkspace, params, keys []float32, lens []int32, T int, q []float32, node []int32, m int) int {
	if ws.att != a {
		panic("densenet: workspace belongs to another Attention")
	}
	a.checkParams("params", params)
	nodes := checkSeqs("Attention", lens, T, node, m)
	checkLen("Attention", "keys", keys, nodes*T*a.Dim)
	checkLen("Attention", "q", q, m*a.Dim)
	return nodes
}

// plan sets the packed offsets of the keys (ws.koff) and of the pairs
// (ws.qoff), growing ws to fit, and returns the numbers of valid keys and
// pairs.
func (ws *AttentionWorkspace) plan(lens []int32, T int, node []int32, m int) (krows, R int) {
	for _, l := range lens {
		krows += int(l)
	}
	for i := 0; i < m; i++ {
		R += seqLen(lens, node, i)
	}
	ws.grow(m, len(lens), krows, R)
	krows = 0
	for j, l := range lens {
		ws.koff[j] = int32(krows)
		krows += int(l)
	}
	R = 0
	for i := 0; i < m; i++ {
		ws.qoff[i] = int32(R)
		R += seqLen(lens, node, i)
	}
	ws.qoff[m] = int32(R)
	return krows, R
}

// AttentionPool sets out (m x dim) to the attention-weighted sums of the
// keys: with m queries mapped to key sequences by node (nil: m =
// len(lens), query i reads sequence i) and weights w (m x T, the scores
// of Attention.Forward),
//
//	for i := 0; i < m; i++ {
//		j := node[i] // i if node is nil
//		for c := 0; c < dim; c++ {
//			out[i*dim+c] = 0
//			for t := 0; t < lens[j]; t++ {
//				out[i*dim+c] += w[i*T+t] * keys[(j*T+t)*dim+c]
//			}
//		}
//	}
//
// keys is len(lens) x T x dim, node-major; padding steps of keys and w are
// not read. It panics on a length outside [0, T], a node out of range or
// wrong lengths. out must not overlap the inputs.
func AttentionPool(out, keys []float32, lens []int32, T, dim int, node []int32, w []float32) {
	m := checkPool("AttentionPool", keys, lens, T, dim, node, w)
	checkLen("AttentionPool", "out", out, m*dim)
	for i := 0; i < m; i++ {
		j := nodeOf(node, i)
		o := out[i*dim : (i+1)*dim]
		clear(o)
		for t := 0; t < int(lens[j]); t++ {
			Axpy(o, w[i*T+t], keys[(j*T+t)*dim:][:dim])
		}
	}
}

// AttentionPoolBackward is AttentionPool's adjoint: given dout (m x dim),
// the gradient with respect to out, it OVERWRITES dw (m x T) with
// dLoss/dw (0 at the padding steps) unless dw is nil, and sets dkeys
// (len(lens) x T x dim) to dLoss/dkeys plus beta times dkeys unless dkeys
// is nil:
//
//	dkeys[...] *= beta // 0 if beta is 0: dkeys is then not read
//	for i := 0; i < m; i++ {
//		j := node[i] // i if node is nil
//		for t := 0; t < T; t++ {
//			dw[i*T+t] = 0
//			if t < lens[j] {
//				k := keys[(j*T+t)*dim:][:dim]
//				dw[i*T+t] = Dot(dout[i*dim:][:dim], k)
//				Axpy(dkeys[(j*T+t)*dim:][:dim], w[i*T+t], dout[i*dim:][:dim])
//			}
//		}
//	}
//
// beta = 1 adds to a gradient another block has written. It panics as
// AttentionPool does, and on wrong lengths of dkeys, dw or dout. The
// outputs must not overlap the inputs or each other.
func AttentionPoolBackward(dkeys, dw, keys []float32, lens []int32, T, dim int, node []int32, w, dout []float32, beta float32) {
	m := checkPool("AttentionPoolBackward", keys, lens, T, dim, node, w)
	checkLen("AttentionPoolBackward", "dout", dout, m*dim)
	if dw != nil {
		checkLen("AttentionPoolBackward", "dw", dw, m*T)
	}
	if dkeys != nil {
		checkLen("AttentionPoolBackward", "dkeys", dkeys, len(keys))
		switch beta {
		case 0:
			clear(dkeys)
		case 1:
		default:
			for i := range dkeys {
				dkeys[i] *= beta
			}
		}
	}
	for i := 0; i < m; i++ {
		j, l := nodeOf(node, i), seqLen(lens, node, i)
		g := dout[i*dim : (i+1)*dim]
		for t := 0; t < l; t++ {
			k := keys[(j*T+t)*dim:][:dim]
			if dw != nil {
				dw[i*T+t] = Dot(g, k)
			}
			if dkeys != nil {
				Axpy(dkeys[(j*T+t)*dim:][:dim], w[i*T+t], g)
			}
		}
		if dw != nil {
			clear(dw[i*T+l : (i+1)*T])
		}
	}
}

// checkPool panics unless the arguments of AttentionPool fit; it returns
// the number of queries.
func checkPool(fn string, keys []float32, lens []int32, T, dim int, node []int32, w []float32) int {
	if dim <= 0 {
		panic(fmt.Sprintf("densenet: %s: dim = %d", fn, dim))
	}
	m := len(node)
	if node == nil {
		m = len(lens)
	}
	nodes := checkSeqs(fn, lens, T, node, m)
	checkLen(fn, "keys", keys, nodes*T*dim)
	checkLen(fn, "w", w, m*T)
	return m
}
