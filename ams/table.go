package ams

import (
	"fmt"
	"math"
)

// Table is the storage of one sparse table in one stripe: an index from
// feature ID to slot, and per slot a row of Dim values, a row of optimizer
// state and a pair of statistics (last-touched time, hit count), each in
// its own pointer-free slab. Deleted slots go onto a free list and are
// reused, most recently freed first, before the slabs grow.
//
// A Table is not safe for concurrent use: the goroutine that owns the
// stripe calls every method (see the package doc).
//
// Batch methods panic when the lengths of their arguments disagree with
// each other or with Dim: that is a broken contract of the caller, which
// checks input from outside with CheckBatch first.
type Table struct {
	spec  TableSpec
	dim   int
	opt   Optimizer
	init  initializer
	idx   index
	vals  slab[float32] // width dim
	state slab[float32] // width opt.StateWidth(dim)
	stats slab[uint32]  // width 2: lastTouched, hits
	next  uint32        // slots [0, next) have been handed out
	free  []uint32      // deleted slots, reused last-in first-out
}

const (
	statTouched = 0
	statHits    = 1
)

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
	return &Table{
		spec:  spec,
		dim:   spec.Dim,
		opt:   opt,
		init:  in,
		vals:  newSlab[float32](spec.Dim),
		state: newSlab[float32](opt.StateWidth(spec.Dim)),
		stats: newSlab[uint32](2),
	}, nil
}

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
// A missing row is created with the initializer when create is true and
// written as zeros (and not created) otherwise. Existing rows are only
// read: their statistics change when they are pushed. It returns the
// number of rows created. It panics unless len(out) == len(ids)*Dim.
func (t *Table) Pull(ids []uint64, out []float32, create bool, now uint32) int {
	d := t.dim
	if len(out) != len(ids)*d {
		panic(fmt.Sprintf("ams: Table.Pull: len(out)=%d for %d ids of dim %d", len(out), len(ids), d))
	}
	created := 0
	for k, id := range ids {
		created += t.pullRow(id, out[k*d:(k+1)*d:(k+1)*d], create, now)
	}
	return created
}

// PullAt is Pull with an indirection: the row of ids[k] goes to
// out[pos[k]*Dim:(pos[k]+1)*Dim], so several stripes can fill disjoint
// rows of one response buffer. It panics unless len(pos) == len(ids) and
// every pos[k] addresses a row inside out.
func (t *Table) PullAt(ids []uint64, pos []int32, out []float32, create bool, now uint32) int {
	d := t.dim
	if len(pos) != len(ids) {
		panic(fmt.Sprintf("ams: Table.PullAt: %d positions for %d ids", len(pos), len(ids)))
	}
	created := 0
	for k, id := range ids {
		o := int(pos[k]) * d
		created += t.pullRow(id, out[o:o+d:o+d], create, now)
	}
	return created
}

// pullRow serves one id of a pull.
func (t *Table) pullRow(id uint64, dst []float32, create bool, now uint32) int {
	slot, ok := t.idx.get(id)
	if !ok {
		if !create {
			clear(dst)
			return 0
		}
		slot = t.create(id, now)
		copy(dst, t.vals.row(slot))
		return 1
	}
	// Reading an existing row leaves its statistics alone: the push that
	// follows a training pull touches it, and touching it here too cost a
	// tenth of a shard's time in a second random access per row.
	copy(dst, t.vals.row(slot))
	return 0
}

// Push applies the optimizer to the row of each id with its gradient
// grads[k*Dim:(k+1)*Dim]. A missing row is created with the initializer
// first, then updated. Duplicate ids are applied in order. Every row pushed
// is touched (last-touched time now, hit count plus one). It returns the
// number of rows created. It panics unless len(grads) == len(ids)*Dim.
// grads is not modified.
func (t *Table) Push(ids []uint64, grads []float32, now uint32) int {
	d := t.dim
	if len(grads) != len(ids)*d {
		panic(fmt.Sprintf("ams: Table.Push: len(grads)=%d for %d ids of dim %d", len(grads), len(ids), d))
	}
	created := 0
	for k, id := range ids {
		created += t.pushRow(id, grads[k*d:(k+1)*d:(k+1)*d], now)
	}
	return created
}

// PushAt is Push with an indirection: the gradient of ids[k] is
// grads[pos[k]*Dim:(pos[k]+1)*Dim]. It panics unless len(pos) == len(ids)
// and every pos[k] addresses a row inside grads.
func (t *Table) PushAt(ids []uint64, pos []int32, grads []float32, now uint32) int {
	d := t.dim
	if len(pos) != len(ids) {
		panic(fmt.Sprintf("ams: Table.PushAt: %d positions for %d ids", len(pos), len(ids)))
	}
	created := 0
	for k, id := range ids {
		o := int(pos[k]) * d
		created += t.pushRow(id, grads[o:o+d:o+d], now)
	}
	return created
}

// pushRow applies one gradient.
func (t *Table) pushRow(id uint64, g []float32, now uint32) int {
	created := 0
	slot, ok := t.idx.get(id)
	if ok {
		t.touch(slot, now)
	} else {
		slot = t.create(id, now)
		created = 1
	}
	t.opt.Apply(t.vals.row(slot), t.state.row(slot), g)
	return created
}

// create allocates a slot for id, initialises its values, state and
// statistics (touched now, one hit) and indexes it.
func (t *Table) create(id uint64, now uint32) uint32 {
	slot := t.alloc()
	t.init.fill(id, t.vals.row(slot))
	t.opt.InitState(t.state.row(slot))
	st := t.stats.row(slot)
	st[statTouched], st[statHits] = now, 1
	t.idx.insert(id, slot)
	return slot
}

// alloc returns a free slot: the most recently freed one, else a new one
// at the end of the slabs.
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
	n := int(t.next)
	t.vals.ensure(n)
	t.state.ensure(n)
	t.stats.ensure(n)
	return s
}

func (t *Table) touch(slot uint32, now uint32) {
	st := t.stats.row(slot)
	st[statTouched] = now
	if st[statHits] != math.MaxUint32 {
		st[statHits]++
	}
}

// Stats returns the last-touched time and the hit count of id's row.
// Hits count creation and pushes (one per pull-then-push training step);
// they saturate at 2^32-1.
func (t *Table) Stats(id uint64) (lastTouched, hits uint32, ok bool) {
	slot, ok := t.idx.get(id)
	if !ok {
		return 0, 0, false
	}
	st := t.stats.row(slot)
	return st[statTouched], st[statHits], true
}

// Delete removes id's row and puts its slot on the free list. It reports
// whether the row existed.
func (t *Table) Delete(id uint64) bool {
	slot, ok := t.idx.remove(id)
	if ok {
		t.free = append(t.free, slot)
	}
	return ok
}

// Range calls fn for every row, in no particular order, until fn returns
// false. values and state alias the table's storage and are valid only
// during the call; fn must not modify the table (collect the ids and
// Delete them afterwards).
func (t *Table) Range(fn func(id uint64, values, state []float32, lastTouched, hits uint32) bool) {
	t.idx.all(func(id uint64, slot uint32) bool {
		st := t.stats.row(slot)
		return fn(id, t.vals.row(slot), t.state.row(slot), st[statTouched], st[statHits])
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
	return t.vals.row(slot), true
}

// Load writes a row restored from a snapshot: it creates id's row or
// overwrites it, values and statistics as given. state is the optimizer
// state (StateWidth words); an empty state starts a fresh one, as for a new
// row (for snapshots written without state or with another optimizer). It
// fails with an error wrapping ErrDimMismatch when a length is wrong.
func (t *Table) Load(id uint64, values, state []float32, lastTouched, hits uint32) error {
	sw := t.state.width
	if len(values) != t.dim || (len(state) != 0 && len(state) != sw) {
		return fmt.Errorf("%w: table %q: load of id %d: %d values, %d state words, want %d and %d (or 0)",
			ErrDimMismatch, t.spec.Name, id, len(values), len(state), t.dim, sw)
	}
	slot, ok := t.idx.get(id)
	if !ok {
		slot = t.alloc()
		t.idx.insert(id, slot)
	}
	copy(t.vals.row(slot), values)
	if len(state) == 0 {
		t.opt.InitState(t.state.row(slot))
	} else {
		copy(t.state.row(slot), state)
	}
	st := t.stats.row(slot)
	st[statTouched], st[statHits] = lastTouched, hits
	return nil
}

// MemoryBytes returns the bytes held by the index, the slabs (allocated
// chunks, used or not) and the free list.
func (t *Table) MemoryBytes() int64 {
	return t.idx.memoryBytes() + t.vals.memoryBytes() + t.state.memoryBytes() +
		t.stats.memoryBytes() + int64(cap(t.free))*4
}
