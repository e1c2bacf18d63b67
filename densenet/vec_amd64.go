//go:build amd64 && !purego

package densenet

import "golang.org/x/sys/cpu"

// The element-wise kernels of vec_amd64.s (AVX2 and FMA, 8 floats at a
// time). Each wrapper does the first multiple of 8 elements and returns
// how many it did; the caller's Go loop does the rest, so both builds
// share one reference loop per kernel. Results may differ from the loop
// in the last bit where the loop's a*b + c is one fused operation here.

// haveVec reports whether this CPU runs the kernels; it is set once.
var haveVec = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// vecPReLUAdd is addPReLU's first n8 columns.
func vecPReLUAdd(act, z, x, y, alpha []float32) int {
	n := len(z) &^ 7
	if !haveVec || n == 0 {
		return 0
	}
	_, _, _ = act[n-1], x[n-1], alpha[n-1]
	if y == nil {
		preluAdd1AVX2(&act[0], &z[0], &x[0], &alpha[0], n)
		return n
	}
	_ = y[n-1]
	preluAdd2AVX2(&act[0], &z[0], &x[0], &y[0], &alpha[0], n)
	return n
}

// vecPReLUBack is preluBackward's first n8 columns of every row: g and z
// hold rows of len(alpha) floats.
func vecPReLUBack(g, z, alpha, galpha []float32) int {
	h := len(alpha)
	n, rows := h&^7, min(len(g), len(z))/max(h, 1)
	if !haveVec || n == 0 || rows == 0 {
		return 0
	}
	_, _ = g[rows*h-1], z[rows*h-1]
	_ = galpha[n-1]
	preluBackAVX2(&g[0], &z[0], &alpha[0], &galpha[0], rows, h, n)
	return n
}

// vecAxpy is Axpy's first n8 elements.
func vecAxpy(dst []float32, alpha float32, x []float32) int {
	n := len(dst) &^ 7
	if !haveVec || n == 0 {
		return 0
	}
	_ = x[n-1]
	axpyAVX2(&dst[0], &x[0], n, alpha)
	return n
}

// preluAdd2AVX2 sets z[i] += x[i] + y[i], act[i] = max(z[i], 0) +
// alpha[i]*min(z[i], 0) for i < n, n a positive multiple of 8.
//
//go:noescape
func preluAdd2AVX2(act, z, x, y, alpha *float32, n int)

// preluAdd1AVX2 is preluAdd2AVX2 without y.
//
//go:noescape
func preluAdd1AVX2(act, z, x, alpha *float32, n int)

// preluBackAVX2 does, for each of rows rows of h floats of grad and z and
// each column o < n (a positive multiple of 8): galpha[o] +=
// grad*min(z, 0), grad *= (sign bit of z ? alpha[o] : 1). galpha is not
// cleared.
//
//go:noescape
func preluBackAVX2(grad, z, alpha, galpha *float32, rows, h, n int)

// axpyAVX2 sets dst[i] += alpha*x[i] for i < n, n a positive multiple of 8.
//
//go:noescape
func axpyAVX2(dst, x *float32, n int, alpha float32)

// vecTanh is tanhSlice's first n8 values.
func vecTanh(x []float32) int {
	n := len(x) &^ 7
	if !haveVec || n == 0 {
		return 0
	}
	tanhAVX2(&x[0], n)
	return n
}

// tanhAVX2 sets x[i] = tanhRational(x[i]) for i < n, n a positive
// multiple of 8 (with fused multiply-adds: within an ulp or two of it).
//
//go:noescape
func tanhAVX2(x *float32, n int)

// vecGRUBack is gruCellBack's loop over the first n8 columns; it returns
// them and their part of dLoss/da.
func vecGRUBack(c, dht, hp, gates, dg, dp []float32, a float32) (int, float32) {
	H := len(c)
	n := H &^ 7
	if !haveVec || n == 0 {
		return 0, 0
	}
	_, _, _ = dht[n-1], hp[n-1], gates[3*H+n-1]
	_, _ = dg[2*H+n-1], dp[2*H+n-1]
	return n, gruBackAVX2(&c[0], &dht[0], &hp[0], &gates[0], &dg[0], &dp[0], H, n, a)
}

// vecGRUGates is gruCell's middle loop over the first n8 columns.
func vecGRUGates(gates, gh, gi, bin, bhn []float32) int {
	H := len(bin)
	n := H &^ 7
	if !haveVec || n == 0 {
		return 0
	}
	_, _, _ = gates[3*H+n-1], gh[2*H+n-1], gi[2*H+n-1]
	_ = bhn[n-1]
	gruGatesAVX2(&gates[0], &gh[0], &gi[0], &bin[0], &bhn[0], H, n)
	return n
}

// vecGRUState is gruCell's last loop over the first n8 values.
func vecGRUState(h, hp, z, nn []float32, a float32) int {
	n := len(h) &^ 7
	if !haveVec || n == 0 {
		return 0
	}
	_, _, _ = hp[n-1], z[n-1], nn[n-1]
	gruStateAVX2(&h[0], &hp[0], &z[0], &nn[0], n, a)
	return n
}

//go:noescape
func gruBackAVX2(c, dht, hp, gates, dg, dp *float32, h, n int, a float32) float32

//go:noescape
func gruGatesAVX2(gates, gh, gi, bin, bhn *float32, h, n int)

//go:noescape
func gruStateAVX2(h, hp, z, nn *float32, n int, a float32)

// vecBiasReLU is AddBiasReLUTo's first n8 columns of every row: x and dst
// hold rows of len(bias) floats; dst may be x.
func vecBiasReLU(dst, x, bias []float32) int {
	h := len(bias)
	n, rows := h&^7, len(dst)/max(h, 1)
	if !haveVec || n == 0 || rows == 0 {
		return 0
	}
	_, _ = dst[rows*h-1], x[rows*h-1]
	biasReLUAVX2(&dst[0], &x[0], &bias[0], rows, h, n)
	return n
}

// vecReLUBack is ReLUBackward's first n8 elements.
func vecReLUBack(dst, grad, act []float32) int {
	n := len(dst) &^ 7
	if !haveVec || n == 0 {
		return 0
	}
	_, _ = grad[n-1], act[n-1]
	reluBackAVX2(&dst[0], &grad[0], &act[0], n)
	return n
}

// vecColSums adds the first n8 columns of every row of src (rows of
// len(dst) floats) into dst.
func vecColSums(dst, src []float32) int {
	h := len(dst)
	n, rows := h&^7, len(src)/max(h, 1)
	if !haveVec || n == 0 || rows == 0 {
		return 0
	}
	_ = src[rows*h-1]
	colSumsAVX2(&dst[0], &src[0], rows, h, n)
	return n
}

// biasReLUAVX2 sets dst = max(0, x + bias[o]) for each of rows rows of h
// floats and each column o < n (a positive multiple of 8).
//
//go:noescape
func biasReLUAVX2(dst, x, bias *float32, rows, h, n int)

// reluBackAVX2 sets dst[i] = act[i] > 0 ? grad[i] : 0 for i < n, n a
// positive multiple of 8.
//
//go:noescape
func reluBackAVX2(dst, grad, act *float32, n int)

// colSumsAVX2 adds column o < n (a positive multiple of 8) of each of rows
// rows of h floats of src into dst[o].
//
//go:noescape
func colSumsAVX2(dst, src *float32, rows, h, n int)
