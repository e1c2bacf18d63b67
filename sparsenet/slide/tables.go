package slide

import (
	"errors"
	"fmt"

	"github.com/xdlgo/xps/model/prefetch"
)

// noBucket marks a neuron that is assigned to no bucket of a table.
const noBucket = ^uint32(0)

// maxTableSlots bounds L*2^K*R, the size of the id slab (2^31 - 1 int32s,
// 8 GiB).
const maxTableSlots = 1<<31 - 1

// Tables holds L hash tables of 2^K buckets over the neurons 0..d-1, each
// bucket a reservoir of at most R neuron ids. Everything lives in flat,
// pointer-free slabs: ids (L*2^K*R int32), per-bucket counts and offer
// counters (L*2^K uint32 each) and each neuron's code per table (d*L uint32).
//
// Invariants, for every table t and bucket b:
//
//  1. A neuron is assigned to at most one bucket of a table: Code(id, t).
//  2. Seen(t, b) is the number of neurons assigned to b, and the ids stored
//     in b are distinct neurons assigned to b: len(Bucket(t, b)) <= R and
//     <= Seen(t, b).
//  3. While no neuron is removed from b, its stored ids are a uniform sample
//     of size min(R, Seen) of the neurons assigned to it (reservoir sampling,
//     Vitter's algorithm R, with randomness from a hash of the seed, the
//     bucket, the offer count and the id: the same sequence of operations
//     gives the same tables). Removing a stored neuron frees its slot for the
//     next neuron assigned to the bucket.
//
// A Tables is not safe for concurrent use, except that calls on different
// tables (the *Table methods with different t) may run concurrently.
type Tables struct {
	d, k, l, r int
	nb         int
	seed       uint64
	ids        []int32  // [t][b][R]
	cnt        []uint32 // [t][b] stored ids
	seen       []uint32 // [t][b] assigned neurons
	code       []uint32 // [t][id] assigned bucket, or noBucket
}

// NewTables returns empty tables for d neurons: l tables of 2^k buckets of
// at most r ids each.
func NewTables(d, k, l, r int, seed uint64) (*Tables, error) {
	var errs []error
	if d < 1 || d > 1<<31-1 {
		errs = append(errs, fmt.Errorf("d %d not in [1, 2^31)", d))
	}
	if k < 1 || k > maxK {
		errs = append(errs, fmt.Errorf("K %d not in [1, %d]", k, maxK))
	}
	if l < 1 || l > maxL {
		errs = append(errs, fmt.Errorf("L %d not in [1, %d]", l, maxL))
	}
	if r < 1 || r > 1<<16 {
		errs = append(errs, fmt.Errorf("R %d not in [1, 65536]", r))
	}
	if len(errs) == 0 && float64(l)*float64(int(1)<<k)*float64(r) > maxTableSlots {
		errs = append(errs, fmt.Errorf("L*2^K*R = %d*2^%d*%d is over %d slots", l, k, r, maxTableSlots))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: tables: %w", ErrBadConfig, err)
	}
	nb := 1 << k
	t := &Tables{d: d, k: k, l: l, r: r, nb: nb, seed: seed,
		ids:  make([]int32, l*nb*r),
		cnt:  make([]uint32, l*nb),
		seen: make([]uint32, l*nb),
		code: make([]uint32, d*l),
	}
	for i := range t.code {
		t.code[i] = noBucket
	}
	return t, nil
}

// Dim is the number of neurons d.
func (t *Tables) Dim() int { return t.d }

// K is the number of bits of a code.
func (t *Tables) K() int { return t.k }

// L is the number of tables.
func (t *Tables) L() int { return t.l }

// R is the capacity of a bucket.
func (t *Tables) R() int { return t.r }

// Bytes is the memory the slabs take.
func (t *Tables) Bytes() int64 {
	return 4 * (int64(len(t.ids)) + int64(len(t.cnt)) + int64(len(t.seen)) + int64(len(t.code)))
}

// Bucket returns the ids stored in bucket code of table tb: a view that is
// valid until the table is next modified. It panics when tb or code is out
// of range.
func (t *Tables) Bucket(tb int, code uint32) []int32 {
	i := tb*t.nb + int(code)
	if uint(tb) >= uint(t.l) || code >= uint32(t.nb) {
		panic(fmt.Sprintf("slide: Tables.Bucket(%d, %d) out of range", tb, code))
	}
	return t.ids[i*t.r : i*t.r+int(t.cnt[i])]
}

// Seen returns the number of neurons assigned to bucket code of table tb.
func (t *Tables) Seen(tb int, code uint32) int { return int(t.seen[tb*t.nb+int(code)]) }

// Code returns the bucket neuron id is assigned to in table tb, and false
// when it is assigned to none.
func (t *Tables) Code(id int32, tb int) (uint32, bool) {
	c := t.code[tb*t.d+int(id)]
	return c, c != noBucket
}

// Insert (re)assigns neuron id to the buckets codes[0..L-1]: in every table
// it leaves its old bucket, if any, and is offered to the new one.
func (t *Tables) Insert(id int32, codes []uint32) {
	if len(codes) != t.l {
		panic(fmt.Sprintf("slide: Tables.Insert: %d codes, want %d", len(codes), t.l))
	}
	for tb, c := range codes {
		t.InsertTable(tb, id, c)
	}
}

// Remove takes neuron id out of every table.
func (t *Tables) Remove(id int32) {
	for tb := 0; tb < t.l; tb++ {
		t.RemoveTable(tb, id)
	}
}

// Clear empties every table.
func (t *Tables) Clear() {
	clear(t.cnt)
	clear(t.seen)
	for i := range t.code {
		t.code[i] = noBucket
	}
}

// InsertTable (re)assigns neuron id to bucket code of table tb: it leaves its
// old bucket and is offered to the new one (stored if the bucket has room,
// else with reservoir probability R/Seen). Assigning a neuron to the bucket
// it is assigned to already changes nothing.
func (t *Tables) InsertTable(tb int, id int32, code uint32) {
	if code >= uint32(t.nb) {
		panic(fmt.Sprintf("slide: Tables.InsertTable: code %d >= 2^%d", code, t.k))
	}
	ci := tb*t.d + int(id)
	if t.code[ci] == code {
		return
	}
	t.RemoveTable(tb, id)
	t.code[ci] = code
	i := tb*t.nb + int(code)
	n := t.seen[i]
	t.seen[i] = n + 1
	slots := t.ids[i*t.r : (i+1)*t.r]
	if c := t.cnt[i]; int(c) < t.r {
		slots[c] = id
		t.cnt[i] = c + 1
		return
	}
	// Algorithm R: the (n+1)-th offer replaces a uniform slot with
	// probability R/(n+1).
	if j := hash3(t.seed, uint64(i)<<32|uint64(n), uint64(id)) % uint64(n+1); j < uint64(t.r) {
		slots[j] = id
	}
}

// prefetchInsert hints the CPU to load what InsertTable(tb, id, code) will
// touch: the new bucket's counters and slots and, when id is assigned to
// a bucket already, that bucket's. See package prefetch.
func (t *Tables) prefetchInsert(tb int, id int32, code uint32) {
	if code >= uint32(t.nb) {
		return // InsertTable will panic
	}
	t.prefetchBucket(tb*t.nb + int(code))
	if old := t.code[tb*t.d+int(id)]; old != noBucket && old != code {
		t.prefetchBucket(tb*t.nb + int(old))
	}
}

// prefetchBucket hints that bucket i (table-major index) will be updated.
func (t *Tables) prefetchBucket(i int) {
	prefetch.Uint32(&t.seen[i])
	prefetch.Uint32(&t.cnt[i])
	ids := t.ids[i*t.r : (i+1)*t.r]
	prefetch.Int32s(ids)
}

// ForceTable assigns neuron id to bucket code of table tb and makes sure it
// is stored there, evicting a pseudo-random stored id when the bucket is
// full. It is BOLT's "insert the label into the buckets the input hashed to".
func (t *Tables) ForceTable(tb int, id int32, code uint32) {
	t.InsertTable(tb, id, code)
	i := tb*t.nb + int(code)
	slots := t.ids[i*t.r : i*t.r+int(t.cnt[i])]
	for _, s := range slots {
		if s == id {
			return
		}
	}
	// Not stored: the reservoir passed it over, or it was assigned here and
	// evicted before.
	if n := len(slots); n < t.r {
		t.ids[i*t.r+n] = id
		t.cnt[i]++
		return
	}
	j := hash3(t.seed^0xf0, uint64(i)<<32|uint64(t.seen[i]), uint64(id)) % uint64(t.r)
	slots[j] = id
}

// RemoveTable takes neuron id out of table tb.
func (t *Tables) RemoveTable(tb int, id int32) {
	ci := tb*t.d + int(id)
	c := t.code[ci]
	if c == noBucket {
		return
	}
	t.code[ci] = noBucket
	i := tb*t.nb + int(c)
	t.seen[i]--
	n := int(t.cnt[i])
	slots := t.ids[i*t.r : i*t.r+n]
	for j, s := range slots {
		if s == id {
			slots[j] = slots[n-1]
			t.cnt[i] = uint32(n - 1)
			return
		}
	}
}
