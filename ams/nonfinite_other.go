//go:build !amd64 || purego

package ams

// nonFiniteRows returns a mask with bit k set when the gradient row of
// the k-th id from lo (k < n <= 32) holds a NaN or ±Inf. Without
// assembly (other architectures, or the purego build tag) it is the
// reference loop; see the amd64 version.
func nonFiniteRows(grads []float32, pos []int32, lo, n, d int) uint32 {
	return nonFiniteRowsGo(grads, pos, lo, n, d)
}

// allFiniteLong is AllFinite for a long vector (a dense gradient).
func allFiniteLong(x []float32) bool { return AllFinite(x) }
