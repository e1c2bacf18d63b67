package densenet

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// Benchmark names give the product as M x K x N: op(A) is M x K, op(B) is
// K x N, C is M x N. NN is C = A·B, TN is C = Aᵀ·B, NT is C = A·Bᵀ. In the
// 414-200-80-1 model at batch 256, the forward pass of layer 1 is
// NT_256x414x200, its weight gradient TN_200x256x414 and its input
// gradient NN_256x200x414.
//
//	go test -run '^$' -bench . ./densenet
//	go test -run '^$' -bench . -cpu 1,2 ./densenet

func benchGemm(b *testing.B, tA, tB Transpose, m, k, n int) {
	benchGemmWith(b, defaultKernel, tA, tB, m, k, n)
}

func benchGemmWith(b *testing.B, kn *gemmKernel, tA, tB Transpose, m, k, n int) {
	rng := rand.New(rand.NewPCG(1, 1))
	a, bb, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	lda, ldb := k, n
	if tA == Trans {
		lda = m
	}
	if tB == Trans {
		ldb = k
	}
	b.ResetTimer()
	for b.Loop() {
		gemmWith(kn, runtime.GOMAXPROCS(0), nil, tA, tB, m, n, k, 1, a, lda, bb, ldb, 0, c, n)
	}
	b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkKernels runs the layer-1 shapes with every micro-kernel this
// CPU has (Gemm itself uses the last one listed).
func BenchmarkKernels(b *testing.B) {
	shapes := []struct {
		name    string
		tA, tB  Transpose
		m, k, n int
	}{
		{"NN_256x414x200", NoTrans, NoTrans, 256, 414, 200},
		{"TN_256x414x200", Trans, NoTrans, 256, 414, 200},
		{"NT_256x414x200", NoTrans, Trans, 256, 414, 200},
		{"TN_200x256x414", Trans, NoTrans, 200, 256, 414},
		{"NN_256x200x414", NoTrans, NoTrans, 256, 200, 414},
	}
	for _, kn := range gemmKernels {
		for _, s := range shapes {
			b.Run(kn.name+"/"+s.name, func(b *testing.B) { benchGemmWith(b, kn, s.tA, s.tB, s.m, s.k, s.n) })
		}
	}
}

func BenchmarkGemm_NN_256x414x200(b *testing.B)  { benchGemm(b, NoTrans, NoTrans, 256, 414, 200) }
func BenchmarkGemm_TN_256x414x200(b *testing.B)  { benchGemm(b, Trans, NoTrans, 256, 414, 200) }
func BenchmarkGemm_NT_256x414x200(b *testing.B)  { benchGemm(b, NoTrans, Trans, 256, 414, 200) }
func BenchmarkGemm_NN_256x200x80(b *testing.B)   { benchGemm(b, NoTrans, NoTrans, 256, 200, 80) }
func BenchmarkGemm_TN_256x200x80(b *testing.B)   { benchGemm(b, Trans, NoTrans, 256, 200, 80) }
func BenchmarkGemm_NT_256x200x80(b *testing.B)   { benchGemm(b, NoTrans, Trans, 256, 200, 80) }
func BenchmarkGemm_NN_5000x414x200(b *testing.B) { benchGemm(b, NoTrans, NoTrans, 5000, 414, 200) }
func BenchmarkGemm_TN_5000x414x200(b *testing.B) { benchGemm(b, Trans, NoTrans, 5000, 414, 200) }
func BenchmarkGemm_NT_5000x414x200(b *testing.B) { benchGemm(b, NoTrans, Trans, 5000, 414, 200) }

// The model's own backward shapes.
func BenchmarkGemm_TN_200x256x414(b *testing.B) { benchGemm(b, Trans, NoTrans, 200, 256, 414) }
func BenchmarkGemm_NN_256x200x414(b *testing.B) { benchGemm(b, NoTrans, NoTrans, 256, 200, 414) }

// benchMLP runs a training step (Forward, the loss's gradient, Backward
// with the input gradients) of the MLP with sizes and opts on a batch:
// SigmoidBCE for a network ending in one logit, a fixed output gradient
// otherwise.
func benchMLP(b *testing.B, sizes []int, opts MLPOptions, batch int) {
	m, err := NewMLPWith(sizes, opts)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(params, 1)
	x, dx := randSlice(rng, batch*m.InputWidth()), make([]float32, batch*m.InputWidth())
	logit := m.OutputWidth() == 1 && !opts.OutputReLU
	labels := make([]float32, batch)
	for i := range labels {
		labels[i] = float32(rng.IntN(2))
	}
	out, probs, dout := make([]float32, batch*m.OutputWidth()), make([]float32, batch), randSlice(rng, batch*m.OutputWidth())
	ws := m.NewWorkspace(batch)
	var flops float64 // forward + weight gradients + input gradients
	for l := 0; l+1 < len(sizes); l++ {
		flops += 3 * 2 * float64(batch*sizes[l]*sizes[l+1])
	}
	b.ResetTimer()
	for b.Loop() {
		m.Forward(ws, params, x, batch, out)
		if logit {
			SigmoidBCE(out, labels, probs, dout)
		}
		m.Backward(ws, params, x, batch, dout, grad, dx)
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(batch)*float64(b.N)/sec, "samples/s")
	b.ReportMetric(flops*float64(b.N)/sec/1e9, "GFLOP/s")
}

func BenchmarkMLP_ForwardBackward_Batch256(b *testing.B) {
	benchMLP(b, []int{414, 200, 80, 1}, MLPOptions{}, 256)
}

// The dense part of the SLIDE model (job/xctrain): the embedding
// sum's bias and ReLU, one hidden layer, a ReLU output for the SLIDE layer.
func BenchmarkMLP_SLIDE_Dim128_Hidden256_Batch128(b *testing.B) {
	benchMLP(b, []int{128, 256}, MLPOptions{InputBias: true, OutputReLU: true}, 128)
}

// BenchmarkGemmShapes runs the GEMM shapes (M x K x N) in the three
// layouts of blas_gemm.py: nn = A·B, tn = Aᵀ·B (A stored K x M), nt = A·Bᵀ
// (B stored N x K), with GOMAXPROCS goroutines (set with -cpu), once with
// every micro-kernel this CPU runs (the last one listed is the one Gemm
// uses; the generic kernel is left out when a faster one exists, so that
// an AVX-512 machine also measures the AVX2+FMA path that CPUs without
// AVX-512 get). bench/gemm.sh sets them beside OpenBLAS.
func BenchmarkGemmShapes(b *testing.B) {
	layouts := []struct {
		name   string
		tA, tB Transpose
	}{{"nn", NoTrans, NoTrans}, {"tn", Trans, NoTrans}, {"nt", NoTrans, Trans}}
	kernels := gemmKernels
	if len(kernels) > 1 {
		kernels = kernels[1:]
	}
	for _, s := range [][3]int{{256, 414, 200}, {256, 200, 80}, {5000, 414, 200}, {5000, 200, 80}, {128, 128, 4096}} {
		for _, l := range layouts {
			for _, kn := range kernels {
				b.Run(fmt.Sprintf("shape=%dx%dx%d/layout=%s/kernel=%s", s[0], s[1], s[2], l.name, kn.name), func(b *testing.B) {
					benchGemmWith(b, kn, l.tA, l.tB, s[0], s[1], s[2])
				})
			}
		}
	}
}

// BenchmarkReLUKernels times the element-wise layer kernels on a batch of
// 256 rows of 200 (the first hidden layer's), with and without their
// vector part (where this CPU has one).
func BenchmarkReLUKernels(b *testing.B) {
	const rows, h = 256, 200
	rng := rand.New(rand.NewPCG(1, 2))
	x, bias, grad, out := make([]float32, rows*h), make([]float32, h), make([]float32, rows*h), make([]float32, rows*h)
	for i := range x {
		x[i], grad[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	for _, vec := range []bool{false, true} {
		saved := haveVec
		haveVec = vec && saved
		for _, k := range []struct {
			name string
			fn   func()
		}{
			{"AddBiasReLUTo", func() { AddBiasReLUTo(out, x, bias) }},
			{"ReLUBackward", func() { ReLUBackward(out, grad, x) }},
			{"ColSums", func() { ColSums(bias, grad) }},
		} {
			b.Run(fmt.Sprintf("%s/vector=%v", k.name, haveVec), func(b *testing.B) {
				for b.Loop() {
					k.fn()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*h), "ns/element")
			})
		}
		haveVec = saved
	}
}
