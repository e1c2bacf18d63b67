package slide

import (
	"fmt"
	"math/bits"
	"sync"
)

// hadamard is SimHash with structured projections, for the inference
// tables (see inferIndex): a vector is zero-padded to P = 2^p >= Dim
// values and each block b of P bits is the sign pattern of H D2_b H D1_b v,
// where H is the P x P Walsh-Hadamard transform (unnormalised) and D1_b,
// D2_b are random ±1 diagonals; bit i of the K*L is bit i%P of block i/P,
// and table t's code is bits t*K .. t*K+K-1 (bit j of the code is bit
// t*K+j). Each bit is the sign of a projection onto a ±1-weighted
// direction, as with dense SimHash, but the P projections of a block are
// orthogonal and cost O(P log P) together instead of O(P*Dim): hashing
// for 4096 tables of 1 bit over 514 values takes 4 blocks of two 1024-point
// transforms. Two rounds mix a vector concentrated on a few coordinates
// (such as the norm coordinate of inferIndex's rows) over all of them.
type hadamard struct {
	dim, k, l int
	p, blocks int
	sign      []float32 // blocks x 2 x P: D1_b then D2_b
	scratch   sync.Pool // *[]float32 of P
}

// newHadamard draws a family for vectors of length dim with l codes of k
// bits; it is a deterministic function of its arguments.
func newHadamard(dim, k, l int, seed uint64) (*hadamard, error) {
	if err := checkFamilyShape(dim, k, l); err != nil {
		return nil, fmt.Errorf("%w: hadamard: %w", ErrBadConfig, err)
	}
	p := 1 << bits.Len(uint(dim-1))
	h := &hadamard{dim: dim, k: k, l: l, p: p, blocks: (k*l + p - 1) / p}
	h.sign = make([]float32, h.blocks*2*p)
	r := newRNG(seed, 0x4d, 0)
	for i := range h.sign {
		h.sign[i] = float32(int(r.Next()>>63)*2 - 1)
	}
	h.scratch.New = func() any { b := make([]float32, p); return &b }
	return h, nil
}

func (h *hadamard) Dim() int { return h.dim }
func (h *hadamard) K() int   { return h.k }
func (h *hadamard) L() int   { return h.l }

// Hash implements Family.
func (h *hadamard) Hash(v []float32, out []uint32) {
	if len(v) != h.dim || len(out) != h.l {
		panic(fmt.Sprintf("slide: hadamard.Hash: len(v) %d, len(out) %d for dim %d, L %d", len(v), len(out), h.dim, h.l))
	}
	bp := h.scratch.Get().(*[]float32)
	buf := *bp
	clear(out)
	nbits := h.k * h.l
	for b := 0; b < h.blocks; b++ {
		d1 := h.sign[(2*b)*h.p : (2*b+1)*h.p]
		d2 := h.sign[(2*b+1)*h.p : (2*b+2)*h.p]
		for i, x := range v {
			buf[i] = x * d1[i]
		}
		clear(buf[h.dim:])
		fwht(buf)
		for i := range buf {
			buf[i] *= d2[i]
		}
		fwht(buf)
		lo := b * h.p
		for i, y := range buf[:min(h.p, nbits-lo)] {
			bit := lo + i
			out[bit/h.k] |= nonNegative(y) << (bit % h.k)
		}
	}
	h.scratch.Put(bp)
}

// fwht applies the unnormalised Walsh-Hadamard transform to a (len a power
// of two) in place.
func fwht(a []float32) {
	n := len(a)
	for h := 1; h < n; h <<= 1 {
		for i := 0; i < n; i += 2 * h {
			x, y := a[i:i+h], a[i+h:i+2*h]
			for j := range x {
				u, v := x[j], y[j]
				x[j], y[j] = u+v, u-v
			}
		}
	}
}

// hadamardCost is the work of hashing one vector of length dim into k*l
// bits with a hadamard family, in additions.
func hadamardCost(dim, k, l int) float64 {
	p := 1 << bits.Len(uint(dim-1))
	blocks := (k*l + p - 1) / p
	return float64(blocks) * (2*float64(p)*float64(bits.Len(uint(p))) + 3*float64(p))
}
