package ams

import (
	"encoding/binary"
	"slices"

	"github.com/xdlgo/xps/model/prefetch"
)

// RowSet is a list of ids in increasing order with where each one's row
// lives in a Table (its slot, or none): what a snapshot or an export
// writes, a chunk at a time, in id order. A Table fills it (SortedRowsIn,
// LocateRows) and encodes its rows (AppendSnapshotRows, EachRowValues) by
// slot, without looking each id up again: written in id order, every row
// would otherwise cost two dependent cache misses, the index bucket and
// then the row, which made a snapshot's encoding CPU-bound (BENCHMARKS,
// "Snapshot write and restore throughput").
//
// Invariants:
//
//  1. IDs strictly increase.
//  2. Slots stay right as long as the table frees no slot: rows created
//     since keep every existing slot (the slab never moves a row), but a
//     Delete frees one that a later creation reuses. A RowSet remembers
//     the table's count of freed slots; the methods that read rows
//     through it look its ids up again when that count moved, so a
//     RowSet never reads another id's row.
//  3. The zero RowSet is empty and ready to fill.
//
// Not safe for concurrent use; it belongs to the owner of its table's
// stripe, as the table does.
type RowSet struct {
	ids   []uint64
	slots []uint32 // emptySlot: no row in the table
	frees uint64   // the table's frees when the slots were taken
	// the radix sort's scratch, kept so that a set filled one id range
	// after another allocates once
	sortIDs   []uint64
	sortSlots []uint32
}

// IDs returns the set's ids, in increasing order. The slice aliases the
// set: valid until it is filled again.
func (r *RowSet) IDs() []uint64 { return r.ids }

// Len is the number of ids.
func (r *RowSet) Len() int { return len(r.ids) }

// SortedRowsIn fills r with the rows of t whose ids lie in rg, in id
// order. The index is read in bucket order (sequentially) and the (id,
// slot) pairs are sorted with a radix sort, so no row and no bucket is
// visited at random. n is how many rows rg holds, as far as the caller
// knows (IDHistogram.Count): r grows to it at once, so that a set filled
// range after range allocates only for the largest.
func (t *Table) SortedRowsIn(r *RowSet, rg IDRange, n int) {
	r.ids, r.slots = listRange(t.idx.b, rg, r.ids[:0], r.slots[:0], n)
	r.frees = t.frees
	r.sort()
}

// listBlock is how many buckets listRange reads between checks of its
// lists' room.
const listBlock = 1024

// listRange appends to ids and slots the id and slot of every bucket of
// the index array b whose id is in rg, in bucket order, with room made
// for n of them (the caller's count of rg's ids) and a block more. It
// stores every bucket's pair and advances past those out of rg or empty
// without a branch on them: in a range of a tenth of a table, a branch
// per bucket on whether it is empty and in the range mispredicts often
// enough to cost several times the scan's reads (BENCHMARKS, "Issue 30,
// step 5").
func listRange(b []uint32, rg IDRange, ids []uint64, slots []uint32, n int) ([]uint64, []uint32) {
	ids, slots = slices.Grow(ids, n+listBlock), slices.Grow(slots, n+listBlock)
	lo, span := rg.Lo, rg.Hi-rg.Lo
	for start := 0; start < len(b)/3; start += listBlock {
		blk := b[3*start : 3*min(start+listBlock, len(b)/3)]
		ids, slots = slices.Grow(ids, len(blk)/3), slices.Grow(slots, len(blk)/3)
		k := len(ids)
		is, ss := ids[k:k+len(blk)/3], slots[k:k+len(blk)/3]
		j := 0
		for i := 0; i+2 < len(blk); i += 3 {
			id := uint64(blk[i]) | uint64(blk[i+1])<<32
			is[j], ss[j] = id, ^blk[i+2]
			keep := 0
			if id-lo <= span {
				keep = 1
			}
			if blk[i+2] == 0 { // empty: slotOf is emptySlot
				keep = 0
			}
			j += keep
		}
		ids, slots = ids[:k+j], slots[:k+j]
	}
	return ids, slots
}

// LocateRows fills r with ids (in increasing order, no duplicates: the
// caller sorted them) and the slot of each, or none for an id without a
// row in t.
func (t *Table) LocateRows(r *RowSet, ids []uint64) {
	r.ids = append(r.ids[:0], ids...)
	r.slots = slices.Grow(r.slots[:0], len(ids))[:len(ids)]
	t.locate(r.ids, r.slots)
	r.frees = t.frees
}

// locate writes the slot of each of ids into slots (emptySlot: missing),
// a group of rowGroup lookups at a time with the next group's index lines
// prefetched, as pull does.
func (t *Table) locate(ids []uint64, slots []uint32) {
	var grp [rowGroup]uint32
	t.idx.prefetch(ids[:min(rowGroup, len(ids))])
	for lo := 0; lo < len(ids); lo += rowGroup {
		hi := min(lo+rowGroup, len(ids))
		if hi < len(ids) {
			t.idx.prefetch(ids[hi:min(hi+rowGroup, len(ids))])
		}
		t.lookupPrefetched(ids[lo:hi], &grp)
		copy(slots[lo:hi], grp[:hi-lo])
	}
}

// MergeAbsent adds to r the ids of extra (in increasing order; duplicates
// and ids r already holds are dropped) as ids without a row: a tiered
// table's rows on disk, which a snapshot writes among those in DRAM.
func (r *RowSet) MergeAbsent(extra []uint64) {
	if len(extra) == 0 {
		return
	}
	ids := make([]uint64, 0, len(r.ids)+len(extra))
	slots := make([]uint32, 0, cap(ids))
	i, j := 0, 0
	for i < len(r.ids) || j < len(extra) {
		switch {
		case j == len(extra) || (i < len(r.ids) && r.ids[i] < extra[j]):
			ids, slots = append(ids, r.ids[i]), append(slots, r.slots[i])
			i++
		case i < len(r.ids) && r.ids[i] == extra[j]:
			j++ // in DRAM already: that row is the current one
		default:
			if len(ids) == 0 || ids[len(ids)-1] != extra[j] {
				ids, slots = append(ids, extra[j]), append(slots, emptySlot)
			}
			j++
		}
	}
	r.ids, r.slots = ids, slots
}

// refresh looks r's ids [lo, hi) up again when t freed a slot since r
// took them (invariant 2).
func (t *Table) refresh(r *RowSet, lo, hi int) {
	if r.frees != t.frees {
		t.locate(r.ids[lo:hi], r.slots[lo:hi])
	}
}

// rowAhead is how many rows ahead of the one being read eachSlot
// prefetches: enough misses in flight to cover the latency (4 and 16 did
// no better on a 10M-row snapshot).
const rowAhead = 8

// AppendSnapshotRows appends the encoding (AppendSnapshotRow's) of the
// rows of r's ids [lo, hi) to dst, SnapshotRowBytes each, in order, and
// appends to missing the position (counted from lo) of each id without a
// row in t, whose bytes it leaves zero for the caller to fill or drop.
func (t *Table) AppendSnapshotRows(dst []byte, r *RowSet, lo, hi int, missing []int) ([]byte, []int) {
	n := t.SnapshotRowBytes()
	off := len(dst)
	dst = slices.Grow(dst, n*(hi-lo))[:off+n*(hi-lo)]
	t.eachSlot(r, lo, hi, func(k int, slot uint32) {
		out := dst[off+k*n : off+(k+1)*n : off+(k+1)*n]
		if slot == emptySlot {
			clear(out)
			missing = append(missing, k)
			return
		}
		putRow(out, t.rows.row(slot))
	})
	return dst, missing
}

// EachRowValues calls fn for r's ids [lo, hi) in order, with k counted
// from lo and the row's values, or ok false (and no values) for an id
// without a row in t. The values alias the table's storage (see Get) and
// are valid during the call only.
func (t *Table) EachRowValues(r *RowSet, lo, hi int, fn func(k int, values []float32, ok bool)) {
	t.eachSlot(r, lo, hi, func(k int, slot uint32) {
		if slot == emptySlot {
			fn(k, nil, false)
			return
		}
		w, _, _ := t.split(t.rows.row(slot))
		fn(k, w, true)
	})
}

// eachSlot calls fn with the slot of each of r's ids [lo, hi) in order (k
// counted from lo; emptySlot: no row), having looked them up again if t
// freed a slot since r took them (invariant 2), and with the row
// rowAhead ids on prefetched, so that the rows' misses overlap.
func (t *Table) eachSlot(r *RowSet, lo, hi int, fn func(k int, slot uint32)) {
	t.refresh(r, lo, hi)
	slots := r.slots[lo:hi]
	for _, slot := range slots[:min(rowAhead, len(slots))] {
		t.prefetchSlot(slot)
	}
	for k, slot := range slots {
		if k+rowAhead < len(slots) {
			t.prefetchSlot(slots[k+rowAhead])
		}
		fn(k, slot)
	}
}

func (t *Table) prefetchSlot(slot uint32) {
	if slot != emptySlot {
		prefetch.Float32s(t.rows.row(slot))
	}
}

// putRow writes a slab row (values, state, statistics) into out as the
// snapshot encoding: little-endian 32-bit words, which on a little-endian
// machine are the row's own bytes.
func putRow(out []byte, row []float32) {
	if nativeLittle {
		copy(out, floatBytes(row))
		return
	}
	for i, w := range rowWords(row) {
		binary.LittleEndian.PutUint32(out[4*i:], w)
	}
}

// sort sorts the (id, slot) pairs by id (see radixSort), with r's
// scratch.
func (r *RowSet) sort() {
	if n := len(r.ids); n >= radixMin && cap(r.sortIDs) < n {
		r.sortIDs, r.sortSlots = make([]uint64, max(n, cap(r.ids))), make([]uint32, max(n, cap(r.ids)))
	}
	radixSort(r.ids, r.slots, r.sortIDs, r.sortSlots)
}

// SortIDs sorts ids in increasing order, with radixSort: on the random
// 64-bit ids of a table it takes a fraction of a comparison sort's time.
func SortIDs(ids []uint64) { radixSort(ids, nil, nil, nil) }

// radixMin is the shortest list radixSort sorts by radix: shorter ones
// take an insertion sort.
const radixMin = 256

// radixSort sorts ids increasing and moves slots (nil, or as long as ids)
// along: a least-significant-digit radix sort, a byte per pass, that skips
// the passes where every id has the same byte (small ids have no high
// bytes to sort); small lists use an insertion sort. scratchIDs and
// scratchSlots (for slots) are used when long enough, and made otherwise.
func radixSort(ids []uint64, slots []uint32, scratchIDs []uint64, scratchSlots []uint32) {
	if len(ids) < radixMin {
		sortPairs(ids, slots)
		return
	}
	var counts [8][256]int
	for _, id := range ids {
		for d := range counts {
			counts[d][byte(id>>(8*d))]++
		}
	}
	if len(scratchIDs) < len(ids) {
		scratchIDs = make([]uint64, len(ids))
	}
	src, dst := ids, scratchIDs[:len(ids)]
	var srcS, dstS []uint32
	if slots != nil {
		if len(scratchSlots) < len(ids) {
			scratchSlots = make([]uint32, len(ids))
		}
		srcS, dstS = slots, scratchSlots[:len(ids)]
	}
	for d := range counts {
		c := &counts[d]
		shift := 8 * d
		if c[byte(src[0]>>shift)] == len(src) {
			continue // every id has this byte: the pass would move nothing
		}
		sum := 0
		for v, k := range c {
			c[v] = sum
			sum += k
		}
		if slots == nil {
			for _, id := range src {
				b := byte(id >> shift)
				dst[c[b]] = id
				c[b]++
			}
		} else {
			for k, id := range src {
				b := byte(id >> shift)
				dst[c[b]], dstS[c[b]] = id, srcS[k]
				c[b]++
			}
		}
		src, dst, srcS, dstS = dst, src, dstS, srcS
	}
	if &src[0] != &ids[0] {
		copy(ids, src)
		copy(slots, srcS)
	}
}

// sortPairs sorts ids increasing, moving slots (nil, or as long as ids)
// along: an insertion sort, for short lists only.
func sortPairs(ids []uint64, slots []uint32) {
	if slots == nil {
		slices.Sort(ids)
		return
	}
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
			slots[j], slots[j-1] = slots[j-1], slots[j]
		}
	}
}
