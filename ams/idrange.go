package ams

import (
	"math"
	"math/bits"
)

// IDRange is the ids from Lo to Hi, both included.
type IDRange struct{ Lo, Hi uint64 }

// AllIDs is the range of every id.
var AllIDs = IDRange{0, math.MaxUint64}

// idBuckets is how many buckets an IDHistogram counts in.
const idBuckets = 1 << 16

// IDHistogram counts ids in idBuckets buckets of consecutive ids: what a
// snapshot cuts a table's ids into ranges of bounded size by, so that it
// lists and sorts one range at a time (a RowSet of a range costs 24 bytes
// a row of it, with its sort's scratch, instead of 24 bytes a row of the
// table). The buckets span [lo, hi], the bounds given to NewIDHistogram;
// an id below lo counts in the first bucket and one above hi in the last.
//
// Invariants:
//
//  1. Buckets are in id order: bucket(a) <= bucket(b) whenever a <= b.
//  2. The buckets span the bits in which lo and hi differ: the ids of
//     [lo, hi] share every higher bit, and the top 16 of the rest (all
//     of them when fewer) number the bucket, relative to lo's.
type IDHistogram struct {
	base   uint64 // lo >> shift
	shift  uint
	counts []uint32
}

// NewIDHistogram returns an empty histogram of the ids from lo to hi
// (lo <= hi; IDBounds gives a table's).
func NewIDHistogram(lo, hi uint64) *IDHistogram {
	shift := max(0, bits.Len64(lo^hi)-16)
	return &IDHistogram{base: lo >> shift, shift: uint(shift), counts: make([]uint32, idBuckets)}
}

// bucket returns the bucket of id.
func (h *IDHistogram) bucket(id uint64) int {
	v := id >> h.shift
	switch {
	case v < h.base:
		return 0
	case v-h.base >= idBuckets:
		return idBuckets - 1
	}
	return int(v - h.base)
}

// bucketRange returns the ids of buckets [a, b], the first from 0 and the
// last to the largest id (invariant 1 keeps every id in some bucket).
func (h *IDHistogram) bucketRange(a, b int) IDRange {
	rg := IDRange{(h.base + uint64(a)) << h.shift, (h.base+uint64(b)+1)<<h.shift - 1}
	if a == 0 {
		rg.Lo = 0
	}
	if b == idBuckets-1 {
		rg.Hi = math.MaxUint64
	}
	return rg
}

// Add adds o's counts to h; both were made with the same bounds.
func (h *IDHistogram) Add(o *IDHistogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// Ranges cuts every id into consecutive ranges, in order, each holding at
// most limit of the ids counted (or one bucket, when a bucket alone holds
// more). A range starts only at a bucket with ids in it: one past the
// bucket of the largest id might not be a number (lo and hi near 2^64).
func (h *IDHistogram) Ranges(limit int) []IDRange {
	var out []IDRange
	from, n := 0, 0
	for b, c := range h.counts {
		if c > 0 && n > 0 && n+int(c) > limit {
			out = append(out, h.bucketRange(from, b-1))
			from, n = b, 0
		}
		n += int(c)
	}
	return append(out, h.bucketRange(from, idBuckets-1))
}

// Count returns how many of the ids counted lie in rg, a range Ranges
// gave.
func (h *IDHistogram) Count(rg IDRange) int {
	n := 0
	for _, c := range h.counts[h.bucket(rg.Lo) : h.bucket(rg.Hi)+1] {
		n += int(c)
	}
	return n
}

// IDBounds returns the smallest and the largest id of t's rows; ok is
// false when t has none. It reads the index once, sequentially.
func (t *Table) IDBounds() (lo, hi uint64, ok bool) {
	lo = math.MaxUint64
	t.idx.all(func(id uint64, _ uint32) bool {
		lo, hi = min(lo, id), max(hi, id)
		return true
	})
	return lo, hi, t.idx.len() > 0
}

// CountIDs counts the ids of t's rows in h. It reads the index once,
// sequentially.
func (t *Table) CountIDs(h *IDHistogram) {
	t.idx.all(func(id uint64, _ uint32) bool {
		h.counts[h.bucket(id)]++
		return true
	})
}
