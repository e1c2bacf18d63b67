package densenet

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// ErrBadSizes is returned by NewMLP and NewMLPWith for layer sizes that do
// not describe a network they can build.
var ErrBadSizes = errors.New("densenet: bad layer sizes")

// MLPOptions choose the variants of an MLP's input and output. The zero
// value is the CTR network of NewMLP: the input goes straight into the
// first layer and the last layer is linear (a logit).
type MLPOptions struct {
	// InputBias adds a bias b_in (Sizes[0] values) and a ReLU to the input
	// before the first layer: a_0 = ReLU(x + b_in). With an embedding sum
	// as x this is a sparse input layer, the first layer of SLIDE's
	// network (PyTorch's EmbeddingBag(sum) + bias + ReLU). b_in comes
	// first in the parameter vector (see InputBiasParams), and an MLP
	// with InputBias may have no weight layer at all (one size: the
	// output is a_0). The default value is false: a_0 = x.
	InputBias bool
	// OutputReLU applies a ReLU to the output of the last layer, as to
	// the hidden layers, so that the output is a hidden activation for
	// another layer to read (SLIDE's output layer, say). It does nothing
	// without weight layers. The default value is false: the last layer
	// is linear, z = W·a + b.
	OutputReLU bool
}

// MLP describes a fully connected network: Sizes[0] inputs, hidden layers
// with ReLU, and a last layer of width Sizes[len(Sizes)-1], linear unless
// the MLPOptions say otherwise. NewMLP's networks end in one logit.
//
// Layer l (l = 0 .. len(Sizes)-2) maps in = Sizes[l] values to out =
// Sizes[l+1] values: z = W_l·a + b_l. The parameters of all layers live in
// one flat []float32 owned by the caller, laid out layer by layer, W_l
// then b_l, with W_l row-major out x in (W_l[o*in+i] weighs input i of
// output o, as PyTorch's nn.Linear.weight), after the input bias b_in if
// there is one. See LayerParams and InputBiasParams.
//
// An MLP is immutable after NewMLP or NewMLPWith and may be shared by any
// number of goroutines.
type MLP struct {
	// Sizes are the layer widths. They must not be modified.
	Sizes []int

	opts      MLPOptions
	wOff      []int // wOff[l] is the offset of W_l in the parameter vector
	bOff      []int // bOff[l] is the offset of b_l
	numParams int
	maxDelta  int // widest gradient kept in Workspace.delta, 0 if none
}

// NewMLP returns the network with the given layer widths, ending in one
// logit: NewMLPWith(sizes, MLPOptions{}) with a last size of 1. It is an
// error (ErrBadSizes) to give fewer than two sizes, a size that is not
// positive, or a last size other than 1. sizes is copied.
func NewMLP(sizes []int) (*MLP, error) {
	m, err := NewMLPWith(sizes, MLPOptions{})
	if err != nil {
		return nil, err
	}
	if last := sizes[len(sizes)-1]; last != 1 {
		return nil, fmt.Errorf("%w: last size is %d, want 1", ErrBadSizes, last)
	}
	return m, nil
}

// NewMLPWith returns the network with the given layer widths and options.
// It is an error (ErrBadSizes) to give a size that is not positive, or
// fewer than two sizes (fewer than one with opts.InputBias). The last size
// is the width of the output. sizes is copied.
//
// For example, the dense part of a SLIDE network with embedding dim 128
// and one hidden layer of 256 units, whose output feeds the SLIDE layer:
//
//	m, err := NewMLPWith([]int{128, 256}, MLPOptions{InputBias: true, OutputReLU: true})
func NewMLPWith(sizes []int, opts MLPOptions) (*MLP, error) {
	minSizes := 2
	if opts.InputBias {
		minSizes = 1
	}
	if len(sizes) < minSizes {
		return nil, fmt.Errorf("%w: need at least %d sizes, got %d", ErrBadSizes, minSizes, len(sizes))
	}
	for i, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("%w: size %d is %d, want > 0", ErrBadSizes, i, s)
		}
	}
	layers := len(sizes) - 1
	m := &MLP{
		Sizes: append([]int(nil), sizes...),
		opts:  opts,
		wOff:  make([]int, layers),
		bOff:  make([]int, layers),
	}
	off := 0
	if opts.InputBias {
		off = sizes[0] // b_in
		m.maxDelta = sizes[0]
	}
	for l := 0; l < layers; l++ {
		in, out := sizes[l], sizes[l+1]
		m.wOff[l] = off
		off += out * in
		m.bOff[l] = off
		off += out
		if m.reluAfter(l) {
			m.maxDelta = max(m.maxDelta, out)
		}
	}
	m.numParams = off
	return m, nil
}

// Options returns the options m was made with.
func (m *MLP) Options() MLPOptions { return m.opts }

// NumParams returns the length of the parameter vector (and of the
// gradient vector).
func (m *MLP) NumParams() int { return m.numParams }

// InputWidth returns Sizes[0], the number of inputs per sample.
func (m *MLP) InputWidth() int { return m.Sizes[0] }

// OutputWidth returns the last size, the number of outputs per sample (1
// for NewMLP's networks: the logit).
func (m *MLP) OutputWidth() int { return m.Sizes[len(m.Sizes)-1] }

// NumLayers returns the number of weight layers, len(Sizes)-1.
func (m *MLP) NumLayers() int { return len(m.Sizes) - 1 }

// reluAfter reports whether layer l's output goes through a ReLU (and is
// kept in Workspace.acts[l]): every layer but the last, and the last with
// OutputReLU.
func (m *MLP) reluAfter(l int) bool { return l < m.NumLayers()-1 || m.opts.OutputReLU }

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

// InputBiasParams returns the input bias b_in (Sizes[0] values, the first
// of the vector) as a subslice of params, which may be a parameter or a
// gradient vector of length NumParams, or nil if m has no input bias. It
// panics if len(params) != NumParams().
func (m *MLP) InputBiasParams(params []float32) []float32 {
	m.checkParams("params", params)
	if !m.opts.InputBias {
		return nil
	}
	return params[:m.Sizes[0]:m.Sizes[0]]
}

// Init fills params with the default initialisation of PyTorch's
// nn.Linear: every weight and bias of layer l uniform in
// [-1/sqrt(Sizes[l]), 1/sqrt(Sizes[l])]; the input bias, if any, is 0.
// The values depend only on seed (a SplitMix64 stream, drawn layer by
// layer, W_l then b_l), not on the Go version or the platform, so the
// input bias does not change the layers' values. It panics if
// len(params) != NumParams().
func (m *MLP) Init(params []float32, seed uint64) {
	m.checkParams("params", params)
	clear(m.InputBiasParams(params))
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
// later passes allocate nothing; see Gemm for its helper goroutines).
// It belongs to the MLP that made it and is not safe for concurrent use;
// give each goroutine its own.
type Workspace struct {
	// Threads caps the goroutines one matrix product may use. The default
	// value is 0, meaning runtime.GOMAXPROCS(0); 1 runs everything on the
	// calling goroutine (for callers that run one Workspace per core).
	Threads int

	mlp      *MLP
	maxBatch int
	in       []float32    // a_0 = ReLU(x + b_in) with InputBias, maxBatch x Sizes[0]; else nil
	acts     [][]float32  // acts[l]: output of layer l after its ReLU (if reluAfter(l)), maxBatch x Sizes[l+1]
	delta    [2][]float32 // ping-pong gradients: delta[l%2] w.r.t. layer l's input, maxBatch x maxDelta
	n        int          // batch size of the last Forward, -1 before the first
	scratch  []float32    // the calling goroutine's GEMM packing buffer, grown on first use

	// The multi-prefix-tree passes (tree.go). ForwardTree sets n to
	// treeDone, which Backward rejects and Forward overwrites first.
	treeN     int         // samples of the last completed ForwardTree
	treeCols  []int       // Tree.Cols of that ForwardTree
	treeCount []int       // Tree.Count of that ForwardTree
	treeAnc   [][]int32   // treeAnc[k][s]: level-k ancestor of sample s (k >= 1), maxBatch each
	treeBuf   [][]float32 // treeBuf[k] (k >= 1): Y_k in ForwardTree, δ_k in BackwardTree, maxBatch x Sizes[1]
	treeIn    [][]float32 // with InputBias, treeIn[k]: ReLU(X_k + b_in's level-k columns), grown to fit
	treeDIn   [][]float32 // with InputBias, treeDIn[k]: dLoss/dX_k when the caller's dX[k] is nil, grown to fit
}

// NewWorkspace returns a workspace for batches of up to maxBatch samples.
// It panics if maxBatch is negative.
func (m *MLP) NewWorkspace(maxBatch int) *Workspace {
	if maxBatch < 0 {
		panic("densenet: negative maxBatch")
	}
	ws := &Workspace{mlp: m, maxBatch: maxBatch, n: -1}
	if m.opts.InputBias {
		ws.in = make([]float32, maxBatch*m.Sizes[0])
	}
	ws.acts = make([][]float32, m.NumLayers())
	for l := range ws.acts {
		if m.reluAfter(l) {
			ws.acts[l] = make([]float32, maxBatch*m.Sizes[l+1])
		}
	}
	for i := range ws.delta {
		ws.delta[i] = make([]float32, maxBatch*m.maxDelta)
	}
	return ws
}

func (ws *Workspace) threads() int {
	if ws.Threads > 0 {
		return ws.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Forward computes the outputs of a batch of n samples. x is n x
// InputWidth() row-major (len(x) == n*InputWidth()), out is n x
// OutputWidth() (the n logits of a NewMLP network), params has length
// NumParams(). It keeps the activations in ws for Backward and reads
// params and x only. It panics on a workspace of another MLP, n out of
// [0, maxBatch], or wrong lengths.
func (m *MLP) Forward(ws *Workspace, params, x []float32, n int, out []float32) {
	m.checkBatch(ws, params, x, n)
	m.checkOut("out", out, n)
	ws.n = -1 // until this Forward completes
	threads := ws.threads()
	in := x
	if m.opts.InputBias {
		in = ws.in[:n*m.Sizes[0]]
		AddBiasReLUTo(in, x, m.InputBiasParams(params))
	}
	if m.NumLayers() == 0 {
		copy(out, in)
		ws.n = n
		return
	}
	inW, outW := m.Sizes[0], m.Sizes[1]
	w, b := m.LayerParams(params, 0)
	z := m.layerOut(ws, 0, n, out)
	// z (n x outW) = in (n x inW) · W_0ᵀ (inW x outW)
	gemm(threads, &ws.scratch, NoTrans, Trans, n, outW, inW, 1, in, inW, w, inW, 0, z, outW)
	m.activate(0, z, b)
	m.forwardUpper(ws, threads, params, n, out)
	ws.n = n
}

// Backward computes the gradients of a loss after Forward(ws, params, x,
// n, ...) with the same ws, params, x and n, given dout (n x
// OutputWidth(): for a NewMLP network the n dlogits), the gradient of the
// loss with respect to each output. It OVERWRITES grad (length
// NumParams(), laid out as params) with dLoss/dparams, and dx (n x
// InputWidth()) with dLoss/dx unless dx is nil. grad and dx must not
// overlap params, x, dout or each other. It panics if Forward was not run
// on ws with this n, or on wrong lengths.
func (m *MLP) Backward(ws *Workspace, params, x []float32, n int, dout, grad, dx []float32) {
	m.checkBatch(ws, params, x, n)
	if ws.n != n {
		panic(fmt.Sprintf("densenet: Backward with n = %d after Forward with n = %d", n, ws.n))
	}
	m.checkOut("dout", dout, n)
	m.checkParams("grad", grad)
	if dx != nil && len(dx) != n*m.InputWidth() {
		panic(fmt.Sprintf("densenet: len(dx) = %d, want n*InputWidth() = %d", len(dx), n*m.InputWidth()))
	}
	threads := ws.threads()
	inW := m.Sizes[0]
	// da is dLoss/da_0, where a_0 is the first layer's input (x itself
	// without InputBias); it goes into dx, or a buffer of ws when dx is
	// nil and InputBias needs it for db_in.
	da := dx
	if da == nil && m.opts.InputBias {
		da = ws.delta[0][:n*inW]
	}
	delta := m.backwardUpper(ws, threads, params, n, dout, grad) // dLoss/dz_0, or dLoss/da_0 without layers
	if m.NumLayers() > 0 {
		outW := m.Sizes[1]
		in := x
		if m.opts.InputBias {
			in = ws.in[:n*inW]
		}
		w, _ := m.LayerParams(params, 0)
		gw, gb := m.LayerParams(grad, 0)
		// dW_0 (outW x inW) = δᵀ (outW x n) · in (n x inW)
		gemm(threads, &ws.scratch, Trans, NoTrans, outW, inW, n, 1, delta, outW, in, inW, 0, gw, inW)
		ColSums(gb, delta)
		if da != nil {
			// dLoss/da_0 (n x inW) = δ (n x outW) · W_0 (outW x inW)
			gemm(threads, &ws.scratch, NoTrans, NoTrans, n, inW, outW, 1, delta, outW, w, inW, 0, da, inW)
			delta = da
		}
	}
	if m.opts.InputBias {
		// dLoss/dx = dLoss/da_0 through the ReLU; db_in sums it.
		ReLUBackward(da, delta, ws.in[:n*inW])
		ColSums(m.InputBiasParams(grad), da)
	}
}

// layerOut returns where layer l writes its n outputs: ws.acts[l] when a
// ReLU follows (the activations Backward needs), else out.
func (m *MLP) layerOut(ws *Workspace, l, n int, out []float32) []float32 {
	if m.reluAfter(l) {
		return ws.acts[l][:n*m.Sizes[l+1]]
	}
	return out
}

// activate adds layer l's bias b to its outputs z, with the ReLU if one
// follows layer l.
func (m *MLP) activate(l int, z, b []float32) {
	if m.reluAfter(l) {
		AddBiasReLU(z, b)
	} else {
		AddBias(z, b)
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

// checkOut panics unless out holds the outputs of n samples.
func (m *MLP) checkOut(name string, out []float32, n int) {
	if len(out) != n*m.OutputWidth() {
		panic(fmt.Sprintf("densenet: len(%s) = %d, want n*OutputWidth() = %d", name, len(out), n*m.OutputWidth()))
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
