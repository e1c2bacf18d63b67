package ams

import (
	"math/bits"

	"github.com/xdlgo/xps/model/prefetch"
)

// emptySlot marks a free bucket of the index. It is never a valid slot, so
// every uint64 (0 included) is a valid feature ID.
const emptySlot = ^uint32(0)

// maxSlot is the largest slot a table hands out.
const maxSlot = emptySlot - 1

// indexSalt is XORed into an ID before mixing, so that the index's bucket
// choice is independent of a stripe split made on Mix64(id): without it every
// ID of one stripe would share the low bits of Mix64(id).
const indexSalt = 0x5851f42d4c957f2d

// minIndexCap is the smallest bucket count of a non-empty index.
const minIndexCap = 8

// index maps a feature ID to a uint32 slot. It is an open-addressing hash
// table with linear probing, a power-of-two bucket count and a load factor
// of at most 3/4; deletion shifts the following entries back (no
// tombstones), so probe sequences never lengthen with churn.
//
// Buckets are packed as three uint32s (key low, key high, slot) in one
// pointer-free slice: 12 bytes per bucket, one cache line touched per probe
// in the common case, nothing for the garbage collector to scan. A bucket
// holds its slot complemented (^slot, see slotOf), so a bucket of zeros is
// empty (^0 is emptySlot): a new array needs no pass to mark its buckets
// empty, and a mapped one (whose pages read as zero until written) becomes
// resident only as entries land in it. A resize places the old array's
// entries, which lie in bucket order, in the same order in the new one,
// and unmaps the old array a part at a time as it goes: while an index
// doubles, the two arrays together stay near the size of the new one.
//
// The bucket of id is the top log2(cap) bits of Mix64(id ^ indexSalt).
//
// The zero index is empty and ready to use. Not safe for concurrent use.
type index struct {
	b      []uint32 // 3 words per bucket
	shift  uint8    // 64 - log2(cap)
	mask   uint     // cap - 1
	n      int      // live entries
	growAt int      // grow when n reaches this
	mem    *region  // the mapped memory of b, nil when b is on the heap
}

// hashIndex returns the home bucket of id for the given shift.
func hashIndex(id uint64, shift uint8) uint {
	return uint(mix64(id^indexSalt) >> shift)
}

// indexCapFor returns the bucket count needed to hold n entries at a load
// of at most 3/4.
func indexCapFor(n int) int {
	c := minIndexCap
	for c*3/4 < n {
		c <<= 1
	}
	return c
}

func (x *index) len() int { return x.n }

// slotOf returns the slot held by the bucket whose words start at b[i]
// (emptySlot: empty).
func slotOf(b []uint32, i int) uint32 { return ^b[i+2] }

// capacity returns the number of buckets.
func (x *index) capacity() int { return len(x.b) / 3 }

// memoryBytes returns the bytes held by the bucket array.
func (x *index) memoryBytes() int64 { return int64(cap(x.b)) * 4 }

// get returns the slot of id.
func (x *index) get(id uint64) (uint32, bool) {
	i, ok := x.find(id)
	if !ok {
		return 0, false
	}
	return slotOf(x.b, int(3*i)), true
}

// find returns the bucket that holds id.
func (x *index) find(id uint64) (uint, bool) {
	if x.n == 0 {
		return 0, false
	}
	return x.probe(id)
}

// probe returns the bucket that holds id, or the empty bucket its probe
// sequence ends at (false). The index has at least one empty bucket.
func (x *index) probe(id uint64) (uint, bool) {
	lo, hi := uint32(id), uint32(id>>32)
	b := x.b
	i := hashIndex(id, x.shift)
	for {
		e := b[3*i : 3*i+3 : 3*i+3]
		if e[2] == 0 { // emptySlot, complemented
			return i, false
		}
		if e[0] == lo && e[1] == hi {
			return i, true
		}
		i = (i + 1) & x.mask
	}
}

// findOrPlace returns the slot of id, or, when id is missing, indexes it
// at slot next() in the empty bucket its probe ended at: one probe where
// a get then an insert would make two. The caller reserved room first
// (n < growAt), as no resize happens here.
func (x *index) findOrPlace(id uint64, next func() uint32) (uint32, bool) {
	i, ok := x.probe(id)
	e := x.b[3*i : 3*i+3 : 3*i+3]
	if ok {
		return ^e[2], true
	}
	if x.n >= x.growAt {
		panic("ams: index: findOrPlace without room")
	}
	s := next()
	e[0], e[1], e[2] = uint32(id), uint32(id>>32), ^s
	x.n++
	return s, false
}

// prefetch hints the CPU to load the home bucket of each of ids (see
// package prefetch), so that the gets that follow find them in cache: the
// hints have no branch on their result, so their misses are all in flight
// at once, while get's probe loop branches on each bucket it reads, which
// on a misprediction serialises the misses of consecutive gets.
func (x *index) prefetch(ids []uint64) {
	if x.n == 0 {
		return
	}
	b, shift := x.b, x.shift
	for _, id := range ids {
		prefetch.Uint32(&b[3*hashIndex(id, shift)+2])
	}
}

// insert adds id -> slot. id must not be present (the caller looked it up).
func (x *index) insert(id uint64, slot uint32) {
	if slot == emptySlot {
		panic("ams: index: slot 0xFFFFFFFF is reserved")
	}
	if x.n >= x.growAt {
		x.resize(indexCapFor(x.n + 1))
	}
	x.place(id, slot)
	x.n++
}

// place writes id -> slot into the first empty bucket of id's probe
// sequence, without checking load or presence.
func (x *index) place(id uint64, slot uint32) {
	b := x.b
	i := hashIndex(id, x.shift)
	for {
		e := b[3*i : 3*i+3 : 3*i+3]
		if e[2] == 0 { // empty
			e[0], e[1], e[2] = uint32(id), uint32(id>>32), ^slot
			return
		}
		if e[0] == uint32(id) && e[1] == uint32(id>>32) {
			panic("ams: index: duplicate insert")
		}
		i = (i + 1) & x.mask
	}
}

// reserve grows the bucket array so that n entries fit without a rehash.
func (x *index) reserve(n int) {
	if c := indexCapFor(n); c > x.capacity() {
		x.resize(c)
	}
}

// resize rehashes every entry into a new array of c buckets (a power of two
// with c*3/4 >= x.n).
func (x *index) resize(c int) {
	old, oldMem := x.b, x.mem
	// Large bucket arrays live in mapped huge pages, like the slab chunks
	// (see rowMemory). The new array is zero: every bucket empty.
	x.mem = nil
	if 12*c >= hugePage {
		x.mem = newRegion(12 * c)
	}
	if x.mem != nil {
		x.b = x.mem.uint32s(3 * c)
	} else {
		x.b = make([]uint32, 3*c)
	}
	x.shift = uint8(64 - bits.TrailingZeros(uint(c)))
	x.mask = uint(c - 1)
	x.growAt = c * 3 / 4
	released := 0 // bytes at the head of oldMem unmapped
	for i := 0; i < len(old); i += 3 {
		if s := slotOf(old, i); s != emptySlot {
			x.place(uint64(old[i])|uint64(old[i+1])<<32, s)
		}
		// The old array is read once, in order: give its memory back a
		// part at a time, whole huge pages behind the bucket just read.
		if oldMem != nil && 4*(i+3)-released >= resizeRelease {
			n := (4*(i+3) - released) &^ (hugePage - 1)
			oldMem.releaseHead(n)
			released += n
		}
	}
	oldMem.release()
}

// resizeRelease is how many bytes of the old array a resize reads before
// it unmaps them.
const resizeRelease = hugePage

// remove deletes id and returns its slot. Entries after the freed bucket
// that would no longer be reachable are shifted back into it.
func (x *index) remove(id uint64) (uint32, bool) {
	i, ok := x.find(id)
	if !ok {
		return 0, false
	}
	b := x.b
	slot := slotOf(b, int(3*i))
	// Backward-shift deletion: i is the hole. Walk j over the rest of the
	// cluster; an entry at j whose home h is not cyclically in (i, j] can
	// move into the hole, which then moves to j.
	j := i
	for {
		j = (j + 1) & x.mask
		if b[3*j+2] == 0 { // empty
			break
		}
		h := hashIndex(uint64(b[3*j])|uint64(b[3*j+1])<<32, x.shift)
		// distance from home to j, and from the hole to j (both mod cap)
		if (j-h)&x.mask >= (j-i)&x.mask {
			b[3*i], b[3*i+1], b[3*i+2] = b[3*j], b[3*j+1], b[3*j+2]
			i = j
		}
	}
	b[3*i+2] = 0 // empty
	x.n--
	return slot, true
}

// all calls fn for every (id, slot) in bucket order until fn returns false.
// fn must not modify the index.
func (x *index) all(fn func(id uint64, slot uint32) bool) {
	b := x.b
	for i := 0; i+2 < len(b); i += 3 {
		if s := slotOf(b, i); s != emptySlot {
			if !fn(uint64(b[i])|uint64(b[i+1])<<32, s) {
				return
			}
		}
	}
}
