package xctrain

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xdlgo/xps/densenet"
)

// TestDenseNetIsMLP checks that denseNet computes, bit for bit, what
// densenet.MLP with an input bias and an output ReLU does, with the same
// parameter layout and initial values: the switch to the MLP changes
// nothing in training.
func TestDenseNetIsMLP(t *testing.T) {
	for _, tc := range []struct {
		emb    int
		hidden []int
	}{{32, nil}, {5, []int{7}}, {4, []int{6, 3}}, {128, []int{256}}, {64, []int{300, 50}}} {
		t.Run(fmt.Sprint(tc.emb, tc.hidden), func(t *testing.T) {
			old, err := newDenseNet(tc.emb, tc.hidden)
			if err != nil {
				t.Fatal(err)
			}
			m, err := densenet.NewMLPWith(append([]int{tc.emb}, tc.hidden...), densenet.MLPOptions{InputBias: true, OutputReLU: true})
			if err != nil {
				t.Fatal(err)
			}
			if m.NumParams() != old.numParams || m.OutputWidth() != old.outWidth() {
				t.Fatalf("NumParams, OutputWidth = %d, %d, want %d, %d", m.NumParams(), m.OutputWidth(), old.numParams, old.outWidth())
			}
			p, q := make([]float32, old.numParams), make([]float32, m.NumParams())
			old.init(p, 17)
			m.Init(q, 17)
			if !slices.Equal(p, q) {
				t.Fatal("Init differs from denseNet.init")
			}
			rng := rand.New(rand.NewPCG(uint64(tc.emb), 3))
			for i := range p[:tc.emb] {
				p[i] = 0.1 * float32(rng.NormFloat64())
			}
			const n = 50
			x := make([]float32, n*tc.emb)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			dout := make([]float32, n*old.outWidth())
			for i := range dout {
				dout[i] = float32(rng.NormFloat64())
			}

			ows := old.newWS(n)
			copy(ows.input(old, n), x)
			wantOut := slices.Clone(old.forward(ows, p, n))
			wantGrad := make([]float32, old.numParams)
			wantDx := old.backward(ows, p, n, slices.Clone(dout), wantGrad)

			ws := m.NewWorkspace(n)
			out, grad, dx := make([]float32, len(wantOut)), make([]float32, m.NumParams()), make([]float32, len(x))
			m.Forward(ws, p, x, n, out)
			m.Backward(ws, p, x, n, dout, grad, dx)
			if !slices.Equal(out, wantOut) || !slices.Equal(grad, wantGrad) || !slices.Equal(dx, wantDx) {
				t.Fatal("densenet.MLP differs from denseNet")
			}
		})
	}
}
