package densenet

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"
)

func threadCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func TestTune(t *testing.T) {
	if os.Getenv("TUNE") == "" {
		t.Skip()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	shapes := []struct {
		tA, tB  Transpose
		m, k, n int
	}{
		{NoTrans, NoTrans, 256, 414, 200}, {Trans, NoTrans, 256, 414, 200}, {NoTrans, Trans, 256, 414, 200},
		{NoTrans, NoTrans, 256, 200, 80}, {Trans, NoTrans, 200, 256, 414}, {NoTrans, NoTrans, 256, 200, 414},
	}
	var scratch [][]float32
	for _, s := range shapes {
		a, b, c := randSlice(rng, s.m*s.k), randSlice(rng, s.k*s.n), make([]float32, s.m*s.n)
		lda, ldb := s.k, s.n
		if s.tA == Trans {
			lda = s.m
		}
		if s.tB == Trans {
			ldb = s.k
		}
		best := 0.0
		for r := 0; r < 7; r++ {
			t0 := threadCPU()
			const N = 10
			for i := 0; i < N; i++ {
				gemm(1, &scratch, s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, b, ldb, 0, c, s.n)
			}
			best = max(best, 2*float64(s.m*s.n*s.k*N)/(threadCPU()-t0)/1e9)
		}
		fmt.Printf("%v%v %dx%dx%d %.2f GFLOP/s\n", s.tA, s.tB, s.m, s.k, s.n, best)
	}
	m, _ := NewMLP([]int{414, 200, 80, 1})
	const n = 256
	params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(params, 1)
	x, dx := randSlice(rng, n*414), make([]float32, n*414)
	logits, dl := make([]float32, n), randSlice(rng, n)
	ws := m.NewWorkspace(n)
	ws.Threads = 1
	best := 0.0
	for r := 0; r < 5; r++ {
		t0 := threadCPU()
		const N = 5
		for i := 0; i < N; i++ {
			m.Forward(ws, params, x, n, logits)
			m.Backward(ws, params, x, n, dl, grad, dx)
		}
		best = max(best, n*N/(threadCPU()-t0))
	}
	fmt.Printf("MLP F+B %.0f samples/s per core\n", best)
}
