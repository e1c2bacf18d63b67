package densenet

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// ErrBadSizes is returned by NewMLP for layer sizes that do not describe a
// network with one logit output.
var ErrBadSizes = errors.New("densenet: bad layer sizes")

// MLP describes a fully connected network: Sizes[0] inputs, hidden layers
// with ReLU, and a last layer of size 1 without activation (a logit).
//
// Layer l (l = 0 .. len(Sizes)-2) maps in = Sizes[l] values to out =
// Sizes[l+1] values: z = W_l·a + b_l. The parameters of all layers live in
// one flat []float32 owned by the caller, laid out layer by layer, W_l
// then b_l, with W_l row-major out x in (W_l[o*in+i] weighs input i of
// output o, as PyTorch's nn.Linear.weight). See LayerParams.
//
// An MLP is immutable after NewMLP and may be shared by any number of
// goroutines.
type MLP struct {
	// Sizes are the layer widths. They must not be modified.
	Sizes []int

	wOff      []int // wOff[l] is the offset of W_l in the parameter vector
	bOff      []int // bOff[l] is the offset of b_l
	numParams int
	maxHidden int // widest hidden layer, 0 without hidden layers
}

// NewMLP returns the network with the given layer widths. It is an error
// (ErrBadSizes) to give fewer than two sizes, a size that is not positive,
// or a last size other than 1. sizes is copied.
func NewMLP(sizes []int) (*MLP, error) {
	if len(sizes) < 2 {
		return nil, fmt.Errorf("%w: need at least 2 sizes, got %d", ErrBadSizes, len(sizes))
	}
	for i, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("%w: size %d is %d, want > 0", ErrBadSizes, i, s)
		}
	}
	if last := sizes[len(sizes)-1]; last != 1 {
		return nil, fmt.Errorf("%w: last size is %d, want 1", ErrBadSizes, last)
	}
	layers := len(sizes) - 1
	m := &MLP{
		Sizes: append([]int(nil), sizes...),
		wOff:  make([]int, layers),
		bOff:  make([]int, layers),
	}
	off := 0
	for l := 0; l < layers; l++ {
		in, out := sizes[l], sizes[l+1]
		m.wOff[l] = off
		off += out * in
		m.bOff[l] = off
		off += out
		if l < layers-1 {
			m.maxHidden = max(m.maxHidden, out)
		}
	}
	m.numParams = off
	return m, nil
}

// NumParams returns the length of the parameter vector (and of the
// gradient vector).
func (m *MLP) NumParams() int { return m.numParams }

// InputWidth returns Sizes[0], the number of inputs per sample.
func (m *MLP) InputWidth() int { return m.Sizes[0] }

// NumLayers returns the number of weight layers, len(Sizes)-1.
func (m *MLP) NumLayers() int { return len(m.Sizes) - 1 }

// LayerParams returns the weights (Sizes[l+1] x Sizes[l], row-major) and
// the bias (Sizes[l+1]) of layer l as subslices of params, which may be a
// parameter or a gradient vector of length NumParams. It panics if l is
// out of range or len(params) != NumParams().
func (m *MLP) LayerParams(params []float32, l int) (w, b []float32) {
	m.checkParams("params", params)
	in, out := m.Sizes[l], m.Sizes[l+1]
	return params[m.wOff[l] : m.wOff[l]+out*in : m.wOff[l]+out*in],
		params[m.bOff[l] : m.bOff[l]+out : m.bOff[l]+out]
}

// Init fills params with the default initialisation of PyTorch's
// nn.Linear: every weight and bias of layer l uniform in
// [-1/sqrt(Sizes[l]), 1/sqrt(Sizes[l])]. The values depend only on seed
// (a SplitMix64 stream), not on the Go version or the platform. It panics
// if len(params) != NumParams().
func (m *MLP) Init(params []float32, seed uint64) {
	m.checkParams("params", params)
	rng := splitMix64{state: seed}
	for l := 0; l < m.NumLayers(); l++ {
		bound := 1 / math.Sqrt(float64(m.Sizes[l]))
		w, b := m.LayerParams(params, l)
		for _, s := range [][]float32{w, b} {
			for i := range s {
				s[i] = float32((2*rng.float64() - 1) * bound)
			}
		}
	}
}

func (m *MLP) checkParams(name string, p []float32) {
	if len(p) != m.numParams {
		panic(fmt.Sprintf("densenet: len(%s) = %d, want NumParams() = %d", name, len(p), m.numParams))
	}
}

// Workspace holds the activations and scratch of one batch: what Forward
// keeps for Backward, and the packing buffers of the matrix products
// (allocated by the first Forward and Backward, reused afterwards, so that
// later passes allocate nothing but the goroutines of parallel products).
// It belongs to the MLP that made it and is not safe for concurrent use;
// give each goroutine its own.
type Workspace struct {
	// Threads caps the goroutines one matrix product may use. The default
	// value is 0, meaning runtime.GOMAXPROCS(0); 1 runs everything on the
	// calling goroutine (for callers that run one Workspace per core).
	Threads int

	mlp      *MLP
	maxBatch int
	acts     [][]float32  // acts[l]: output of hidden layer l after ReLU, maxBatch x Sizes[l+1]
	delta    [2][]float32 // ping-pong gradients w.r.t. hidden pre-activations, maxBatch x maxHidden
	n        int          // batch size of the last Forward, -1 before the first
	scratch  [][]float32  // GEMM packing buffers, one per goroutine, grown on first use

	// The multi-prefix-tree passes (tree.go). ForwardTree sets n to
	// treeDone, which Backward rejects and Forward overwrites first.
	treeN     int         // samples of the last completed ForwardTree
	treeCols  []int       // Tree.Cols of that ForwardTree
	treeCount []int       // Tree.Count of that ForwardTree
	treeAnc   [][]int32   // treeAnc[k][s]: level-k ancestor of sample s (k >= 1), maxBatch each
	treeBuf   [][]float32 // treeBuf[k] (k >= 1): Y_k in ForwardTree, δ_k in BackwardTree, maxBatch x Sizes[1]
}

// NewWorkspace returns a workspace for batches of up to maxBatch samples.
// It panics if maxBatch is negative.
func (m *MLP) NewWorkspace(maxBatch int) *Workspace {
	if maxBatch < 0 {
		panic("densenet: negative maxBatch")
	}
	ws := &Workspace{mlp: m, maxBatch: maxBatch, n: -1}
	ws.acts = make([][]float32, m.NumLayers()-1)
	for l := range ws.acts {
		ws.acts[l] = make([]float32, maxBatch*m.Sizes[l+1])
	}
	for i := range ws.delta {
		ws.delta[i] = make([]float32, maxBatch*m.maxHidden)
	}
	return ws
}

func (ws *Workspace) threads() int {
	if ws.Threads > 0 {
		return ws.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Forward computes the logits of a batch of n samples. x is n x
// InputWidth() row-major (len(x) == n*InputWidth()), logits has length n,
// params length NumParams(). It keeps the activations in ws for Backward
// and reads params and x only. It panics on a workspace of another MLP, n
// out of [0, maxBatch], or wrong lengths.
func (m *MLP) Forward(ws *Workspace, params, x []float32, n int, logits []float32) {
	m.checkBatch(ws, params, x, n)
	if len(logits) != n {
		panic(fmt.Sprintf("densenet: len(logits) = %d, want n = %d", len(logits), n))
	}
	ws.n = -1 // until this Forward completes
	threads := ws.threads()
	last := m.NumLayers() - 1
	in := x
	for l := 0; l <= last; l++ {
		inW, outW := m.Sizes[l], m.Sizes[l+1]
		w, b := m.LayerParams(params, l)
		out := logits
		if l < last {
			out = ws.acts[l][:n*outW]
		}
		// out (n x outW) = in (n x inW) · W_lᵀ (inW x outW)
		gemm(threads, &ws.scratch, NoTrans, Trans, n, outW, inW, 1, in, inW, w, inW, 0, out, outW)
		if l < last {
			AddBiasReLU(out, b)
		} else {
			AddBias(out, b)
		}
		in = out
	}
	ws.n = n
}

// Backward computes the gradients of a loss after Forward(ws, params, x,
// n, ...) with the same ws, params, x and n, given dlogits (length n),
// the gradient of the loss with respect to each logit. It OVERWRITES grad
// (length NumParams(), laid out as params) with dLoss/dparams, and dx
// (n x InputWidth()) with dLoss/dx unless dx is nil. grad and dx must not
// overlap params, x, dlogits or each other. It panics if Forward was not
// run on ws with this n, or on wrong lengths.
func (m *MLP) Backward(ws *Workspace, params, x []float32, n int, dlogits, grad, dx []float32) {
	m.checkBatch(ws, params, x, n)
	if ws.n != n {
		panic(fmt.Sprintf("densenet: Backward with n = %d after Forward with n = %d", n, ws.n))
	}
	if len(dlogits) != n {
		panic(fmt.Sprintf("densenet: len(dlogits) = %d, want n = %d", len(dlogits), n))
	}
	m.checkParams("grad", grad)
	if dx != nil && len(dx) != n*m.InputWidth() {
		panic(fmt.Sprintf("densenet: len(dx) = %d, want n*InputWidth() = %d", len(dx), n*m.InputWidth()))
	}
	threads := ws.threads()
	delta := dlogits // dLoss/dz of the current layer, n x outW
	for l := m.NumLayers() - 1; l >= 0; l-- {
		inW, outW := m.Sizes[l], m.Sizes[l+1]
		w, _ := m.LayerParams(params, l)
		gw, gb := m.LayerParams(grad, l)
		in := x
		if l > 0 {
			in = ws.acts[l-1][:n*inW]
		}
		// dW_l (outW x inW) = δᵀ (outW x n) · in (n x inW)
		gemm(threads, &ws.scratch, Trans, NoTrans, outW, inW, n, 1, delta, outW, in, inW, 0, gw, inW)
		ColSums(gb, delta)
		// dLoss/d(in) (n x inW) = δ (n x outW) · W_l (outW x inW)
		if l == 0 {
			if dx != nil {
				gemm(threads, &ws.scratch, NoTrans, NoTrans, n, inW, outW, 1, delta, outW, w, inW, 0, dx, inW)
			}
			break
		}
		next := ws.delta[l%2][:n*inW] // never the buffer delta is in
		gemm(threads, &ws.scratch, NoTrans, NoTrans, n, inW, outW, 1, delta, outW, w, inW, 0, next, inW)
		ReLUBackward(next, next, in)
		delta = next
	}
}

// checkBatch panics unless ws, params, x and n fit m.
func (m *MLP) checkBatch(ws *Workspace, params, x []float32, n int) {
	if ws.mlp != m {
		panic("densenet: workspace belongs to another MLP")
	}
	if n < 0 || n > ws.maxBatch {
		panic(fmt.Sprintf("densenet: batch of %d outside [0, %d]", n, ws.maxBatch))
	}
	m.checkParams("params", params)
	if len(x) != n*m.InputWidth() {
		panic(fmt.Sprintf("densenet: len(x) = %d, want n*InputWidth() = %d", len(x), n*m.InputWidth()))
	}
}

// splitMix64 is the SplitMix64 generator: small, fast and the same on
// every platform and Go version.
type splitMix64 struct{ state uint64 }

func (r *splitMix64) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float64 returns a uniform value in [0, 1).
func (r *splitMix64) float64() float64 {
	return float64(r.next()>>11) / (1 << 53)
}
