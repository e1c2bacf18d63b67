//go:build amd64 && !purego

package ams

import "golang.org/x/sys/cpu"

// haveNonFiniteAVX2 reports whether nonFiniteRows runs the AVX2 kernel
// (nonfinite_amd64.s); set once, from the CPU's features.
var haveNonFiniteAVX2 = cpu.X86.HasAVX2

// nonFiniteRows returns a mask with bit k set when the gradient row of
// the k-th id from lo (k < n <= 32) holds a NaN or ±Inf, the row as
// rowAt(grads, pos, lo+k, d) gives it:
//
//	for k := range n {
//		if !AllFinite(rowAt(grads, pos, lo+k, d)) {
//			mask |= 1 << k
//		}
//	}
//
// With AVX2 a kernel checks the whole group in one call, 8 values at a
// time as AllFinite does two, and tells only whether a row holds one (a
// push checks every gradient row it applies: a call per row, or a mask
// built row by row, cost more than the check); the loop above tells
// which, when one does. It panics as rowAt does when a position is
// outside grads.
func nonFiniteRows(grads []float32, pos []int32, lo, n, d int) uint32 {
	if !haveNonFiniteAVX2 || n == 0 || len(grads) < d {
		return nonFiniteRowsGo(grads, pos, lo, n, d)
	}
	var ident [32]int32
	var p []int32
	if pos != nil {
		p = pos[lo : lo+n]
	} else {
		for k := range n {
			ident[k] = int32(lo + k)
		}
		p = ident[:n]
	}
	if found, ok := anyNonFiniteAVX2(&grads[0], len(grads)/d, &p[0], n, d); ok && !found {
		return 0
	}
	return nonFiniteRowsGo(grads, pos, lo, n, d) // which rows (or rowAt's panic)
}

// allFiniteLong is AllFinite for a long vector (a dense gradient): the
// AVX2 kernel's one row where there is one.
func allFiniteLong(x []float32) bool {
	if !haveNonFiniteAVX2 || len(x) < 8 {
		return AllFinite(x)
	}
	var p0 int32
	found, _ := anyNonFiniteAVX2(&x[0], 1, &p0, 1, len(x))
	return !found
}

// anyNonFiniteAVX2 reports whether one of the n rows of d values at
// base + pos[k]*d holds a NaN or ±Inf, or ok false (and nothing read past
// that row) at the first position outside [0, rows). n and d must be
// positive.
//
//go:noescape
func anyNonFiniteAVX2(base *float32, rows int, pos *int32, n, d int) (found, ok bool)
