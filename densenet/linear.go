package densenet

import "fmt"

// The first-order (linear, "wide") term of LR, FM, Wide & Deep:
//
//	logit_lin(s) = b + Σ_{id in s} w_id
//
// Its weights w_id are a dim-1 embedding per ID: they live in a sparse
// table of dim 1 on the AMS (FTRL there, as for any table), and the
// sparse layer pools them per field like any embedding. What is left for
// the dense side is the sum over a sample's fields (RowSums), the bias b
// (a dense parameter, whose gradient is the sum of dout) and the gradient
// of the sum, dout broadcast to every field (RowSumsGrad). On a
// compressed batch the dim-1 inputs are few (one value per field), so the
// term expands per sample (ExpandTree, then RowSums; RowSumsGrad, then
// ReduceTree) at the cost of the flat batch, which is negligible beside
// the MLP's first layer.

// RowSums sets dst[i] to the sum of row i of the matrix x, which has
// len(dst) rows of c = len(x)/len(dst) columns:
//
//	for i := range dst {
//		dst[i] = 0
//		for j := 0; j < c; j++ {
//			dst[i] += x[i*c+j]
//		}
//	}
//
// It panics unless len(x) is a multiple of len(dst) (len(x) = 0 when
// len(dst) = 0). dst must not overlap x.
func RowSums(dst, x []float32) {
	c := rowsCols("RowSums", len(dst), len(x))
	for i := range dst {
		var s float32
		for _, v := range x[i*c : (i+1)*c] {
			s += v
		}
		dst[i] = s
	}
}

// RowSumsGrad sets dx, a matrix of len(dout) rows of c = len(dx)/len(dout)
// columns, to the gradient of RowSums given dout, the gradient with
// respect to each row's sum, plus beta times dx:
//
//	for i := range dout {
//		for j := 0; j < c; j++ {
//			dx[i*c+j] = dout[i] + beta*dx[i*c+j]
//		}
//	}
//
// except that with beta = 0, dx is not read. It panics unless len(dx) is
// a multiple of len(dout) (0 when len(dout) = 0). dx must not overlap
// dout.
func RowSumsGrad(dx, dout []float32, beta float32) {
	c := rowsCols("RowSumsGrad", len(dout), len(dx))
	for i, g := range dout {
		row := dx[i*c : (i+1)*c]
		if beta == 0 {
			for j := range row {
				row[j] = g
			}
			continue
		}
		for j, v := range row {
			row[j] = g + beta*v
		}
	}
}

// rowsCols returns the columns of a matrix of size values in rows rows,
// and panics if it has none that fits.
func rowsCols(fn string, rows, size int) int {
	if rows == 0 {
		if size != 0 {
			panic(fmt.Sprintf("densenet: %s: %d values in 0 rows", fn, size))
		}
		return 0
	}
	if size%rows != 0 {
		panic(fmt.Sprintf("densenet: %s: %d values are not a whole number of %d rows", fn, size, rows))
	}
	return size / rows
}
