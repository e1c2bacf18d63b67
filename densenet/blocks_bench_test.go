package densenet

import (
	"math/rand/v2"
	"testing"
)

// The interaction blocks at the generated data's shape: 23 fields of dim
// 18 (414 inputs), batches of 256 and 5000. Forward runs the forward pass
// alone, Step a forward and a backward pass with the input gradients.
//
//	go test -run '^$' -bench 'FM|Cross' ./densenet
//	go test -run '^$' -bench 'FM|Cross' -tags purego ./densenet

const (
	benchFields = 23
	benchDim    = 18
)

// benchFM runs FMForward (and FMBackward with step) on a flat batch.
func benchFM(b *testing.B, batch int, step bool) {
	rng := rand.New(rand.NewPCG(3, 3))
	x := randSlice(rng, batch*benchFields*benchDim)
	out, dout, dx := make([]float32, batch), randSlice(rng, batch), make([]float32, len(x))
	for b.Loop() {
		FMForward(out, x, benchFields, benchDim)
		if step {
			FMBackward(dx, x, dout, benchFields, benchDim, 0)
		}
	}
	b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkFM_Forward_Batch256(b *testing.B)  { benchFM(b, 256, false) }
func BenchmarkFM_Forward_Batch5000(b *testing.B) { benchFM(b, 5000, false) }
func BenchmarkFM_Step_Batch256(b *testing.B)     { benchFM(b, 256, true) }
func BenchmarkFM_Step_Batch5000(b *testing.B)    { benchFM(b, 5000, true) }

// benchFMTree runs FMWorkspace's tree passes on a compressed batch in the
// layout of benchTree: 3 fields of the sample's own (level 0) and 20 of
// its user's (level 1), r consecutive samples per user.
func benchFMTree(b *testing.B, batch, r int) {
	rng := rand.New(rand.NewPCG(4, 4))
	users := (batch + r - 1) / r
	tr := randTree(rng, []int{0, 3 * benchDim, benchFields * benchDim}, []int{batch, users})
	for s := range tr.Parent[0] {
		tr.Parent[0][s] = int32(s / r)
	}
	ws := NewFMWorkspace(benchDim, batch)
	out, dout := make([]float32, batch), randSlice(rng, batch)
	dX := [][]float32{make([]float32, len(tr.X[0])), make([]float32, len(tr.X[1]))}
	for b.Loop() {
		ws.ForwardTree(tr, out)
		ws.BackwardTree(tr, dout, dX, 0)
	}
	b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkFMTree_Step_R1_Batch256(b *testing.B)  { benchFMTree(b, 256, 1) }
func BenchmarkFMTree_Step_R8_Batch256(b *testing.B)  { benchFMTree(b, 256, 8) }
func BenchmarkFMTree_Step_R8_Batch5000(b *testing.B) { benchFMTree(b, 5000, 8) }

// benchCross runs Cross.Forward (and Backward with step) of layers cross
// layers over the 414 inputs.
func benchCross(b *testing.B, layers, batch int, step bool) {
	rng := rand.New(rand.NewPCG(5, 5))
	f := newCrossFixture(b, rng, benchFields*benchDim, layers, batch)
	ws := f.c.NewWorkspace(batch)
	out, grad, dx := make([]float32, len(f.x)), make([]float32, f.c.NumParams()), make([]float32, len(f.x))
	products := 1.0 // per layer: forward, and with step the weight and input gradients
	if step {
		products = 3
	}
	for b.Loop() {
		f.c.Forward(ws, f.params, f.x, batch, out)
		if step {
			f.c.Backward(ws, f.params, f.x, batch, f.dl, grad, dx)
		}
	}
	sec := b.Elapsed().Seconds()
	w := float64(f.c.Width)
	b.ReportMetric(float64(batch)*float64(b.N)/sec, "samples/s")
	b.ReportMetric(products*2*w*w*float64(batch*layers)*float64(b.N)/sec/1e9, "GFLOP/s")
}

func BenchmarkCross_L2_Forward_Batch256(b *testing.B)  { benchCross(b, 2, 256, false) }
func BenchmarkCross_L2_Forward_Batch5000(b *testing.B) { benchCross(b, 2, 5000, false) }
func BenchmarkCross_L2_Step_Batch256(b *testing.B)     { benchCross(b, 2, 256, true) }
func BenchmarkCross_L2_Step_Batch5000(b *testing.B)    { benchCross(b, 2, 5000, true) }
func BenchmarkCross_L3_Step_Batch256(b *testing.B)     { benchCross(b, 3, 256, true) }
