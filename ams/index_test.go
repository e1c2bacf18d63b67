package ams

import (
	"math/rand/v2"
	"testing"
)

// checkIndex verifies the index against the reference map and its own
// invariants: the count, the load bound, and that every entry is reachable
// from its home bucket without crossing an empty bucket.
func checkIndex(t *testing.T, x *index, ref map[uint64]uint32) {
	t.Helper()
	if x.len() != len(ref) {
		t.Fatalf("len = %d, want %d", x.len(), len(ref))
	}
	if c := x.capacity(); c > 0 && (c&(c-1) != 0 || x.len() > c*3/4) {
		t.Fatalf("capacity %d with %d entries", c, x.len())
	}
	seen := 0
	x.all(func(id uint64, slot uint32) bool {
		seen++
		if want, ok := ref[id]; !ok || want != slot {
			t.Fatalf("entry %d->%d, reference has %d (present %v)", id, slot, want, ok)
		}
		for i := hashIndex(id, x.shift); ; i = (i + 1) & x.mask {
			if slotOf(x.b, int(3*i)) == emptySlot {
				t.Fatalf("id %d unreachable from its home bucket", id)
			}
			if uint64(x.b[3*i])|uint64(x.b[3*i+1])<<32 == id {
				break
			}
		}
		return true
	})
	if seen != len(ref) {
		t.Fatalf("all visited %d entries, want %d", seen, len(ref))
	}
	for id, want := range ref {
		if got, ok := x.get(id); !ok || got != want {
			t.Fatalf("get(%d) = %d, %v; want %d", id, got, ok, want)
		}
	}
}

func TestIndexRandomAgainstMap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keySpace uint64 // ids drawn from [0, keySpace), so they repeat
		ops      int
		pDelete  float64
	}{
		{"small-churn", 40, 4000, 0.5},
		{"grow-mostly-insert", 1 << 40, 20000, 0.1},
		{"medium-half-delete", 3000, 30000, 0.45},
		{"tiny-keyspace-with-zero", 3, 500, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.ops)))
			var x index
			ref := map[uint64]uint32{}
			for op := 0; op < tc.ops; op++ {
				id := rng.Uint64N(tc.keySpace)
				if rng.IntN(8) == 0 {
					id = 0 // key 0 is a valid id
				}
				switch {
				case rng.Float64() < tc.pDelete:
					got, ok := x.remove(id)
					want, wok := ref[id]
					if ok != wok || got != want {
						t.Fatalf("op %d: remove(%d) = %d, %v; want %d, %v", op, id, got, ok, want, wok)
					}
					delete(ref, id)
				default:
					if got, ok := x.get(id); ok {
						if want := ref[id]; got != want {
							t.Fatalf("op %d: get(%d) = %d, want %d", op, id, got, want)
						}
						continue
					} else if _, wok := ref[id]; wok {
						t.Fatalf("op %d: get(%d) missed", op, id)
					}
					slot := uint32(rng.IntN(1 << 30))
					x.insert(id, slot)
					ref[id] = slot
				}
				if op%997 == 0 {
					checkIndex(t, &x, ref)
				}
			}
			checkIndex(t, &x, ref)
			// Delete everything: the index ends empty and still works.
			for id := range ref {
				if _, ok := x.remove(id); !ok {
					t.Fatalf("remove(%d) missed", id)
				}
				delete(ref, id)
			}
			checkIndex(t, &x, ref)
			x.insert(0, 7)
			if s, ok := x.get(0); !ok || s != 7 {
				t.Fatalf("get(0) after reuse = %d, %v", s, ok)
			}
		})
	}
}

// TestIndexClusterWrap builds one long cluster of ids sharing a home bucket
// near the end of the array, so probes wrap around, then deletes from its
// middle and start: backward shift must keep every entry reachable.
func TestIndexClusterWrap(t *testing.T) {
	var x index
	x.reserve(40) // 64 buckets
	shift, mask := x.shift, x.mask
	var same []uint64
	for id := uint64(0); len(same) < 12; id++ {
		if hashIndex(id, shift) == mask-2 {
			same = append(same, id)
		}
	}
	var other []uint64
	for id := uint64(1 << 32); len(other) < 6; id++ {
		if h := hashIndex(id, shift); h == 0 || h == 1 {
			other = append(other, id)
		}
	}
	ref := map[uint64]uint32{}
	for i, id := range append(append([]uint64{}, same...), other...) {
		x.insert(id, uint32(i))
		ref[id] = uint32(i)
	}
	if x.capacity() != 64 {
		t.Fatalf("capacity = %d, want 64 (no growth)", x.capacity())
	}
	checkIndex(t, &x, ref)
	for _, id := range []uint64{same[5], same[0], other[0], same[11], other[3]} {
		if _, ok := x.remove(id); !ok {
			t.Fatalf("remove(%d) missed", id)
		}
		delete(ref, id)
		checkIndex(t, &x, ref)
	}
}

func TestIndexReserveAndCapacity(t *testing.T) {
	for _, tc := range []struct{ n, wantCap int }{
		{0, 8}, {6, 8}, {7, 16}, {12, 16}, {13, 32}, {10_000_000, 1 << 24},
	} {
		if got := indexCapFor(tc.n); got != tc.wantCap {
			t.Errorf("indexCapFor(%d) = %d, want %d", tc.n, got, tc.wantCap)
		}
	}
	var x index
	x.reserve(1000)
	c := x.capacity()
	for i := range 1000 {
		x.insert(uint64(i)*0x9e3779b97f4a7c15, uint32(i))
	}
	if x.capacity() != c {
		t.Fatalf("capacity grew from %d to %d after reserve", c, x.capacity())
	}
	x.insert(1, 1)
	if got := x.memoryBytes(); got != int64(x.capacity())*12 {
		t.Fatalf("memoryBytes = %d for %d buckets", got, x.capacity())
	}
}

func TestIndexRejectsReservedSlot(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("insert of slot 0xFFFFFFFF did not panic")
		}
	}()
	var x index
	x.insert(1, emptySlot)
}

// TestIndexResizeMapped grows an index through sizes whose arrays are
// mapped regions, which a resize unmaps a part at a time while it reads
// them: every entry stays, with its slot, reachable from its home, slots
// 0 and maxSlot included (a bucket holds its slot complemented).
func TestIndexResizeMapped(t *testing.T) {
	var x index
	ref := map[uint64]uint32{}
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 700_000 {
		id, slot := r.Uint64(), uint32(i)
		if i == 1 {
			slot = maxSlot
		}
		if _, dup := ref[id]; dup {
			continue
		}
		x.insert(id, slot)
		ref[id] = slot
	}
	if offHeap && x.mem == nil {
		t.Fatalf("an index of %d buckets is not mapped", x.capacity())
	}
	checkIndex(t, &x, ref)
}
