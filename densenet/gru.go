package densenet

import (
	"fmt"
	"math"
	"runtime"
)

// GRU is a gated recurrent unit over sequences of In-wide inputs with a
// Hidden-wide state; with Attn it is DIEN's AUGRU (Zhou et al. 2019),
// whose update is scaled by a per-step attention score.
//
// The cell is PyTorch's nn.GRU, gates r, z, n, with h_{-1} = 0 and
// σ the logistic function:
//
//	r   = σ(W_ir·x_t + b_ir + W_hr·h_{t-1} + b_hr)
//	z   = σ(W_iz·x_t + b_iz + W_hz·h_{t-1} + b_hz)
//	n   = tanh(W_in·x_t + b_in + r ⊙ (W_hn·h_{t-1} + b_hn))
//	GRU:   h_t = (1 − z) ⊙ n + z ⊙ h_{t-1}
//	AUGRU: h_t = h_{t-1} + a_t·(1 − z) ⊙ (n − h_{t-1})
//
// where a_t is the step's attention score (a scalar; a_t = 1 gives the
// GRU, and a_t·(1 − z) is DIEN's attentional update gate ũ = a_t·u with
// u = 1 − z). Both are computed in the second form, h_{t-1} + u ⊙ (n −
// h_{t-1}) with u = a_t·(1 − z).
//
// The parameters are one flat []float32 of NumParams() values, PyTorch's
// weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0 flattened in order:
//
//	W_ih (3H x In, row-major: rows W_ir, then W_iz, then W_in),
//	W_hh (3H x H, rows W_hr, W_hz, W_hn), b_ih (3H), b_hh (3H)
//
// with H = Hidden (Params gives the slices). The gradient has the same
// layout.
//
// # Sequences and nodes
//
// The input is a batch of node sequences, node-major: x[(j*T+t)*In :
// (j*T+t+1)*In] is step t of sequence j, of which the first lens[j] steps
// are valid (0 <= lens[j] <= T); the padding steps are never read. There
// are m output sequences, and output sequence i runs the cell over input
// sequence node[i] (node nil: the identity, m = len(lens)). Several
// outputs may share a node: DIEN's AUGRU runs once per (user, candidate)
// pair, over the user's interest states, with the candidate's attention
// scores. The input projection W_ih·x_t + b_ih does not depend on the
// output, so it is computed once per node and step, by one Gemm over the
// valid steps of all nodes; backward sums its gradient over the outputs
// that share a node before the Gemms for dW_ih and dx.
//
// # The recurrence on Gemm
//
// Forward orders the output sequences by decreasing length (a stable
// counting sort, kept in the workspace), so that at step t the ones still
// running are a prefix of that order, and keeps their states h_{t-1}
// contiguous: the recurrent product of a step is one Gemm, H_{t-1} ·
// W_hhᵀ over the running rows, followed by a fused loop over the gates
// (σ and tanh in float32, see tanh32). Backward runs through time with
// one Gemm per step for dh_{t-1} += dG_t · W_hh, keeps every step's gate
// gradients dG_t, and computes dW_hh by a single Gemm over all steps at
// the end (a Gemm per step accumulating into dW_hh measured the same at
// DIEN's shapes). Apart from the Gemms, which split by rows or columns of
// C, the work is serial, so the results do not depend on Threads.
// (Splitting a step's cells between goroutines measured slower on a
// 2-core machine shared with other work: a step's cells take tens of
// microseconds, not much more than a goroutine hand-off.)
//
// A GRU is immutable and safe for concurrent use; a GRUWorkspace is not
// (see MLP for the protocol: Forward, then Backward with the same
// workspace, parameters, input, lengths, nodes and attention).
type GRU struct {
	// In is the width of an input step, Hidden that of the state. Attn
	// makes the cell an AUGRU. They must not be modified.
	In, Hidden int
	Attn       bool
}

// NewGRU returns a GRU (an AUGRU with attn) over in-wide inputs with a
// hidden-wide state. It is an error (ErrBadSizes) to give a width that is
// not positive.
func NewGRU(in, hidden int, attn bool) (*GRU, error) {
	if in <= 0 || hidden <= 0 {
		return nil, fmt.Errorf("%w: GRU of %d inputs and %d hidden units", ErrBadSizes, in, hidden)
	}
	return &GRU{In: in, Hidden: hidden, Attn: attn}, nil
}

// NumParams returns the length of the parameter vector (and of the
// gradient vector): 3H*In + 3H*H + 3H + 3H with H = Hidden.
func (g *GRU) NumParams() int {
	h3 := 3 * g.Hidden
	return h3*g.In + h3*g.Hidden + 2*h3
}

// Params returns W_ih (3H x In), W_hh (3H x H), b_ih (3H) and b_hh (3H)
// as subslices of params, which may be a parameter or a gradient vector
// of length NumParams. It panics if len(params) != NumParams().
func (g *GRU) Params(params []float32) (wih, whh, bih, bhh []float32) {
	g.checkParams("params", params)
	h3 := 3 * g.Hidden
	a := h3 * g.In
	b := a + h3*g.Hidden
	c := b + h3
	return params[:a:a], params[a:b:b], params[b:c:c], params[c : c+h3 : c+h3]
}

// Init fills params with the default initialisation of PyTorch's nn.GRU:
// every weight and bias uniform in [-1/sqrt(Hidden), 1/sqrt(Hidden)]. The
// values depend only on seed (a SplitMix64 stream, drawn in the layout's
// order), not on the Go version or the platform. It panics if
// len(params) != NumParams().
func (g *GRU) Init(params []float32, seed uint64) {
	g.checkParams("params", params)
	rng := splitMix64{state: seed}
	bound := 1 / math.Sqrt(float64(g.Hidden))
	for i := range params {
		params[i] = float32((2*rng.float64() - 1) * bound)
	}
}

func (g *GRU) checkParams(name string, p []float32) {
	if len(p) != g.NumParams() {
		panic(fmt.Sprintf("densenet: len(%s) = %d, want GRU.NumParams() = %d", name, len(p), g.NumParams()))
	}
}

// GRUWorkspace holds what GRU.Forward keeps for Backward (the input
// projection, every step's gates and states, the order of the output
// sequences) and the scratch of both passes: 8·Hidden floats per output
// step (the state, four gate values and three gate gradients) and
// 6·Hidden + 2·In per input step. NewWorkspace sizes it for a shape; a
// call with more valid steps grows it (that call allocates), and later
// calls of at most that size allocate nothing (see Gemm for its helper
// goroutines). It belongs to the GRU that made it and is not safe
// for concurrent use.
type GRUWorkspace struct {
	// Threads caps the goroutines one matrix product may use, as
	// Workspace.Threads. The default value is 0, meaning
	// runtime.GOMAXPROCS(0).
	Threads int

	gru *GRU
	// The shape of the last completed Forward; m is -1 before the first
	// and while a Forward runs.
	m, nodes, T int
	rows        int // valid input steps, Σ_j lens[j]

	xc     []float32 // the valid input steps, packed node after node (unless x has no padding)
	p      []float32 // rows x 3H: W_ih·x_t, packed like xc
	off    []int32   // per node: its first row in xc and p
	perm   []int32   // output sequences by decreasing length
	prow   []int32   // prow[k]: the row in p of step 0 of sorted output k's node
	active []int     // active[t]: outputs still running at step t, t = 0 .. T (active[T] = 0)
	base   []int     // base[t]: first packed row of step t, Σ_{t'<t} active[t']
	cnt    []int     // counting sort
	hin    []float32 // packed rows (step t's block: active[t] rows): h_{t-1} of the running outputs
	gates  []float32 // packed rows x 4H: r, z, n, W_hn·h_{t-1} + b_hn
	g      []float32 // one step's H_{t-1}·W_hhᵀ, maxSeqs x 3H
	brz    []float32 // b_ir + b_hr, b_iz + b_hz
	dg     []float32 // Backward: packed rows x 3H, the gradients of W_hh·h_{t-1} + b_hh
	dp     []float32 // Backward: rows x 3H, the gradient of W_ih·x_t + b_ih
	dxc    []float32 // Backward: rows x In, dx packed (unless x has no padding)
	carry  []float32 // Backward: maxSeqs x H, dLoss/dh_t from the later steps

	scratch []float32 // GEMM packing buffer
}

// NewWorkspace returns a workspace for calls with up to maxSeqs output
// sequences, maxNodes input sequences and maxLen steps (larger calls grow
// it). It panics if a size is negative.
func (g *GRU) NewWorkspace(maxSeqs, maxNodes, maxLen int) *GRUWorkspace {
	if maxSeqs < 0 || maxNodes < 0 || maxLen < 0 {
		panic("densenet: negative GRU workspace size")
	}
	ws := &GRUWorkspace{gru: g, m: -1}
	ws.grow(maxSeqs, maxNodes, maxLen, maxNodes*maxLen, maxSeqs*maxLen)
	return ws
}

func (ws *GRUWorkspace) threads() int {
	if ws.Threads > 0 {
		return ws.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// grow makes sure the buffers hold m outputs, nodes inputs, T steps, rows
// valid input steps and R packed output steps.
func (ws *GRUWorkspace) grow(m, nodes, T, rows, R int) {
	g := ws.gru
	h, h3 := g.Hidden, 3*g.Hidden
	growInt32(&ws.off, nodes)
	growInt32(&ws.perm, m)
	growInt32(&ws.prow, m)
	growInts(&ws.active, T+1)
	growInts(&ws.base, T+1)
	growInts(&ws.cnt, T+1)
	for _, b := range []struct {
		buf *[]float32
		n   int
	}{
		{&ws.xc, rows * g.In}, {&ws.p, rows * h3}, {&ws.hin, R * h}, {&ws.gates, R * 4 * h},
		{&ws.g, m * h3}, {&ws.brz, 2 * h}, {&ws.dg, R * h3}, {&ws.dp, rows * h3},
		{&ws.dxc, rows * g.In}, {&ws.carry, m * h},
	} {
		growFloats(b.buf, b.n)
	}
}

// Forward runs the cell over the output sequences and sets h (m x T x H,
// row-major: h[(i*T+t)*H : (i*T+t+1)*H] is output i's state after step t)
// to the states, 0 at the steps t >= lens[node[i]]:
//
//	for i := 0; i < m; i++ {
//		j := node[i] // i if node is nil
//		var hp [H]float32 // h_{-1} = 0
//		for t := 0; t < lens[j]; t++ {
//			xt := x[(j*T+t)*In : (j*T+t+1)*In]
//			a := float32(1) // GRU
//			if Attn {
//				a = att[i*T+t]
//			}
//			for o := 0; o < H; o++ {
//				gi := func(q int) float32 { return Dot(W_ih[(q*H+o)*In:][:In], xt) + b_ih[q*H+o] }
//				gh := func(q int) float32 { return Dot(W_hh[(q*H+o)*H:][:H], hp[:]) + b_hh[q*H+o] }
//				r := σ(gi(0) + gh(0))
//				z := σ(gi(1) + gh(1))
//				n := tanh(gi(2) + r*gh(2))
//				h[(i*T+t)*H+o] = hp[o] + a*(1-z)*(n-hp[o])
//			}
//			copy(hp[:], h[(i*T+t)*H:][:H])
//		}
//	}
//
// (on Gemm and float32 approximations of σ and tanh, so results differ
// from the loop in the last bits). x is nodes x T x In with nodes =
// len(lens) (see the type's doc); node has m entries in [0, nodes), or is
// nil with m = nodes; att is m x T for an AUGRU (the scores of the
// padding steps are not read) and nil for a GRU. Forward keeps what
// Backward needs in ws and reads params, x, lens, node and att only. It
// panics on a workspace of another GRU, a length outside [0, T], a node
// out of range or wrong lengths. h must not overlap the inputs.
func (g *GRU) Forward(ws *GRUWorkspace, params, x []float32, lens []int32, T int, node []int32, m int, att, h []float32) {
	nodes := g.check(ws, params, x, lens, T, node, m, att)
	checkLen("GRU.Forward", "h", h, m*T*g.Hidden)
	ws.m = -1
	H, h3 := g.Hidden, 3*g.Hidden
	rows := ws.plan(lens, T, node, m)
	wih, whh, bih, bhh := g.Params(params)
	xr := packSeqs(&ws.xc, x, lens, T, g.In, ws.off)
	// P (rows x 3H) = X (rows x In) · W_ihᵀ (In x 3H); the biases are added in the cell.
	gemm(ws.threads(), &ws.scratch, NoTrans, Trans, rows, h3, g.In, 1, xr, g.In, wih, g.In, 0, ws.p[:rows*h3], h3)
	for k := 0; k < 2*H; k++ {
		ws.brz[k] = bih[k] + bhh[k]
	}
	for t := 0; t < T && ws.active[t] > 0; t++ {
		g.forwardStep(ws, t, T, whh, bih[2*H:], bhh[2*H:], att, h)
	}
	for i := 0; i < m; i++ {
		l := seqLen(lens, node, i)
		clear(h[(i*T+l)*H : (i+1)*T*H])
	}
	ws.m, ws.nodes, ws.T, ws.rows = m, nodes, T, rows
}

// forwardStep runs step t for the active[t] running outputs: one Gemm
// for H_{t-1}·W_hhᵀ, then the cells, which write h_t to h and, for the
// outputs still running at t+1, to step t+1's block of ws.hin.
func (g *GRU) forwardStep(ws *GRUWorkspace, t, T int, whh, bin, bhn, att, h []float32) {
	H, h3, h4 := g.Hidden, 3*g.Hidden, 4*g.Hidden
	nt, next := ws.active[t], ws.active[t+1]
	b := ws.base[t]
	hin := ws.hin[b*H : (b+nt)*H]
	gg := ws.g[:nt*h3]
	if t == 0 {
		clear(hin)
		clear(gg)
	} else {
		gemm(ws.threads(), &ws.scratch, NoTrans, Trans, nt, h3, H, 1, hin, H, whh, H, 0, gg, h3)
	}
	hnext := ws.hin[(b+nt)*H : (b+nt+next)*H]
	gates := ws.gates[b*h4 : (b+nt)*h4]
	for k := 0; k < nt; k++ {
		i := int(ws.perm[k])
		a := float32(1)
		if att != nil {
			a = att[i*T+t]
		}
		pr := int(ws.prow[k]) + t
		hrow := h[(i*T+t)*H : (i*T+t+1)*H]
		gruCell(hrow, gates[k*h4:(k+1)*h4], hin[k*H:(k+1)*H], gg[k*h3:(k+1)*h3], ws.p[pr*h3:(pr+1)*h3], ws.brz, bin, bhn, a)
		if k < next {
			copy(hnext[k*H:(k+1)*H], hrow)
		}
	}
}

// gruCell computes one output's step: h (H) from h_{t-1} (hp, H), gh =
// W_hh·h_{t-1} (3H), gi = W_ih·x_t (3H), the biases (brz = b_ir+b_hr ++
// b_iz+b_hz, bin = b_in, bhn = b_hn) and the attention score a, and keeps
// r, z, n and W_hn·h_{t-1} + b_hn in gates (4H). The gates go through
// tanhSlice a row at a time (σ(x) = 0.5 + 0.5·tanh(x/2)), which keeps the
// approximation's loop free of calls.
func gruCell(h, gates, hp, gh, gi, brz, bin, bhn []float32, a float32) {
	H := len(h)
	hp, bin, bhn = hp[:H], bin[:H], bhn[:H]
	rz, gn, ghb := gates[:2*H], gates[2*H:][:H], gates[3*H:][:H]
	girz, ghrz, brz := gi[:len(rz)], gh[:len(rz)], brz[:len(rz)]
	for o := range rz {
		rz[o] = 0.5 * (girz[o] + ghrz[o] + brz[o])
	}
	tanhSlice(rz)
	gr, gz := rz[:H], rz[H:][:H]
	gin, ghn := gi[2*H:][:H], gh[2*H:][:H]
	for o := vecGRUGates(gates, gh, gi, bin, bhn); o < H; o++ { // SIMD where it runs, then the rest
		r := 0.5 + 0.5*gr[o]
		gz[o] = 0.5 + 0.5*gz[o]
		hn := ghn[o] + bhn[o]
		gr[o], ghb[o] = r, hn
		gn[o] = gin[o] + bin[o] + r*hn
	}
	tanhSlice(gn)
	for o := vecGRUState(h, hp, gz, gn, a); o < H; o++ {
		h[o] = hp[o] + a*(1-gz[o])*(gn[o]-hp[o])
	}
}

// Backward computes the gradients of a loss after Forward(ws, params, x,
// lens, T, node, m, att, h) with the same arguments, given dh (m x T x
// H), the gradient of the loss with respect to every state h_t that
// Forward wrote (the caller puts the gradient of what it reads: only the
// last valid step of each output, say, or every step for DIEN's auxiliary
// loss; the padding steps' entries are not read). Going back in time
// with δ_t = dh_t + (the part of dLoss/dh_t that flows from step t+1),
// u = a·(1 − z) and the gates of Forward:
//
//	dn = δ ⊙ u,  du = δ ⊙ (n − h_{t-1}),  dz = −a·du,  da_t = Σ_o du ⊙ (1 − z)
//	dĝ_n = dn ⊙ (1 − n²),  dĝ_r = dĝ_n ⊙ (W_hn·h_{t-1} + b_hn) ⊙ r(1 − r),  dĝ_z = dz ⊙ z(1 − z)
//	dP_t = [dĝ_r, dĝ_z, dĝ_n]        (the gradient of W_ih·x_t + b_ih)
//	dG_t = [dĝ_r, dĝ_z, r ⊙ dĝ_n]    (the gradient of W_hh·h_{t-1} + b_hh)
//	dLoss/dh_{t-1} (from step t) = δ ⊙ (1 − u) + dG_t·W_hh
//
// and then dW_hh = Σ_t dG_tᵀ·H_{t-1}, db_hh = Σ dG, and, with dP summed
// over the outputs that share a node, dW_ih = dPᵀ·X, db_ih = Σ dP and
// dx = dP·W_ih. It OVERWRITES grad (NumParams()) with dLoss/dparams, dx
// (nodes x T x In, 0 at the padding steps) with dLoss/dx unless dx is
// nil, and for an AUGRU datt (m x T, 0 at the padding steps) with
// dLoss/datt unless datt is nil; a GRU takes datt nil. The outputs must
// not overlap the inputs or each other. It panics if the last Forward on
// ws had another shape, or on wrong lengths.
func (g *GRU) Backward(ws *GRUWorkspace, params, x []float32, lens []int32, T int, node []int32, m int, att, dh, grad, dx, datt []float32) {
	nodes := g.check(ws, params, x, lens, T, node, m, att)
	if ws.m != m || ws.nodes != nodes || ws.T != T {
		panic(fmt.Sprintf("densenet: GRU.Backward with %d outputs, %d nodes, T = %d after Forward with %d, %d, %d", m, nodes, T, ws.m, ws.nodes, ws.T))
	}
	H, h3 := g.Hidden, 3*g.Hidden
	checkLen("GRU.Backward", "dh", dh, m*T*H)
	g.checkParams("grad", grad)
	if dx != nil {
		checkLen("GRU.Backward", "dx", dx, nodes*T*g.In)
	}
	if datt != nil {
		if !g.Attn {
			panic("densenet: GRU.Backward: datt for a GRU without attention")
		}
		checkLen("GRU.Backward", "datt", datt, m*T)
		clear(datt)
	}
	wih, whh, _, _ := g.Params(params)
	gwih, gwhh, gbih, gbhh := g.Params(grad)
	rows, R := ws.rows, ws.base[T]
	clear(ws.dp[:rows*h3])
	for t := T - 1; t >= 0; t-- {
		if ws.active[t] > 0 {
			g.backwardStep(ws, t, T, whh, att, dh, datt)
		}
	}
	threads := ws.threads()
	b1 := min(ws.base[min(1, T)], R) // step 0's rows have h_{-1} = 0: no part in dW_hh
	// dW_hh (3H x H) = dGᵀ (3H x R') · H_prev (R' x H) over the steps t >= 1
	gemm(threads, &ws.scratch, Trans, NoTrans, h3, H, R-b1, 1, ws.dg[b1*h3:R*h3], h3, ws.hin[b1*H:R*H], H, 0, gwhh, H)
	ColSums(gbhh, ws.dg[:R*h3])
	dp := ws.dp[:rows*h3]
	xr := packedRows(ws.xc, x, rows, nodes, T, g.In)
	// dW_ih (3H x In) = dPᵀ (3H x rows) · X (rows x In)
	gemm(threads, &ws.scratch, Trans, NoTrans, h3, g.In, rows, 1, dp, h3, xr, g.In, 0, gwih, g.In)
	ColSums(gbih, dp)
	if dx != nil {
		dxr := packedRows(ws.dxc, dx, rows, nodes, T, g.In)
		// dX (rows x In) = dP (rows x 3H) · W_ih (3H x In)
		gemm(threads, &ws.scratch, NoTrans, NoTrans, rows, g.In, h3, 1, dp, h3, wih, g.In, 0, dxr, g.In)
		if rows != nodes*T {
			unpackSeqs(dx, dxr, lens, T, g.In, ws.off, false)
		}
	}
}

// backwardStep runs step t back for its active[t] running outputs: the
// cells' gradients (into ws.dg, ws.dp and datt), then one Gemm that adds
// dG_t·W_hh to ws.carry, which becomes dLoss/dh_{t-1}.
func (g *GRU) backwardStep(ws *GRUWorkspace, t, T int, whh, att, dh, datt []float32) {
	H, h3, h4 := g.Hidden, 3*g.Hidden, 4*g.Hidden
	nt, next := ws.active[t], ws.active[t+1]
	b := ws.base[t]
	clear(ws.carry[next*H : nt*H]) // these outputs end at step t
	dg := ws.dg[b*h3 : (b+nt)*h3]
	for k := 0; k < nt; k++ {
		i := int(ws.perm[k])
		a := float32(1)
		if att != nil {
			a = att[i*T+t]
		}
		pr := int(ws.prow[k]) + t
		da := gruCellBack(ws.carry[k*H:(k+1)*H], dh[(i*T+t)*H:(i*T+t+1)*H], ws.hin[(b+k)*H:(b+k+1)*H],
			ws.gates[(b+k)*h4:(b+k+1)*h4], dg[k*h3:(k+1)*h3], ws.dp[pr*h3:(pr+1)*h3], a)
		if datt != nil {
			datt[i*T+t] = da
		}
	}
	if t > 0 {
		// dLoss/dh_{t-1} (nt x H) += dG_t (nt x 3H) · W_hh (3H x H)
		gemm(ws.threads(), &ws.scratch, NoTrans, NoTrans, nt, H, h3, 1, dg, h3, whh, H, 1, ws.carry[:nt*H], H)
	}
}

// gruCellBack is gruCell's adjoint for one output's step. c holds the
// gradient from step t+1 (H) and gets δ ⊙ (1 − u), the direct part of
// dLoss/dh_{t-1}; dht is the caller's dh_t; it writes dG (3H), adds dP to
// dp (3H) and returns dLoss/da.
func gruCellBack(c, dht, hp, gates, dg, dp []float32, a float32) float32 {
	H := len(c)
	dht, hp = dht[:H], hp[:H]
	gr, gz, gn, ghb := gates[:H], gates[H:][:H], gates[2*H:][:H], gates[3*H:][:H]
	dgr, dgz, dgn := dg[:H], dg[H:][:H], dg[2*H:][:H]
	dpr, dpz, dpn := dp[:H], dp[H:][:H], dp[2*H:][:H]
	o0, da := vecGRUBack(c, dht, hp, gates, dg, dp, a) // SIMD where it runs, then the rest
	for o := o0; o < H; o++ {
		r, z, n := gr[o], gz[o], gn[o]
		d := c[o] + dht[o]
		u := a * (1 - z)
		du := d * (n - hp[o])
		da += du * (1 - z)
		c[o] = d * (1 - u)
		dn := d * u * (1 - n*n)
		dr := dn * ghb[o] * r * (1 - r)
		dz := -a * du * z * (1 - z)
		dgr[o], dgz[o], dgn[o] = dr, dz, dn*r
		dpr[o] += dr
		dpz[o] += dz
		dpn[o] += dn
	}
	return da
}

// check panics unless the arguments of a pass fit g and ws; it returns
// the number of input sequences.
func (g *GRU) check(ws *GRUWorkspace, params, x []float32, lens []int32, T int, node []int32, m int, att []float32) int {
	if ws.gru != g {
		panic("densenet: workspace belongs to another GRU")
	}
	g.checkParams("params", params)
	nodes := checkSeqs("GRU", lens, T, node, m)
	checkLen("GRU", "x", x, nodes*T*g.In)
	if g.Attn {
		checkLen("GRU", "att", att, m*T)
	} else if att != nil {
		panic("densenet: GRU: att for a GRU without attention")
	}
	return nodes
}

// plan sorts the outputs by decreasing length into ws.perm and sets
// ws.active, ws.base, ws.off and ws.prow (see GRUWorkspace), growing ws
// to fit; it returns the number of valid input steps.
func (ws *GRUWorkspace) plan(lens []int32, T int, node []int32, m int) (rows int) {
	R := 0
	for _, l := range lens {
		rows += int(l)
	}
	for i := 0; i < m; i++ {
		R += seqLen(lens, node, i)
	}
	ws.grow(m, len(lens), T, rows, R)
	ws.active, ws.base = ws.active[:T+1], ws.base[:T+1]
	sortByLen(ws.perm[:m], ws.active, ws.cnt[:T+1], lens, node)
	ws.base[0] = 0
	for t := 1; t <= T; t++ {
		ws.base[t] = ws.base[t-1] + ws.active[t-1]
	}
	ws.off = ws.off[:len(lens)]
	rowsBefore := 0
	for j, l := range lens {
		ws.off[j] = int32(rowsBefore)
		rowsBefore += int(l)
	}
	for k, i := range ws.perm[:m] {
		ws.prow[k] = ws.off[nodeOf(node, int(i))]
	}
	return rows
}

// sortByLen sets perm (m entries) to the outputs 0 .. m-1 by decreasing
// length, ties in increasing order, and active[t] (t = 0 .. T) to the
// number of outputs longer than t. cnt has T+1 entries of scratch.
func sortByLen(perm []int32, active, cnt []int, lens, node []int32) {
	T := len(active) - 1
	clear(cnt)
	for i := range perm {
		cnt[seqLen(lens, node, i)]++
	}
	// active[t] = #{i : len_i > t}; outputs of length l go from active[l].
	active[T] = 0
	for t := T - 1; t >= 0; t-- {
		active[t] = active[t+1] + cnt[t+1]
	}
	for l := 0; l <= T; l++ {
		if l < T {
			cnt[l] = active[l]
		} else {
			cnt[l] = 0
		}
	}
	for i := range perm {
		l := seqLen(lens, node, i)
		perm[cnt[l]] = int32(i)
		cnt[l]++
	}
}

// nodeOf returns output i's input sequence.
func nodeOf(node []int32, i int) int {
	if node == nil {
		return i
	}
	return int(node[i])
}

// seqLen returns the length of output i's input sequence.
func seqLen(lens, node []int32, i int) int { return int(lens[nodeOf(node, i)]) }

// checkSeqs panics unless lens (the nodes' lengths) are in [0, T] and node
// maps m outputs to nodes (or is nil with m = len(lens)); it returns the
// number of nodes.
func checkSeqs(block string, lens []int32, T int, node []int32, m int) int {
	if T < 0 || m < 0 {
		panic(fmt.Sprintf("densenet: %s: T = %d, m = %d", block, T, m))
	}
	nodes := len(lens)
	for j, l := range lens {
		if l < 0 || int(l) > T {
			panic(fmt.Sprintf("densenet: %s: lens[%d] = %d outside [0, %d]", block, j, l, T))
		}
	}
	if node == nil {
		if m != nodes {
			panic(fmt.Sprintf("densenet: %s: m = %d without node mapping, want len(lens) = %d", block, m, nodes))
		}
		return nodes
	}
	if len(node) != m {
		panic(fmt.Sprintf("densenet: %s: len(node) = %d, want m = %d", block, len(node), m))
	}
	for i, j := range node {
		if j < 0 || int(j) >= nodes {
			panic(fmt.Sprintf("densenet: %s: node[%d] = %d outside [0, %d)", block, i, j, nodes))
		}
	}
	return nodes
}

func checkLen(fn, name string, s []float32, n int) {
	if len(s) != n {
		panic(fmt.Sprintf("densenet: %s: len(%s) = %d, want %d", fn, name, len(s), n))
	}
}

// packSeqs returns the valid steps of the node-major sequences src
// (len(lens) sequences of T steps of width values, sequence j's first
// lens[j] steps valid) as consecutive rows, sequence after sequence, the
// rows of sequence j starting at off[j] (which the caller has set). When
// no step is padding that is src itself; otherwise the rows are copied
// into *buf.
func packSeqs(buf *[]float32, src []float32, lens []int32, T, width int, off []int32) []float32 {
	rows := 0
	for _, l := range lens {
		rows += int(l)
	}
	if rows == len(lens)*T {
		return src
	}
	dst := (*buf)[:rows*width]
	for j, l := range lens {
		n := int(l) * width
		copy(dst[int(off[j])*width:][:n], src[j*T*width:][:n])
	}
	return dst
}

// packedRows returns the packed rows of a node-major tensor whose padded
// form is full: that itself when no step is padding, else buf's first
// rows.
func packedRows(buf, full []float32, rows, nodes, T, width int) []float32 {
	if rows == nodes*T {
		return full
	}
	return buf[:rows*width]
}

// unpackSeqs is packSeqs' adjoint: it writes (accumulate false; the
// padding steps get 0) or adds (accumulate true; the padding is left
// alone) the packed rows to their steps of the node-major dst.
func unpackSeqs(dst, rows []float32, lens []int32, T, width int, off []int32, accumulate bool) {
	for j, l := range lens {
		n := int(l) * width
		d, s := dst[j*T*width:(j+1)*T*width], rows[int(off[j])*width:][:n]
		if accumulate {
			Axpy(d[:n], 1, s)
		} else {
			copy(d, s)
			clear(d[n:])
		}
	}
}

// growFloats makes *buf at least n long, keeping its capacity when that
// is enough.
func growFloats(buf *[]float32, n int) {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	*buf = (*buf)[:cap(*buf)]
}

func growInt32(buf *[]int32, n int) {
	if cap(*buf) < n {
		*buf = make([]int32, n)
	}
	*buf = (*buf)[:cap(*buf)]
}

func growInts(buf *[]int, n int) {
	if cap(*buf) < n {
		*buf = make([]int, n)
	}
	*buf = (*buf)[:cap(*buf)]
}

// tanh32 returns tanh(x) to within 4e-7 (absolute) for every float32 x,
// in [-1, 1], and NaN for NaN: the rational approximation of Eigen's
// generic_fast_tanh_float (a degree 13/6 minimax fit on [-9, 9], outside
// which tanh is within 3e-8 of ±1). tanhSlice, the same on a slice, is
// the fast form: about 4 ns a value on the machine it was measured on
// (an AMD EPYC VM), against 23 for float32(math.Tanh(float64(x))) and 9
// for a sigmoid on float64 math.Exp.
func tanh32(x float32) float32 {
	s := [1]float32{x}
	tanhSlice(s[:])
	return s[0]
}

// tanhSlice sets every x[i] to tanh32(x[i]). The polynomials are
// evaluated in Estrin's scheme, two values at a time: the loop is bound by
// the latency of one evaluation, which this shortens (in a loop of its
// own it measured 1.3 to 1.8 times as fast as Horner's rule).
func tanhSlice(x []float32) {
	x = x[vecTanh(x):] // the first values by SIMD where it runs
	for len(x) >= 2 {
		x[0], x[1] = tanhRational(x[0]), tanhRational(x[1])
		x = x[2:]
	}
	if len(x) == 1 {
		x[0] = tanhRational(x[0])
	}
}

// tanhRational is tanh32's approximation; tanhSlice's loop inlines it.
// The clamps are branches, not min and max, which cost more with their
// NaN rules; a NaN fails every comparison and comes out as NaN.
func tanhRational(v float32) float32 {
	if v > 9 {
		v = 9
	} else if v < -9 {
		v = -9
	}
	x2 := v * v
	x4 := x2 * x2
	p := (4.89352455891786e-03 + 6.37261928875436e-04*x2 + (1.48572235717979e-05+5.12229709037114e-08*x2)*x4) +
		(-8.60467152213735e-11+2.00018790482477e-13*x2-2.76076847742355e-16*x4)*(x4*x4)
	q := 4.89352518554385e-03 + 2.26843463243900e-03*x2 + (1.18534705686654e-04+1.19825839466702e-06*x2)*x4
	r := v * p / q
	if r > 1 { // the fit exceeds 1 by an ulp near 8.09
		r = 1
	} else if r < -1 {
		r = -1
	}
	return r
}

// sigmoid32 returns 1/(1+exp(-x)) to within 3e-7 (absolute) as
// 0.5 + 0.5·tanh32(x/2): absolute, not relative, accuracy, which is what
// a gate needs (σ(-40) comes out as 3e-8, not 4e-18).
func sigmoid32(x float32) float32 { return 0.5 + 0.5*tanh32(0.5*x) }
