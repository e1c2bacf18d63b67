package densenet

// Vector kernels. Each writes only its first argument, panics when the
// lengths do not fit (a programmer error) and does not allocate. Matrices
// are row-major and contiguous (row stride = number of columns).

// Axpy adds alpha times x to dst:
//
//	for i := range dst {
//		dst[i] += alpha * x[i]
//	}
//
// On amd64 the first multiple of 8 elements are fused multiply-adds
// (vec_amd64.s), which may differ from the loop in the last bit. It
// panics if len(x) != len(dst). dst may be x.
func Axpy(dst []float32, alpha float32, x []float32) {
	if len(x) != len(dst) {
		panic("densenet: Axpy length mismatch")
	}
	x = x[:len(dst)]
	for i := vecAxpy(dst, alpha, x); i < len(x); i++ { // SIMD where it runs, then the rest
		dst[i] += alpha * x[i]
	}
}

// Dot returns the inner product of x and y:
//
//	var s float32
//	for i := range x {
//		s += x[i] * y[i]
//	}
//
// summed in four interleaved float32 partial sums (so the result may
// differ from the loop in the last bits). It panics if len(x) != len(y).
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic("densenet: Dot length mismatch")
	}
	var s0, s1, s2, s3 float32
	for len(x) >= 4 && len(y) >= 4 {
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		x, y = x[4:], y[4:]
	}
	y = y[:len(x)]
	for i, v := range x {
		s0 += v * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// AddBias adds bias to every row of the matrix dst, which has len(bias)
// columns:
//
//	for i := 0; i < len(dst)/len(bias); i++ {
//		for j := range bias {
//			dst[i*len(bias)+j] += bias[j]
//		}
//	}
//
// It panics unless len(dst) is a multiple of len(bias).
func AddBias(dst, bias []float32) {
	checkRows("AddBias", dst, len(bias))
	for len(dst) > 0 {
		row := dst[:len(bias)]
		for j, b := range bias {
			row[j] += b
		}
		dst = dst[len(bias):]
	}
}

// AddBiasReLU adds bias to every row of the matrix dst, which has
// len(bias) columns, and applies the ReLU in the same pass:
//
//	for i := 0; i < len(dst)/len(bias); i++ {
//		for j := range bias {
//			v := dst[i*len(bias)+j] + bias[j]
//			if v < 0 {
//				v = 0
//			}
//			dst[i*len(bias)+j] = v
//		}
//	}
//
// NaN stays NaN. It panics unless len(dst) is a multiple of len(bias).
func AddBiasReLU(dst, bias []float32) {
	checkRows("AddBiasReLU", dst, len(bias))
	biasReLU(dst, dst, bias)
}

// AddBiasReLUTo sets dst to the matrix x, which has len(bias) columns,
// with bias added to every row and the ReLU applied:
//
//	for i := 0; i < len(x)/len(bias); i++ {
//		for j := range bias {
//			v := x[i*len(bias)+j] + bias[j]
//			if v < 0 {
//				v = 0
//			}
//			dst[i*len(bias)+j] = v
//		}
//	}
//
// NaN stays NaN. It panics unless len(dst) == len(x) and len(x) is a
// multiple of len(bias). dst may be x (element-wise, same index).
func AddBiasReLUTo(dst, x, bias []float32) {
	if len(x) != len(dst) {
		panic("densenet: AddBiasReLUTo length mismatch")
	}
	checkRows("AddBiasReLUTo", x, len(bias))
	biasReLU(dst, x, bias)
}

// biasReLU is AddBiasReLUTo's loop, the first multiple of 8 columns of
// every row in the vector kernel where there is one (vec_amd64.s,
// bit-identical to the loop: -0 and NaN pass through).
func biasReLU(dst, x, bias []float32) {
	h := len(bias)
	k := vecBiasReLU(dst, x, bias)
	for len(dst) > 0 {
		row, src := dst[k:h], x[k:h]
		for j, b := range bias[k:] {
			v := src[j] + b
			if v < 0 {
				v = 0
			}
			row[j] = v
		}
		dst, x = dst[h:], x[h:]
	}
}

// ReLUBackward sets dst to the gradient grad passed back through a ReLU
// whose output was act:
//
//	for i := range dst {
//		if act[i] > 0 {
//			dst[i] = grad[i]
//		} else {
//			dst[i] = 0
//		}
//	}
//
// The derivative at 0 is taken as 0. It panics unless all three lengths
// are equal. dst may be grad (element-wise, same index).
func ReLUBackward(dst, grad, act []float32) {
	if len(grad) != len(dst) || len(act) != len(dst) {
		panic("densenet: ReLUBackward length mismatch")
	}
	// The first multiple of 8 in the vector kernel where there is one
	// (vec_amd64.s, bit-identical: a NaN act gives 0, as here).
	k := vecReLUBack(dst, grad, act)
	dst, grad, act = dst[k:], grad[k:len(dst)], act[k:len(dst)]
	for i, a := range act {
		g := grad[i]
		if !(a > 0) {
			g = 0
		}
		dst[i] = g
	}
}

// ColSums overwrites dst with the column sums of the matrix src, which has
// len(dst) columns (for a layer's bias gradient, src is the batch of
// output gradients):
//
//	for j := range dst {
//		dst[j] = 0
//		for i := 0; i < len(src)/len(dst); i++ {
//			dst[j] += src[i*len(dst)+j]
//		}
//	}
//
// It panics unless len(src) is a multiple of len(dst). dst must not
// overlap src.
func ColSums(dst, src []float32) {
	checkRows("ColSums", src, len(dst))
	clear(dst)
	// The first multiple of 8 columns in the vector kernel where there is
	// one (vec_amd64.s; each column summed row after row, as here).
	h := len(dst)
	k := vecColSums(dst, src)
	for len(src) > 0 {
		row := src[k:h]
		for j, v := range row {
			dst[k+j] += v
		}
		src = src[h:]
	}
}

// checkRows panics unless x is a whole number of rows of cols columns.
func checkRows(fn string, x []float32, cols int) {
	if cols == 0 {
		if len(x) != 0 {
			panic("densenet: " + fn + " with zero columns")
		}
		return
	}
	if len(x)%cols != 0 {
		panic("densenet: " + fn + " length is not a multiple of the columns")
	}
}
