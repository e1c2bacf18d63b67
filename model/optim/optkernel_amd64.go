//go:build amd64 && !purego

package optim

import "golang.org/x/sys/cpu"

// The Adam and Adagrad kernels are in optkernel_amd64.s. Build with the
// purego tag to leave them out (the race detector does not see memory
// accessed from assembly, so `go test -race -tags purego` checks
// everything it can).

// haveOptAVX reports whether adamBlocks and adagradBlocks run the AVX
// kernels. It is set once, from the CPU's features, when the package is
// initialised.
var haveOptAVX = cpu.X86.HasAVX

// adamBlocks runs Adam's element loop (see Adam) over the longest prefix of
// w whose length is a multiple of 8 and returns that length, or 0 without
// touching anything when the CPU lacks AVX; the caller finishes the rest
// with the scalar loop. c1 = 1-b1 and c2 = 1-b2. m, v and g must be at
// least as long as w, and no two of w, m, v and g may overlap.
//
// The kernel rounds each operation as the scalar loop does (no fused
// multiply-add; VSQRTPS and VDIVPS are correctly rounded like sqrt32 and
// the scalar division), so its results are bit-identical to the loop's.
func adamBlocks(w, m, v, g []float32, b1, c1, b2, c2, lrT, eps float32) int {
	n := len(w) &^ 7
	if !haveOptAVX || n == 0 {
		return 0
	}
	_, _, _ = m[n-1], v[n-1], g[n-1]
	adamAVX(n, &w[0], &m[0], &v[0], &g[0], b1, c1, b2, c2, lrT, eps)
	return n
}

// adamAVX applies the Adam element loop to n floats (n a positive multiple
// of 8) of w, m and v with gradient grad, 16 and then 8 lanes at a time. It
// needs AVX.
//
//go:noescape
func adamAVX(n int, w, m, v, grad *float32, b1, c1, b2, c2, lrT, eps float32)

// adagradBlocks runs Adagrad's element loop (see Adagrad.Apply) over the
// longest prefix of w whose length is a multiple of 8 and returns that
// length, or 0 without touching anything when the CPU lacks AVX; the
// caller finishes the rest with the scalar loop. acc and g must be at
// least as long as w, and no two of w, acc and g may overlap. Rounding as
// adamBlocks: bit-identical to the loop.
func adagradBlocks(w, acc, g []float32, lr, eps float32) int {
	n := len(w) &^ 7
	if !haveOptAVX || n == 0 {
		return 0
	}
	_, _ = acc[n-1], g[n-1]
	adagradAVX(n, &w[0], &acc[0], &g[0], lr, eps)
	return n
}

// adagradAVX applies the Adagrad element loop to n floats (n a positive
// multiple of 8) of w and acc with gradient grad, 16 and then 8 lanes at a
// time. It needs AVX.
//
//go:noescape
func adagradAVX(n int, w, acc, grad *float32, lr, eps float32)
