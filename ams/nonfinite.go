package ams

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// Policies of TableSpec.NonFinite: what a table does with a gradient row
// or a value row that holds a NaN or ±Inf (see the package doc, "Non-finite
// gradients and values").
const (
	// NonFiniteRefuse leaves the row as it was and counts it.
	NonFiniteRefuse = "refuse"
	// NonFiniteClip applies the row with each NaN as 0 and each ±Inf as
	// ±TableSpec.NonFiniteBound, and counts it.
	NonFiniteClip = "clip"
)

// DefaultNonFinite is TableSpec.NonFinite's default.
const DefaultNonFinite = NonFiniteRefuse

// DefaultNonFiniteBound is TableSpec.NonFiniteBound's default.
const DefaultNonFiniteBound = 1

// MaxNonFiniteBound is the largest TableSpec.NonFiniteBound: its square
// (an Adagrad, Adam or FTRL accumulator's step) stays finite in float32.
// math.MaxFloat32 (numpy's nan_to_num) would not: clipped to it, an
// +Inf turns an accumulator infinite and FTRL's next weight NaN.
const MaxNonFiniteBound = 1e18

// Bits of a float32: a value is NaN or ±Inf exactly when its exponent
// field is all ones, and adding one to that field carries into the sign
// bit then, and only then. exp2, expUnit2 and sign2 hold the masks twice,
// for two float32s read as one uint64.
const (
	f32Exp     = 0x7f800000
	f32ExpUnit = 0x00800000
	f32Sign    = 0x80000000
	exp2       = f32Exp<<32 | f32Exp
	expUnit2   = f32ExpUnit<<32 | f32ExpUnit
	sign2      = f32Sign<<32 | f32Sign
)

// AllFinite reports whether every value of x is finite: no NaN, no ±Inf.
// It has no branch per value and reads two values per 64-bit word (1.6
// times as fast as the plain loop below at dim 16); it is the check of a
// push's gradient rows and of a dense gradient where the AVX2 kernel is
// not (see nonFiniteRows):
//
//	for _, v := range x {
//		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
//			return false
//		}
//	}
//	return true
func AllFinite(x []float32) bool {
	if len(x) == 0 {
		return true
	}
	// The words are read in the machine's byte order, so each 32-bit
	// half is one float32's bits (which half does not matter), and
	// unaligned: a row starts at any multiple of 4 bytes.
	b := unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
	var acc uint64
	for len(b) >= 32 {
		_ = b[31]
		acc |= (binary.NativeEndian.Uint64(b)&exp2 + expUnit2) | (binary.NativeEndian.Uint64(b[8:])&exp2 + expUnit2) |
			(binary.NativeEndian.Uint64(b[16:])&exp2 + expUnit2) | (binary.NativeEndian.Uint64(b[24:])&exp2 + expUnit2)
		b = b[32:]
	}
	for len(b) >= 8 {
		acc |= binary.NativeEndian.Uint64(b)&exp2 + expUnit2
		b = b[8:]
	}
	if len(b) == 4 {
		acc |= uint64(binary.NativeEndian.Uint32(b)&f32Exp + f32ExpUnit)
	}
	return acc&sign2 == 0
}

// nonFiniteRowsGo is nonFiniteRows's reference loop.
func nonFiniteRowsGo(grads []float32, pos []int32, lo, n, d int) uint32 {
	var mask uint32
	for k := range n {
		if !AllFinite(rowAt(grads, pos, lo+k, d)) {
			mask |= 1 << k
		}
	}
	return mask
}

// ClipNonFinite writes src into dst with each NaN as 0, +Inf as bound and
// -Inf as -bound, and returns the number of values it changed. dst may be
// src. It panics unless len(dst) == len(src).
//
//	for i, v := range src {
//		switch {
//		case math.IsNaN(float64(v)):
//			dst[i] = 0
//		case math.IsInf(float64(v), 1):
//			dst[i] = bound
//		case math.IsInf(float64(v), -1):
//			dst[i] = -bound
//		default:
//			dst[i] = v
//		}
//	}
func ClipNonFinite(dst, src []float32, bound float32) int {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("ams: ClipNonFinite: len(dst)=%d len(src)=%d", len(dst), len(src)))
	}
	n := 0
	for i, v := range src {
		switch {
		case v != v:
			v = 0
		case v > math.MaxFloat32:
			v = bound
		case v < -math.MaxFloat32:
			v = -bound
		default:
			dst[i] = v
			continue
		}
		dst[i] = v
		n++
	}
	return n
}

// firstNonFinite returns the index of the first NaN or ±Inf in x, or -1.
func firstNonFinite(x []float32) int {
	for i, v := range x {
		if !isFinite(v) {
			return i
		}
	}
	return -1
}

// CheckFinite returns nil when every value of a request's rows is
// finite; otherwise an error wrapping ErrNonFinite that names what, the
// first bad value and how many rows hold one. The row of the k-th of ids
// is values[k*dim:(k+1)*dim] (len(values) must be len(ids)*dim); with ids
// nil, values is one vector (a dense range) and dim is ignored.
func CheckFinite(what string, ids []uint64, values []float32, dim int) error {
	if AllFinite(values) {
		return nil
	}
	if ids == nil {
		i := firstNonFinite(values)
		n := 0
		for _, v := range values {
			if !isFinite(v) {
				n++
			}
		}
		return fmt.Errorf("%w: %s: value %d is %v (%d of %d values are NaN or Inf)", ErrNonFinite, what, i, values[i], n, len(values))
	}
	bad, first, col := 0, -1, 0
	for k := range ids {
		if c := firstNonFinite(values[k*dim : (k+1)*dim]); c >= 0 {
			if bad == 0 {
				first, col = k, c
			}
			bad++
		}
	}
	return fmt.Errorf("%w: %s: id %d has %v in column %d (%d of %d rows hold a NaN or Inf)",
		ErrNonFinite, what, ids[first], values[first*dim+col], col, bad, len(ids))
}

// validateNonFinite checks NonFinite and NonFiniteBound.
func (s TableSpec) validateNonFinite() []error {
	var errs []error
	switch s.NonFinite {
	case NonFiniteRefuse, NonFiniteClip:
	default:
		errs = append(errs, fmt.Errorf("%w: table %q: nonfinite %q is not one of refuse, clip", ErrBadSpec, s.Name, s.NonFinite))
	}
	if !(s.NonFiniteBound > 0 && s.NonFiniteBound <= MaxNonFiniteBound) {
		errs = append(errs, fmt.Errorf("%w: table %q: nonfinite_bound %v must be in (0, %g]", ErrBadSpec, s.Name, s.NonFiniteBound, float32(MaxNonFiniteBound)))
	}
	return errs
}
