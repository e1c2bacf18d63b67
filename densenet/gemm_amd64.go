//go:build amd64 && !purego

package densenet

import "golang.org/x/sys/cpu"

// The amd64 micro-kernels are in gemm_amd64.s. Build with the purego tag
// to leave them out (the race detector does not see memory accessed from
// assembly, so `go test -race -tags purego` checks everything it can).

// avx2Kernel is a 6x16 tile in twelve YMM accumulators (AVX2 and FMA),
// the shape of BLIS's Haswell sgemm kernel. An A block of mc x kc floats
// (144 KiB) stays in L2 and a B micro-panel of kc x nr (16 KiB) in L1.
var avx2Kernel = &gemmKernel{
	name: "avx2fma6x16",
	mr:   6, nr: 16,
	mc: 144, kc: 256, nc: 512,
	tile: tile6x16AVX2,
}

// avx512Kernel is a 12x32 tile in 24 ZMM accumulators (AVX-512F).
var avx512Kernel = &gemmKernel{
	name: "avx512f12x32",
	mr:   12, nr: 32,
	mc: 144, kc: 256, nc: 512,
	tile:   tile12x32AVX512,
	direct: direct12x32AVX512,
}

// defaultKernel is the micro-kernel Gemm uses, and gemmKernels every one
// this CPU runs (the tests check each). They are set once, from the CPU's
// features, when the package is initialised and never change.
var gemmKernels, defaultKernel = amd64Kernels()

func amd64Kernels() ([]*gemmKernel, *gemmKernel) {
	ks := []*gemmKernel{genericKernel}
	best := genericKernel
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
		best = avx2Kernel
	}
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
		best = avx512Kernel
	}
	return ks, best
}

func tile6x16AVX2(depth int, pa, pb, c []float32, ldc int, alpha, beta float32) {
	const mr, nr = 6, 16
	if depth < 1 || ldc < nr {
		panic("densenet: bad micro-kernel call")
	}
	_ = pa[mr*depth-1]
	_ = pb[nr*depth-1]
	_ = c[(mr-1)*ldc+nr-1]
	kernel6x16AVX2(depth, &pa[0], &pb[0], &c[0], ldc, alpha, beta)
}

func tile12x32AVX512(depth int, pa, pb, c []float32, ldc int, alpha, beta float32) {
	const mr, nr = 12, 32
	if depth < 1 || ldc < nr {
		panic("densenet: bad micro-kernel call")
	}
	_ = pa[mr*depth-1]
	_ = pb[nr*depth-1]
	_ = c[(mr-1)*ldc+nr-1]
	kernel12x32AVX512(depth, &pa[0], &pb[0], &c[0], ldc, alpha, beta)
}

func direct12x32AVX512(depth int, a []float32, lda int, pb, c []float32, ldc int, alpha, beta float32) {
	const mr, nr = 12, 32
	if depth < 1 || ldc < nr || lda < depth {
		panic("densenet: bad micro-kernel call")
	}
	_ = a[(mr-1)*lda+depth-1]
	_ = pb[nr*depth-1]
	_ = c[(mr-1)*ldc+nr-1]
	kernel12x32AVX512Direct(depth, &a[0], lda, &pb[0], &c[0], ldc, alpha, beta)
}

// kernel6x16AVX2 sets the 6x16 block of C at c (row stride ldc floats) to
// alpha*A·B + beta*C, where a holds depth steps of 6 floats and b depth
// steps of 16; it does not read C when beta is 0. It needs AVX2 and FMA.
//
//go:noescape
func kernel6x16AVX2(depth int, a, b, c *float32, ldc int, alpha, beta float32)

// kernel12x32AVX512 is kernel6x16AVX2 for a 12x32 tile; it needs AVX-512F.
//
//go:noescape
func kernel12x32AVX512(depth int, a, b, c *float32, ldc int, alpha, beta float32)

// kernel12x32AVX512Direct is kernel12x32AVX512 with A read in place: row
// i of the tile is a[i*lda:][:depth].
//
//go:noescape
func kernel12x32AVX512Direct(depth int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)
