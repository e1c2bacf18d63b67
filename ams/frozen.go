package ams

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/xdlgo/xps/model/prefetch"
)

// Frozen is a table for serving: rows loaded once in id order and looked
// up, their values changed in place, rarely added or removed. Where a
// Table spends about 30 bytes a row beyond its values (a hash index at
// most 3/4 full, the rows' optimizer statistics, the slabs' room), a
// Frozen spends 6 and a bit: it keeps each run of rows (one per export
// file, each sorted by id) as three arrays outside the Go heap, the
// values, and the ids' low 48 bits in 6 bytes, and per run the offsets
// of the 2^16 buckets of the ids' top 16 bits. A lookup reads the
// bucket's two offsets, then searches the bucket's ids (about 21 for a run
// of 1.4M rows, hashed ids spreading evenly: in one or two cache lines);
// Pull overlaps the lookups of a group of ids with prefetch hints, as
// Table.Pull does. A Frozen of several runs searches each in turn: load
// one run (serve merges an export's files by id) where lookups matter. The rows a caller adds later (Set of an id not loaded) go to
// an overlay, a Table of the same spec; a loaded row deleted is marked
// in a bitmap and reads, like any id without a row, as the overlay's
// initializer makes it.
//
// Invariants:
//
//  1. Within a run the ids are strictly increasing: Append refuses
//     others (an export file is sorted; a file out of order is damaged).
//  2. An id is in at most one place: loaded (in one run, dead or not) or
//     in the overlay. Set and Delete find a loaded id first.
//  3. At most the capacity given to NewFrozen is loaded: the arrays are
//     sized once and never grow or move.
//
// Frozen is not safe for concurrent use with its writers (Append, Set,
// Delete); Pull, Len and MemoryBytes may run concurrently with each
// other.
type Frozen struct {
	dim  int
	cap  int
	n    int       // rows loaded
	vals []float32 // cap rows of dim values, run after run
	keys []byte    // each row's id's low 48 bits, 6 bytes little-endian
	runs []frozenRun
	// The open run (the last of runs, when open): the last bucket whose
	// offset is set, the last id appended.
	open bool
	cur  int
	last uint64
	dead []uint64 // a bit per row, nil until the first Delete of one
	ndel int      // dead rows
	over *Table   // rows added after loading
	mem  rowMemory
}

// frozenRun is one sorted run of rows [start, end): off[b] is the first
// row of bucket b (the ids whose top 16 bits are b), off[1<<16] == end.
type frozenRun struct {
	start, end int
	off        []uint32
}

// bucketBits is the width of a bucket's key: the ids' top bits, which
// the rows' stored id bits (48) leave out.
const (
	bucketBits  = 16
	bucketShift = 64 - bucketBits
)

// NewFrozen returns an empty Frozen of spec for at most rows loaded
// rows. The spec's optimizer is ignored (a Frozen is not trained).
func NewFrozen(spec TableSpec, rows int) (*Frozen, error) {
	spec.Optimizer = OptimizerSpec{Name: OptSGD}
	over, err := NewTable(spec)
	if err != nil {
		return nil, err
	}
	if rows < 0 || rows > 1<<32-1 {
		return nil, fmt.Errorf("ams: a frozen table of %d rows (at most 2^32-1)", rows)
	}
	f := &Frozen{dim: over.Dim(), cap: rows, over: over}
	f.alloc()
	return f, nil
}

// alloc sizes the arrays: in one mapped range when they are large (one
// range rounded up to huge pages, not two), else on the heap.
func (f *Frozen) alloc() {
	nv := (f.cap*f.dim*4 + chunkAlign - 1) &^ (chunkAlign - 1)
	if total := nv + f.cap*keyBytes; total >= minMappedChunk {
		if b := f.mem.alloc(total); b != nil {
			f.vals = unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), f.cap*f.dim)
			f.keys = b[nv : nv+f.cap*keyBytes : nv+f.cap*keyBytes]
			return
		}
	}
	f.vals, f.keys = make([]float32, f.cap*f.dim), make([]byte, f.cap*keyBytes)
}

// keyBytes is the bytes of a row's stored id: its low 48 bits.
const keyBytes = 6

// key returns row i's stored id bits.
func (f *Frozen) key(i int) uint64 {
	k := f.keys[i*keyBytes : i*keyBytes+keyBytes]
	return uint64(binary.LittleEndian.Uint32(k)) | uint64(binary.LittleEndian.Uint16(k[4:]))<<32
}

// Release gives the loaded rows' memory back to the system now, rather
// than when the Frozen becomes unreachable: a server drops the model it
// replaced at once. The Frozen must not be used afterwards (its memory is
// unmapped: a Pull would fault).
func (f *Frozen) Release() {
	for _, r := range f.mem.regions {
		r.release()
	}
	f.mem = rowMemory{}
	f.vals, f.keys, f.runs, f.dead = nil, nil, nil, nil
	f.n, f.ndel, f.cap = 0, 0, 0
}

// Dim is the rows' width.
func (f *Frozen) Dim() int { return f.dim }

// Spec is the table's spec (its optimizer SGD).
func (f *Frozen) Spec() TableSpec { return f.over.Spec() }

// Len returns the rows held: loaded and not deleted, and added.
func (f *Frozen) Len() int { return f.n - f.ndel + f.over.Len() }

// StartRun begins a new run: the rows Appended next, in increasing id
// order, up to the next StartRun or the first Set or Delete.
func (f *Frozen) StartRun() {
	f.endRun()
	r := frozenRun{start: f.n, end: f.n, off: make([]uint32, 1<<bucketBits+1)}
	r.off[0] = uint32(f.n)
	f.runs, f.open, f.cur = append(f.runs, r), true, 0
}

// endRun completes the open run's offsets, if a run is open.
func (f *Frozen) endRun() {
	if !f.open {
		return
	}
	r := &f.runs[len(f.runs)-1]
	for f.cur < 1<<bucketBits {
		f.cur++
		r.off[f.cur] = uint32(r.end)
	}
	f.open = false
}

// Append loads the row of id with values v (len Dim) at the end of the
// open run: id must be above the run's ids before (invariant 1), and at
// most the capacity rows loaded (invariant 3).
func (f *Frozen) Append(id uint64, v []float32) error {
	switch {
	case !f.open:
		return fmt.Errorf("ams: frozen table %q: a row appended outside a run", f.over.spec.Name)
	case len(v) != f.dim:
		return fmt.Errorf("ams: frozen table %q: a row of %d values, want %d", f.over.spec.Name, len(v), f.dim)
	case f.n == f.cap:
		return fmt.Errorf("ams: frozen table %q: more rows than its %d", f.over.spec.Name, f.cap)
	}
	r := &f.runs[len(f.runs)-1]
	if r.end > r.start && id <= f.last {
		return fmt.Errorf("ams: frozen table %q: id %#x after %#x: a run's ids must increase", f.over.spec.Name, id, f.last)
	}
	for b := int(id >> bucketShift); f.cur < b; {
		f.cur++
		r.off[f.cur] = uint32(f.n)
	}
	copy(f.vals[f.n*f.dim:], v)
	k := f.keys[f.n*keyBytes:]
	binary.LittleEndian.PutUint32(k, uint32(id))
	binary.LittleEndian.PutUint16(k[4:], uint16(id>>32))
	f.n, r.end, f.last = f.n+1, r.end+1, id
	return nil
}

// find returns the row of id among the loaded ones, dead or not, or -1.
func (f *Frozen) find(id uint64) int {
	for i := range f.runs {
		lo, hi := f.bucket(i, id)
		if row := f.search(lo, hi, id); row >= 0 {
			return row
		}
	}
	return -1
}

// bucket returns the rows [lo, hi) of run i that hold id's bucket.
func (f *Frozen) bucket(i int, id uint64) (lo, hi int) {
	r := &f.runs[i]
	b := int(id >> bucketShift)
	lo, hi = int(r.off[b]), int(r.off[b+1])
	if f.open && i == len(f.runs)-1 { // offsets set up to bucket cur only
		switch {
		case b > f.cur:
			lo, hi = r.end, r.end
		case b == f.cur:
			hi = r.end
		}
	}
	return lo, hi
}

// search returns the row of id among rows [lo, hi) of one bucket, or -1:
// a binary search down to a few rows, then a scan.
func (f *Frozen) search(lo, hi int, id uint64) int {
	key := id & (1<<bucketShift - 1)
	for hi-lo > 8 { // [lo, hi) keeps the first row whose key is >= key
		m := int(uint(lo+hi) >> 1)
		if f.key(m) < key {
			lo = m + 1
		} else {
			hi = m + 1
		}
	}
	for ; lo < hi; lo++ {
		if k := f.key(lo); k >= key {
			if k == key {
				return lo
			}
			return -1
		}
	}
	return -1
}

func (f *Frozen) isDead(row int) bool {
	return f.dead != nil && f.dead[row/64]&(1<<(row%64)) != 0
}

// Pull copies the rows of ids into out (len(ids)*Dim): a loaded row's
// values, else the overlay's row or the initializer's values.
func (f *Frozen) Pull(ids []uint64, out []float32) {
	if len(out) != len(ids)*f.dim {
		panic(fmt.Sprintf("ams: Frozen.Pull: len(out)=%d for %d ids of dim %d", len(out), len(ids), f.dim))
	}
	var rows [rowGroup]int
	for lo := 0; lo < len(ids); lo += rowGroup {
		grp := ids[lo:min(lo+rowGroup, len(ids))]
		f.lookupGroup(grp, &rows)
		for k := range grp {
			dst := out[(lo+k)*f.dim : (lo+k+1)*f.dim]
			if row := rows[k]; row >= 0 && !f.isDead(row) {
				copy(dst, f.vals[row*f.dim:(row+1)*f.dim])
				continue
			}
			f.over.Pull(ids[lo+k:lo+k+1], dst, false, 0)
		}
	}
}

// lookupGroup finds the rows of ids (at most rowGroup) into rows (-1:
// none), in stages that each hint the next's memory for all the group
// first: the buckets' ids, then the rows found.
func (f *Frozen) lookupGroup(ids []uint64, rows *[rowGroup]int) {
	if len(f.runs) != 1 {
		for k, id := range ids {
			rows[k] = f.find(id)
		}
		return
	}
	var lo, hi [rowGroup]int
	for k, id := range ids {
		lo[k], hi[k] = f.bucket(0, id)
		if lo[k] < hi[k] {
			prefetch.Bytes(f.keys[lo[k]*keyBytes : hi[k]*keyBytes])
		}
	}
	for k, id := range ids {
		rows[k] = f.search(lo[k], hi[k], id)
		if rows[k] >= 0 {
			prefetch.Float32s(f.vals[rows[k]*f.dim : (rows[k]+1)*f.dim])
		}
	}
}

// Set makes v (len Dim) the row of id: a loaded row's values in place
// (undeleting it), else the overlay's row. It ends the open run.
func (f *Frozen) Set(id uint64, v []float32) error {
	if len(v) != f.dim {
		return fmt.Errorf("ams: frozen table %q: a row of %d values, want %d", f.over.spec.Name, len(v), f.dim)
	}
	f.endRun()
	if row := f.find(id); row >= 0 {
		copy(f.vals[row*f.dim:(row+1)*f.dim], v)
		if f.isDead(row) {
			f.dead[row/64] &^= 1 << (row % 64)
			f.ndel--
		}
		return nil
	}
	return f.over.Load(id, v, nil, 0, 0)
}

// Delete removes the row of id: a loaded one is marked dead, an added
// one leaves the overlay. It reports whether there was one. It ends the
// open run.
func (f *Frozen) Delete(id uint64) bool {
	f.endRun()
	row := f.find(id)
	if row < 0 {
		return f.over.Delete(id)
	}
	if f.isDead(row) {
		return false
	}
	if f.dead == nil {
		f.dead = make([]uint64, (f.cap+63)/64)
	}
	f.dead[row/64] |= 1 << (row % 64)
	f.ndel++
	return true
}

// MemoryBytes returns the memory the table holds: its arrays at their
// capacity, the runs' offsets, the dead rows' bitmap and the overlay.
func (f *Frozen) MemoryBytes() int64 {
	n := int64(cap(f.vals))*4 + int64(cap(f.keys)) + int64(cap(f.dead))*8
	for _, r := range f.runs {
		n += int64(cap(r.off)) * 4
	}
	return n + f.over.MemoryBytes()
}
