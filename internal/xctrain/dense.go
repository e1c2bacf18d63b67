package xctrain

import (
	"fmt"
	"math"

	"github.com/xdlgo/xps/densenet"
)

// denseNet is the dense part between the embedding sum and the SLIDE
// layer: a bias and a ReLU on the pooled embeddings (width sizes[0]), then
// one fully connected ReLU layer per further size. Its parameters are one
// flat vector (held on the AMS shards):
//
//	b_0 (sizes[0]), W_1 (sizes[1] x sizes[0], row-major), b_1 (sizes[1]), ..., W_k, b_k
//
// An embedding table of dim E with b_0 and the ReLU is a sparse input
// layer of width E, as the first layer of SLIDE's network and of
// PyTorch's EmbeddingBag(sum) + bias + ReLU.
type denseNet struct {
	sizes      []int
	wOff, bOff []int // offsets of W_l and b_l (wOff[0] unused)
	numParams  int
}

func newDenseNet(emb int, hidden []int) (*denseNet, error) {
	if emb <= 0 {
		return nil, fmt.Errorf("xctrain: embedding dim %d is not positive", emb)
	}
	m := &denseNet{sizes: append([]int{emb}, hidden...)}
	m.wOff, m.bOff = make([]int, len(m.sizes)), make([]int, len(m.sizes))
	off := emb // b_0
	for l := 1; l < len(m.sizes); l++ {
		in, out := m.sizes[l-1], m.sizes[l]
		if out <= 0 {
			return nil, fmt.Errorf("xctrain: hidden layer %d has %d units", l, out)
		}
		m.wOff[l] = off
		off += in * out
		m.bOff[l] = off
		off += out
	}
	m.numParams = off
	return m, nil
}

// outWidth is the width of the last activation (the SLIDE layer's input).
func (m *denseNet) outWidth() int { return m.sizes[len(m.sizes)-1] }

// layer returns W_l and b_l (l >= 1) of a parameter or gradient vector.
func (m *denseNet) layer(p []float32, l int) (w, b []float32) {
	in, out := m.sizes[l-1], m.sizes[l]
	return p[m.wOff[l] : m.wOff[l]+in*out], p[m.bOff[l] : m.bOff[l]+out]
}

// init fills p: b_0 = 0, and W_l, b_l uniform in ±1/sqrt(in) (PyTorch's
// nn.Linear default), from a SplitMix64 stream of seed.
func (m *denseNet) init(p []float32, seed uint64) {
	clear(p[:m.sizes[0]])
	s := seed
	next := func() float64 {
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return float64((z^(z>>31))>>11) / (1 << 53)
	}
	for l := 1; l < len(m.sizes); l++ {
		bound := 1 / math.Sqrt(float64(m.sizes[l-1]))
		w, b := m.layer(p, l)
		for _, v := range [][]float32{w, b} {
			for i := range v {
				v[i] = float32((2*next() - 1) * bound)
			}
		}
	}
}

// denseWS holds one batch's activations: acts[l] is the output of layer l
// (n x sizes[l]), acts[0] the pooled embeddings after b_0 and the ReLU.
type denseWS struct {
	acts  [][]float32
	delta [2][]float32
}

func (m *denseNet) newWS(maxBatch int) *denseWS {
	ws := &denseWS{acts: make([][]float32, len(m.sizes))}
	widest := 0
	for l, s := range m.sizes {
		ws.acts[l] = make([]float32, maxBatch*s)
		widest = max(widest, s)
	}
	for i := range ws.delta {
		ws.delta[i] = make([]float32, maxBatch*widest)
	}
	return ws
}

// input returns the buffer the n pooled embeddings go into (acts[0]).
func (ws *denseWS) input(m *denseNet, n int) []float32 { return ws.acts[0][:n*m.sizes[0]] }

// forward runs the layers on the n pooled rows already in ws.input and
// returns the last activation (n x outWidth, a view into ws).
func (m *denseNet) forward(ws *denseWS, p []float32, n int) []float32 {
	a := ws.acts[0][:n*m.sizes[0]]
	densenet.AddBiasReLU(a, p[:m.sizes[0]])
	for l := 1; l < len(m.sizes); l++ {
		in, out := m.sizes[l-1], m.sizes[l]
		w, b := m.layer(p, l)
		z := ws.acts[l][:n*out]
		densenet.Gemm(densenet.NoTrans, densenet.Trans, n, out, in, 1, a, in, w, in, 0, z, out)
		densenet.AddBiasReLU(z, b)
		a = z
	}
	return a
}

// backward takes dout, the gradient of the loss for the last activation
// (n x outWidth; it is overwritten), after forward on ws with p and n. It
// overwrites grad (numParams) and returns the gradient for the pooled
// embeddings (n x sizes[0], a view into ws or dout).
func (m *denseNet) backward(ws *denseWS, p []float32, n int, dout, grad []float32) []float32 {
	delta := dout
	for l := len(m.sizes) - 1; l >= 1; l-- {
		in, out := m.sizes[l-1], m.sizes[l]
		densenet.ReLUBackward(delta, delta, ws.acts[l][:n*out])
		w, _ := m.layer(p, l)
		gw, gb := m.layer(grad, l)
		a := ws.acts[l-1][:n*in]
		densenet.Gemm(densenet.Trans, densenet.NoTrans, out, in, n, 1, delta, out, a, in, 0, gw, in)
		densenet.ColSums(gb, delta)
		next := ws.delta[l%2][:n*in]
		densenet.Gemm(densenet.NoTrans, densenet.NoTrans, n, in, out, 1, delta, out, w, in, 0, next, in)
		delta = next
	}
	densenet.ReLUBackward(delta, delta, ws.acts[0][:n*m.sizes[0]])
	densenet.ColSums(grad[:m.sizes[0]], delta)
	return delta
}
