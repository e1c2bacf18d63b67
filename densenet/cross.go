package densenet

import (
	"fmt"
	"math"
	"runtime"
)

// Cross is a stack of DCN-V2 full-rank cross layers (Wang et al. 2021)
// over inputs of Width values: with x_0 the input,
//
//	u_l     = W_l·x_l + b_l
//	x_{l+1} = x_0 ⊙ u_l + x_l        (l = 0 .. Layers-1)
//
// and the output is x_L, of Width values, which in DCN-V2's stacked form
// feeds the MLP. Each layer holds a Width x Width weight matrix and a
// bias; the parameters are one flat []float32 of NumParams() values,
//
//	W_0 (Width x Width, row-major: W_0[o*Width+i]), b_0 (Width), W_1, b_1, ...
//
// (LayerParams gives the slices), and the gradient has the same layout.
// The products W_l·x_l run on Gemm, three per layer and batch (forward,
// weight and input gradients), so a cross layer costs about what an MLP
// layer of Width x Width costs.
//
// A cross layer cannot split by the nodes of a compressed batch: x_0 ⊙
// (W_l·x_l) multiplies every component of the whole input row (the
// sample's own fields and its user's) by a mix of all of them, so no part
// of x_1 depends on the user alone, and the layers above are polynomials
// of higher degree. (Only W_0's product splits, W_0·x_0 = Σ_levels
// W_0[:, level]·x_0[level], a saving of one product in 3L.) On a Tree the
// cross network therefore runs per sample: ExpandTree, Forward and
// Backward on the flat rows, ReduceTree for the nodes' gradients.
//
// A Cross is immutable and safe for concurrent use; a CrossWorkspace is
// not (see MLP for the protocol, which is the same: Forward, then
// Backward with the same workspace, parameters, input and n).
type Cross struct {
	// Width is the number of inputs and outputs; Layers the number of
	// cross layers. They must not be modified.
	Width, Layers int
}

// NewCross returns the stack of layers cross layers over width inputs. It
// is an error (ErrBadSizes) to give a width that is not positive or a
// negative number of layers; with 0 layers the output is the input.
func NewCross(width, layers int) (*Cross, error) {
	if width <= 0 || layers < 0 {
		return nil, fmt.Errorf("%w: cross network of width %d with %d layers", ErrBadSizes, width, layers)
	}
	return &Cross{Width: width, Layers: layers}, nil
}

// NumParams returns the length of the parameter vector (and of the
// gradient vector): Layers*(Width*Width + Width).
func (c *Cross) NumParams() int { return c.Layers * (c.Width*c.Width + c.Width) }

// LayerParams returns the weights (Width x Width, row-major) and the bias
// (Width) of layer l as subslices of params, which may be a parameter or a
// gradient vector of length NumParams. It panics if l is out of range or
// len(params) != NumParams().
func (c *Cross) LayerParams(params []float32, l int) (w, b []float32) {
	c.checkParams("params", params)
	if l < 0 || l >= c.Layers {
		panic(fmt.Sprintf("densenet: cross layer %d outside [0, %d)", l, c.Layers))
	}
	ww := c.Width * c.Width
	off := l * (ww + c.Width)
	return params[off : off+ww : off+ww], params[off+ww : off+ww+c.Width : off+ww+c.Width]
}

// Init fills params with the initialisation of the DCN-V2 reference
// implementations: every weight uniform in [-r, r] with r = sqrt(3/Width)
// (Glorot's uniform bound for a square matrix, the variance of the
// Xavier-normal init of torchrec's CrossNet) and every bias 0, so that
// at the start each layer adds a small term to its input. The values
// depend only on seed (a SplitMix64 stream, layer by layer), not on the
// Go version or the platform. It panics if len(params) != NumParams().
func (c *Cross) Init(params []float32, seed uint64) {
	c.checkParams("params", params)
	rng := splitMix64{state: seed}
	bound := math.Sqrt(3 / float64(c.Width))
	for l := 0; l < c.Layers; l++ {
		w, b := c.LayerParams(params, l)
		for i := range w {
			w[i] = float32((2*rng.float64() - 1) * bound)
		}
		clear(b)
	}
}

func (c *Cross) checkParams(name string, p []float32) {
	if len(p) != c.NumParams() {
		panic(fmt.Sprintf("densenet: len(%s) = %d, want Cross.NumParams() = %d", name, len(p), c.NumParams()))
	}
}

// CrossWorkspace holds what Cross.Forward keeps for Backward (each
// layer's x_l and u_l) and the scratch of the matrix products, allocated
// once for maxBatch samples. It belongs to the Cross that made it and is
// not safe for concurrent use.
type CrossWorkspace struct {
	// Threads caps the goroutines one matrix product may use, as
	// Workspace.Threads. The default value is 0, meaning
	// runtime.GOMAXPROCS(0).
	Threads int

	cross    *Cross
	maxBatch int
	xs       [][]float32 // xs[l]: x_l for l = 1 .. Layers-1 (xs[0] unused: x_0 is the input)
	us       [][]float32 // us[l]: u_l = W_l·x_l + b_l
	g, du    []float32   // Backward: dLoss/dx_{l+1} and dLoss/du_l
	n        int         // batch of the last completed Forward, -1 if none
	scratch  []float32   // GEMM packing buffer
}

// NewWorkspace returns a workspace for batches of up to maxBatch samples.
// It panics if maxBatch is negative.
func (c *Cross) NewWorkspace(maxBatch int) *CrossWorkspace {
	if maxBatch < 0 {
		panic("densenet: negative maxBatch")
	}
	m := maxBatch * c.Width
	ws := &CrossWorkspace{cross: c, maxBatch: maxBatch, n: -1,
		xs: make([][]float32, c.Layers), us: make([][]float32, c.Layers)}
	for l := 0; l < c.Layers; l++ {
		ws.us[l] = make([]float32, m)
		if l > 0 {
			ws.xs[l] = make([]float32, m)
		}
	}
	if c.Layers > 0 {
		ws.g, ws.du = make([]float32, m), make([]float32, m)
	}
	return ws
}

func (ws *CrossWorkspace) threads() int {
	if ws.Threads > 0 {
		return ws.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Forward sets out (n x Width) to the output x_L of the cross layers for
// the batch x (n x Width, row-major) with parameters params:
//
//	for l := 0; l < Layers; l++ {
//		W, b := LayerParams(params, l)
//		for s := 0; s < n; s++ {
//			for o := 0; o < Width; o++ {
//				u := b[o]
//				for i := 0; i < Width; i++ {
//					u += W[o*Width+i] * x_l[s*Width+i]
//				}
//				x_{l+1}[s*Width+o] = x[s*Width+o]*u + x_l[s*Width+o]
//			}
//		}
//	}
//
// with x_0 = x (the products run on Gemm, so results may differ from the
// loop in the last bits). It keeps x_l and u_l in ws for Backward and
// reads params and x only. It panics on a workspace of another Cross, n
// outside [0, maxBatch] or wrong lengths. out must not overlap x.
func (c *Cross) Forward(ws *CrossWorkspace, params, x []float32, n int, out []float32) {
	c.checkBatch(ws, params, x, n)
	w := c.Width
	if len(out) != n*w {
		panic(fmt.Sprintf("densenet: Cross.Forward: len(out) = %d, want n*Width = %d", len(out), n*w))
	}
	ws.n = -1
	threads := ws.threads()
	xl := x
	for l := 0; l < c.Layers; l++ {
		wl, bl := c.LayerParams(params, l)
		u := ws.us[l][:n*w]
		// u (n x w) = x_l (n x w) · W_lᵀ (w x w), then + b_l
		gemm(threads, &ws.scratch, NoTrans, Trans, n, w, w, 1, xl, w, wl, w, 0, u, w)
		AddBias(u, bl)
		next := out
		if l+1 < c.Layers {
			next = ws.xs[l+1][:n*w]
		}
		for i, x0 := range x {
			next[i] = x0*u[i] + xl[i]
		}
		xl = next
	}
	if c.Layers == 0 {
		copy(out, x)
	}
	ws.n = n
}

// Backward computes the gradients of a loss after Forward(ws, params, x,
// n, ...) with the same ws, params, x and n, given dout (n x Width), the
// gradient with respect to the output x_L. Going down the layers with
// g = dLoss/dx_{l+1} (dout at the top),
//
//	du_l   = g ⊙ x_0
//	dW_l   = du_lᵀ · x_l,  db_l = column sums of du_l
//	dx_0  += g ⊙ u_l                      (x_0's direct use in layer l)
//	dx_l   = g + du_l · W_l               (the next g; for l = 0 it adds to dx_0)
//
// It OVERWRITES grad (length NumParams()) with dLoss/dparams and dx (n x
// Width) with dLoss/dx unless dx is nil. grad and dx must not overlap
// params, x, dout or each other. It panics if Forward was not run on ws
// with this n, or on wrong lengths.
func (c *Cross) Backward(ws *CrossWorkspace, params, x []float32, n int, dout, grad, dx []float32) {
	c.checkBatch(ws, params, x, n)
	if ws.n != n {
		panic(fmt.Sprintf("densenet: Cross.Backward with n = %d after Forward with n = %d", n, ws.n))
	}
	w := c.Width
	c.checkParams("grad", grad)
	if len(dout) != n*w || (dx != nil && len(dx) != n*w) {
		panic(fmt.Sprintf("densenet: Cross.Backward: len(dout) = %d, len(dx) = %d, want n*Width = %d", len(dout), len(dx), n*w))
	}
	if c.Layers == 0 {
		copy(dx, dout)
		return
	}
	threads := ws.threads()
	g, du := ws.g[:n*w], ws.du[:n*w]
	copy(g, dout)
	if dx != nil {
		clear(dx)
	}
	for l := c.Layers - 1; l >= 0; l-- {
		wl, _ := c.LayerParams(params, l)
		gw, gb := c.LayerParams(grad, l)
		xl, u := x, ws.us[l][:n*w]
		if l > 0 {
			xl = ws.xs[l][:n*w]
		}
		for i, x0 := range x {
			du[i] = g[i] * x0
		}
		// dW_l (w x w) = du_lᵀ (w x n) · x_l (n x w)
		gemm(threads, &ws.scratch, Trans, NoTrans, w, w, n, 1, du, w, xl, w, 0, gw, w)
		ColSums(gb, du)
		if dx != nil {
			for i, v := range u {
				dx[i] += g[i] * v
			}
		}
		if l > 0 || dx != nil {
			// g (n x w) += du_l (n x w) · W_l (w x w)
			gemm(threads, &ws.scratch, NoTrans, NoTrans, n, w, w, 1, du, w, wl, w, 1, g, w)
		}
	}
	if dx != nil {
		Axpy(dx, 1, g)
	}
}

// checkBatch panics unless ws, params, x and n fit c.
func (c *Cross) checkBatch(ws *CrossWorkspace, params, x []float32, n int) {
	if ws.cross != c {
		panic("densenet: workspace belongs to another Cross")
	}
	if n < 0 || n > ws.maxBatch {
		panic(fmt.Sprintf("densenet: batch of %d outside [0, %d]", n, ws.maxBatch))
	}
	c.checkParams("params", params)
	if len(x) != n*c.Width {
		panic(fmt.Sprintf("densenet: len(x) = %d, want n*Width = %d", len(x), n*c.Width))
	}
}
