package ams

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/xdlgo/xps/model/prefetch"
)

// Table is the storage of one sparse table in one stripe: an index from
// feature ID to slot, and one pointer-free slab whose row at a slot holds,
// side by side, the Dim values, the optimizer state and the two statistics
// (last-touched time, hit count), so that a push touches one contiguous
// block of memory besides the index entry. Deleted slots go onto a free
// list and are reused, most recently freed first, before the slab grows.
//
// Row layout (d = Dim, sw = the optimizer's StateWidth(d)), in float32
// words:
//
//	[0, d)            values
//	[d, d+sw)         optimizer state
//	d+sw              last-touched time  (uint32 bits)
//	d+sw+1            hit count          (uint32 bits)
//	d+sw+2            last-update step   (uint32 bits: the owner's sample
//	                  clock, in units of StepUnit samples, modulo 2^32)
//
// The three statistics words are read and written only as uint32 through
// statsOf, an unsafe view of the same memory (float32 and uint32 have the
// same size and alignment, and the slab holds no pointers); no float32
// operation ever sees them, so every bit pattern survives.
//
// A Table is not safe for concurrent use: the goroutine that owns the
// stripe calls every method (see the package doc).
//
// Batch methods panic when the lengths of their arguments disagree with
// each other or with Dim: that is a broken contract of the caller, which
// checks input from outside with CheckBatch first.
type Table struct {
	spec TableSpec
	dim  int // d: values per row
	sw   int // optimizer state words per row
	opt  Optimizer
	init initializer
	idx  index
	rows slab[float32] // width d+sw+2: values, state, statistics
	next uint32        // slots [0, next) have been handed out
	free []uint32      // deleted slots, reused last-in first-out
	// frees counts the slots Delete freed, ever (see RowSet, invariant 2).
	frees uint64
	// dirty holds a mark per slot, set by pushes (see dirty.go).
	dirty []uint64
	// shadow holds a mark per slot, set by a tiered table's shard (see
	// dirty.go), as long as dirty.
	shadow []uint64

	// step is the sample clock that creations and pushes stamp on their
	// rows (SetStep); admit, when set, decides which missing IDs earn a
	// row (EnableAdmission); cnt counts what the table did.
	step  uint32
	admit *admission
	cnt   Counters

	// clip is the spec's NonFinite policy (true: clip, false: refuse),
	// bound its NonFiniteBound; clipped holds a clipped gradient row.
	clip    bool
	bound   float32
	clipped []float32
}

// Indexes into the statistics words of a row (see statsOf).
const (
	statTouched = 0
	statHits    = 1
	statStep    = 2
	statWords   = 3
)

// statsOf returns the statistics words at the end of a slab row as
// uint32s, aliasing the row.
func statsOf(row []float32) *[statWords]uint32 {
	return (*[statWords]uint32)(unsafe.Pointer(&row[len(row)-statWords]))
}

// split returns the values, the state and the statistics of a slab row.
// The slices are capped at their own length.
func (t *Table) split(row []float32) (values, state []float32, st *[statWords]uint32) {
	d, e := t.dim, t.dim+t.sw
	return row[:d:d], row[d:e:e], statsOf(row)
}

// NewTable returns an empty table. It applies the defaults to a copy of
// spec and fails with an error wrapping ErrBadSpec when it is invalid.
func NewTable(spec TableSpec) (*Table, error) {
	spec.EnsureDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	opt, err := spec.Optimizer.New()
	if err != nil {
		return nil, err
	}
	in, err := spec.Init.compile()
	if err != nil {
		return nil, err
	}
	sw := opt.StateWidth(spec.Dim)
	return &Table{
		spec:  spec,
		dim:   spec.Dim,
		sw:    sw,
		opt:   opt,
		init:  in,
		rows:  newSlab[float32](spec.Dim + sw + statWords),
		clip:  spec.NonFinite == NonFiniteClip,
		bound: spec.NonFiniteBound,
	}, nil
}

// SetStep moves the sample clock (in StepUnit samples) that creations and
// pushes stamp on their rows forward to step; a step behind the table's
// (by less than 2^31 units, modulo 2^32) leaves it alone: requests reach
// an owner out of order (a worker's pull of its next batch, taken before
// the push of the last one advanced the clock, may come after it), and a
// clock that went back would make rows look 2^32 units old.
func (t *Table) SetStep(step uint32) {
	if int32(step-t.step) > 0 {
		t.step = step
	}
}

// Step returns the sample clock SetStep set last.
func (t *Table) Step() uint32 { return t.step }

// Counters returns what the table did since it was made.
func (t *Table) Counters() Counters { return t.cnt }

// Spec returns the table's spec, defaults applied.
func (t *Table) Spec() TableSpec { return t.spec }

// Dim returns the row width.
func (t *Table) Dim() int { return t.dim }

// Len returns the number of rows.
func (t *Table) Len() int { return t.idx.len() }

// Reserve sizes the index for n rows, so that growing to n rows rehashes
// nothing (and leaves no old index array behind as garbage). The slabs need
// no reservation: they grow by whole chunks without copying.
func (t *Table) Reserve(n int) { t.idx.reserve(n) }

// CheckBatch returns an error wrapping ErrDimMismatch unless nValues ==
// nIDs*Dim: the check a server makes on a request before Pull or Push.
func (t *Table) CheckBatch(nIDs, nValues int) error {
	if nIDs < 0 || nValues != nIDs*t.dim {
		return fmt.Errorf("%w: table %q: %d values for %d ids of dim %d", ErrDimMismatch, t.spec.Name, nValues, nIDs, t.dim)
	}
	return nil
}

// Pull writes the rows of ids into out, row k at out[k*Dim:(k+1)*Dim].
// A missing row is created with the initializer when create is true;
// otherwise it is not created and reads as the initializer would make it
// (as an id the admission filter does not admit does, and as a server
// reads an id its export has no row of: an absent row is its initial
// value everywhere). Existing rows are only
// read: their statistics change when they are pushed. It returns the
// number of rows created. It panics unless len(out) == len(ids)*Dim.
func (t *Table) Pull(ids []uint64, out []float32, create bool, now uint32) int {
	if len(out) != len(ids)*t.dim {
		panic(fmt.Sprintf("ams: Table.Pull: len(out)=%d for %d ids of dim %d", len(out), len(ids), t.dim))
	}
	return t.pull(ids, nil, out, create, now)
}

// PullAt is Pull with an indirection: the row of ids[k] goes to
// out[pos[k]*Dim:(pos[k]+1)*Dim], so several stripes can fill disjoint
// rows of one response buffer. It panics unless len(pos) == len(ids) and
// every pos[k] addresses a row inside out.
func (t *Table) PullAt(ids []uint64, pos []int32, out []float32, create bool, now uint32) int {
	if len(pos) != len(ids) {
		panic(fmt.Sprintf("ams: Table.PullAt: %d positions for %d ids", len(pos), len(ids)))
	}
	return t.pull(ids, pos, out, create, now)
}

// rowGroup is the number of ids a batch method looks up before it touches
// their rows. Each id costs a cache miss in the index and one in the slab.
// Pull and push are software-pipelined by group with prefetch hints
// (package prefetch): while group g's rows are asked for, group g+1's index
// lines are too, so the misses of two groups overlap instead of being
// waited for one id at a time (table pull 1.8x, push 1.4x faster than
// with the plain early loads used before, BenchmarkTablePull/Push).
const rowGroup = 16

// pull implements Pull (pos == nil: row k goes to position k) and PullAt.
func (t *Table) pull(ids []uint64, pos []int32, out []float32, create bool, now uint32) int {
	d := t.dim
	var slots [rowGroup]uint32
	created := 0
	t.idx.prefetch(ids[:min(rowGroup, len(ids))])
	for lo := 0; lo < len(ids); lo += rowGroup {
		// Only the values are read: the rows' first d words.
		grp := t.lookupGroup(ids, lo, d, &slots)
		for k, id := range grp {
			dst := rowAt(out, pos, lo+k, d)
			slot := slots[k]
			if slot == emptySlot {
				// Missing at lookup; an earlier duplicate in this group
				// may have created it since.
				var ok bool
				if slot, ok = t.idx.get(id); !ok {
					if !create {
						t.init.fill(id, dst) // the row it would have
						continue
					}
					if t.admit != nil && !t.admit.admit(id) {
						// Not admitted: the row it would have had.
						t.init.fill(id, dst)
						t.cnt.FilteredPulls++
						continue
					}
					slot = t.create(id, now)
					created++
				}
			}
			// Reading an existing row leaves its statistics alone: the
			// push that follows a training pull touches it, so a pull
			// reads the values (the start of the row) and nothing else.
			copy(dst, t.rows.row(slot))
		}
	}
	return created
}

// rowAt returns the d values of the k-th id's row in a batch buffer: row k,
// or row pos[k] when pos is given (PullAt, PushAt).
func rowAt(buf []float32, pos []int32, k, d int) []float32 {
	if pos != nil {
		k = int(pos[k])
	}
	o := k * d
	return buf[o : o+d : o+d]
}

// lookupGroup is one step of the software pipeline of pull and push: it
// looks up the group of ids starting at lo (its index lines were
// prefetched a group earlier) into slots, prefetches the first words of
// each row found, and prefetches the next group's index lines, so that the
// misses of two groups overlap. It returns the group.
func (t *Table) lookupGroup(ids []uint64, lo, words int, slots *[rowGroup]uint32) []uint64 {
	grp := ids[lo:min(lo+rowGroup, len(ids))]
	t.lookupPrefetched(grp, slots)
	for k := range grp {
		if slot := slots[k]; slot != emptySlot {
			prefetch.Float32s(t.rows.row(slot)[:words])
		}
	}
	if next := lo + rowGroup; next < len(ids) {
		t.idx.prefetch(ids[next:min(next+rowGroup, len(ids))])
	}
	return grp
}

// lookupPrefetched writes the slot of each of ids (at most rowGroup) into
// slots, or emptySlot for an id that is missing. The caller prefetched
// their index lines (index.prefetch) a group earlier.
func (t *Table) lookupPrefetched(ids []uint64, slots *[rowGroup]uint32) {
	for k, id := range ids {
		s, ok := t.idx.get(id)
		if !ok {
			s = emptySlot
		}
		slots[k] = s
	}
}

// Push applies the optimizer to the row of each id with its gradient
// grads[k*Dim:(k+1)*Dim]. A missing row is created with the initializer
// first, then updated. Duplicate ids are applied in order. Every row pushed
// is touched (last-touched time now, hit count plus one). A gradient that
// holds a NaN or ±Inf is refused or clipped by the spec's NonFinite
// policy and counted: a refused one touches, creates and changes nothing
// (see the package doc). It returns the number of rows created. It panics
// unless len(grads) == len(ids)*Dim. grads is not modified.
func (t *Table) Push(ids []uint64, grads []float32, now uint32) int {
	if len(grads) != len(ids)*t.dim {
		panic(fmt.Sprintf("ams: Table.Push: len(grads)=%d for %d ids of dim %d", len(grads), len(ids), t.dim))
	}
	return t.push(ids, nil, grads, now)
}

// PushAt is Push with an indirection: the gradient of ids[k] is
// grads[pos[k]*Dim:(pos[k]+1)*Dim]. It panics unless len(pos) == len(ids)
// and every pos[k] addresses a row inside grads.
func (t *Table) PushAt(ids []uint64, pos []int32, grads []float32, now uint32) int {
	if len(pos) != len(ids) {
		panic(fmt.Sprintf("ams: Table.PushAt: %d positions for %d ids", len(pos), len(ids)))
	}
	return t.push(ids, pos, grads, now)
}

// push implements Push (pos == nil: gradient k is at position k) and
// PushAt. Per group of ids it looks the rows up (their index lines
// prefetched a group earlier), prefetches the rows found and the next
// group's index lines, checks that the gradients are finite (a group
// with one that is not goes to pushChecked), touches the statistics of
// the rows found, then applies the gradients in order, creating missing
// rows. Touching early is invisible to callers: Apply never reads
// statistics.
func (t *Table) push(ids []uint64, pos []int32, grads []float32, now uint32) int {
	d := t.dim
	var slots [rowGroup]uint32
	created := 0
	t.idx.prefetch(ids[:min(rowGroup, len(ids))])
	for lo := 0; lo < len(ids); lo += rowGroup {
		grp := t.lookupGroup(ids, lo, t.rows.width, &slots) // the whole row
		if bad := nonFiniteRows(grads, pos, lo, len(grp), d); bad != 0 {
			created += t.pushChecked(grp, &slots, bad, grads, pos, lo, now)
			continue
		}
		for k := range grp {
			if slot := slots[k]; slot != emptySlot {
				touch(statsOf(t.rows.row(slot)), now, t.step)
				t.markDirty(slot)
			}
		}
		for k, id := range grp {
			g := rowAt(grads, pos, lo+k, d)
			slot := slots[k]
			if slot == emptySlot {
				// Missing at lookup; an earlier duplicate in this group
				// may have created it since.
				var ok bool
				if slot, ok = t.idx.get(id); ok {
					touch(statsOf(t.rows.row(slot)), now, t.step)
				} else if t.admit != nil && !t.admit.pushed(id) {
					t.cnt.FilteredPushes++ // not admitted: dropped
					continue
				} else {
					slot = t.create(id, now)
					created++
				}
				t.markDirty(slot)
			}
			w, state, _ := t.split(t.rows.row(slot))
			t.opt.Apply(w, state, g)
		}
	}
	return created
}

// pushChecked is push's loop for a group of ids (from lo) some of whose
// gradients hold a NaN or ±Inf (bit k of bad: grp[k]'s): it serves the
// ids one at a time, in order, as push does, but refuses or clips those
// gradients first (by the spec's NonFinite policy) and counts them. A
// refused gradient touches, marks, creates and changes nothing. slots
// are the group's lookups. It returns the rows created.
func (t *Table) pushChecked(grp []uint64, slots *[rowGroup]uint32, bad uint32, grads []float32, pos []int32, lo int, now uint32) int {
	created := 0
	for k, id := range grp {
		g := rowAt(grads, pos, lo+k, t.dim)
		if bad&(1<<k) != 0 {
			if !t.clip {
				t.cnt.NonFiniteRefused++
				continue
			}
			g = t.clipRow(g)
		}
		slot := slots[k]
		if slot == emptySlot {
			// Missing at lookup; an earlier duplicate may have created it.
			var ok bool
			if slot, ok = t.idx.get(id); !ok {
				if t.admit != nil && !t.admit.pushed(id) {
					t.cnt.FilteredPushes++ // not admitted: dropped
					continue
				}
				slot = t.create(id, now) // touched by its creation
				created++
				t.markDirty(slot)
				w, state, _ := t.split(t.rows.row(slot))
				t.opt.Apply(w, state, g)
				continue
			}
		}
		touch(statsOf(t.rows.row(slot)), now, t.step)
		t.markDirty(slot)
		w, state, _ := t.split(t.rows.row(slot))
		t.opt.Apply(w, state, g)
	}
	return created
}

// clipRow returns a copy of gradient g (in the table's buffer, valid
// until the next call) with NaN as 0 and ±Inf as ±bound, and counts it.
func (t *Table) clipRow(g []float32) []float32 {
	if t.clipped == nil {
		t.clipped = make([]float32, t.dim)
	}
	ClipNonFinite(t.clipped, g, t.bound)
	t.cnt.NonFiniteClipped++
	return t.clipped
}

// CountClipped counts n rows of values a load clipped (see
// Counters.NonFiniteClipped).
func (t *Table) CountClipped(n int) { t.cnt.NonFiniteClipped += uint64(n) }

// touch records a push of a row: last-touched time now, last-update step
// step, one more hit (saturating).
func touch(st *[statWords]uint32, now, step uint32) {
	st[statTouched], st[statStep] = now, step
	if st[statHits] != math.MaxUint32 {
		st[statHits]++
	}
}

// create allocates a slot for id, initialises its values, state and
// statistics (touched now, one hit) and indexes it.
func (t *Table) create(id uint64, now uint32) uint32 {
	slot := t.alloc()
	w, state, st := t.split(t.rows.row(slot))
	t.init.fill(id, w)
	t.opt.InitState(state)
	st[statTouched], st[statHits], st[statStep] = now, 1, t.step
	t.cleanSlot(slot)
	t.idx.insert(id, slot)
	t.cnt.Created++
	return slot
}

// alloc returns a free slot: the most recently freed one, else a new one
// at the end of the slab.
func (t *Table) alloc() uint32 {
	if n := len(t.free); n > 0 {
		s := t.free[n-1]
		t.free = t.free[:n-1]
		return s
	}
	if t.next > maxSlot {
		panic("ams: Table: more than 2^32-1 rows in one table")
	}
	s := t.next
	t.next++
	t.rows.ensure(int(t.next))
	t.growDirty()
	return s
}

// Stats returns the last-touched time and the hit count of id's row.
// Hits count creation and pushes (one per pull-then-push training step);
// they saturate at 2^32-1.
func (t *Table) Stats(id uint64) (lastTouched, hits uint32, ok bool) {
	slot, ok := t.idx.get(id)
	if !ok {
		return 0, 0, false
	}
	st := statsOf(t.rows.row(slot))
	return st[statTouched], st[statHits], true
}

// Delete removes id's row and puts its slot on the free list. It reports
// whether the row existed.
func (t *Table) Delete(id uint64) bool {
	slot, ok := t.idx.remove(id)
	if ok {
		t.free = append(t.free, slot)
		t.frees++
	}
	return ok
}

// Range calls fn for every row, in no particular order, until fn returns
// false. values and state alias the table's storage and are valid only
// during the call; fn must not modify the table (collect the ids and
// Delete them afterwards).
func (t *Table) Range(fn func(id uint64, values, state []float32, lastTouched, hits uint32) bool) {
	t.idx.all(func(id uint64, slot uint32) bool {
		w, state, st := t.split(t.rows.row(slot))
		return fn(id, w, state, st[statTouched], st[statHits])
	})
}

// Get returns id's row. The slice aliases the table's storage: it is valid
// until the row is deleted, and later pushes change it. For tests and
// debugging; servers use Pull.
func (t *Table) Get(id uint64) (values []float32, ok bool) {
	slot, ok := t.idx.get(id)
	if !ok {
		return nil, false
	}
	w, _, _ := t.split(t.rows.row(slot))
	return w, true
}

// Load writes a row restored from a snapshot: it creates id's row or
// overwrites it, values and statistics as given. state is the optimizer
// state (StateWidth words); an empty state starts a fresh one, as for a new
// row (for snapshots written without state or with another optimizer). It
// fails with an error wrapping ErrDimMismatch when a length is wrong.
func (t *Table) Load(id uint64, values, state []float32, lastTouched, hits uint32) error {
	return t.load(id, values, state, [statWords]uint32{statTouched: lastTouched, statHits: hits, statStep: t.step})
}

// load is Load with every statistics word given.
func (t *Table) load(id uint64, values, state []float32, stats [statWords]uint32) error {
	sw := t.sw
	if len(values) != t.dim || (len(state) != 0 && len(state) != sw) {
		return fmt.Errorf("%w: table %q: load of id %d: %d values, %d state words, want %d and %d (or 0)",
			ErrDimMismatch, t.spec.Name, id, len(values), len(state), t.dim, sw)
	}
	slot, ok := t.idx.get(id)
	if !ok {
		slot = t.alloc()
		t.idx.insert(id, slot)
	}
	t.cleanSlot(slot)
	w, st0, st := t.split(t.rows.row(slot))
	copy(w, values)
	if len(state) == 0 {
		t.opt.InitState(st0)
	} else {
		copy(st0, state)
	}
	*st = stats
	return nil
}

// MemoryBytes returns the bytes held by the index, the slab (allocated
// chunks, used or not) and the free list.
func (t *Table) MemoryBytes() int64 {
	return t.idx.memoryBytes() + t.rows.memoryBytes() + int64(cap(t.free))*4 + int64(cap(t.dirty)+cap(t.shadow))*8
}
