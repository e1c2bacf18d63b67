package ams

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// idRangeTable returns a table holding ids, pushed once.
func idRangeTable(t *testing.T, ids []uint64) *Table {
	t.Helper()
	tab, err := NewTable(TableSpec{Name: "t", Dim: 2, Optimizer: OptimizerSpec{Name: OptSGD, LR: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	tab.Push(ids, make([]float32, 2*len(ids)), 1)
	return tab
}

// TestIDRanges checks that the ranges an IDHistogram cuts cover every id
// once, in order, hold at most the limit (unless one bucket holds more),
// that Count agrees with SortedRowsIn, and that the rows listed range by
// range are those of every id at once: on random ids, small ones, ids at both ends of
// the uint64s, ids sharing their high bits, and one heavy bucket.
func TestIDRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	gen := map[string]func(i int) uint64{
		"random":       func(int) uint64 { return r.Uint64() },
		"small":        func(int) uint64 { return uint64(r.IntN(1 << 12)) },
		"both ends":    func(i int) uint64 { return [2]uint64{uint64(r.IntN(100)), math.MaxUint64 - uint64(r.IntN(100))}[i%2] },
		"shared high":  func(int) uint64 { return 0xabcd<<48 | uint64(r.IntN(1<<30)) },
		"heavy bucket": func(i int) uint64 { return [2]uint64{uint64(i), r.Uint64()}[min(1, i%4)] },
		"top end":      func(int) uint64 { return math.MaxUint64 - uint64(r.IntN(1<<20)) },
		// buckets of 16 ids, the largest id's the second last: a range
		// starting one bucket later would start past 2^64
		"last but one": func(i int) uint64 {
			return [2]uint64{math.MaxUint64 - uint64(r.IntN(16)), math.MaxUint64 - 65535*16 + 1}[min(1, i%100)^1]
		},
	}
	for name, g := range gen {
		ids := make([]uint64, 5000)
		for i := range ids {
			ids[i] = g(i)
		}
		tab := idRangeTable(t, ids)
		var all RowSet
		tab.SortedRowsIn(&all, AllIDs, tab.Len())
		lo, hi, ok := tab.IDBounds()
		if !ok || lo != all.IDs()[0] || hi != all.IDs()[all.Len()-1] {
			t.Fatalf("%s: IDBounds %d %d %v, want %d %d", name, lo, hi, ok, all.IDs()[0], all.IDs()[all.Len()-1])
		}
		h := NewIDHistogram(lo, hi)
		tab.CountIDs(h)
		for _, limit := range []int{1, 100, 999, 5000, 1 << 30} {
			ranges := h.Ranges(limit)
			if ranges[0].Lo != 0 || ranges[len(ranges)-1].Hi != math.MaxUint64 {
				t.Fatalf("%s, limit %d: ranges %v do not span every id", name, limit, ranges)
			}
			var got []uint64
			var rs RowSet
			for k, rg := range ranges {
				if rg.Hi < rg.Lo || (k > 0 && rg.Lo != ranges[k-1].Hi+1) {
					t.Fatalf("%s, limit %d: range %d %v after %v", name, limit, k, rg, ranges[max(0, k-1)])
				}
				n := h.Count(rg)
				tab.SortedRowsIn(&rs, rg, n)
				if rs.Len() != n {
					t.Fatalf("%s, limit %d: range %v lists %d rows, Count says %d", name, limit, rg, rs.Len(), n)
				}
				if ids := rs.IDs(); n > limit && h.bucket(ids[0]) != h.bucket(ids[n-1]) {
					t.Fatalf("%s, limit %d: range %v holds %d ids of several buckets", name, limit, rg, n)
				}
				got = append(got, rs.IDs()...)
			}
			if !slices.Equal(got, all.IDs()) {
				t.Fatalf("%s, limit %d: the ranges list %d ids, not the %d of every id in order", name, limit, len(got), all.Len())
			}
		}
	}
	if _, _, ok := idRangeTable(t, nil).IDBounds(); ok {
		t.Fatal("IDBounds of an empty table: ok")
	}
}

// TestSortedRowsInAllocatesOnce checks that a RowSet filled range after
// range, grown first to the largest, allocates nothing more.
func TestSortedRowsInAllocatesOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ids := make([]uint64, 20000)
	for i := range ids {
		ids[i] = r.Uint64()
	}
	tab := idRangeTable(t, ids)
	lo, hi, _ := tab.IDBounds()
	h := NewIDHistogram(lo, hi)
	tab.CountIDs(h)
	ranges := h.Ranges(3000)
	most := 0
	for _, rg := range ranges {
		most = max(most, h.Count(rg))
	}
	var rs RowSet
	tab.SortedRowsIn(&rs, ranges[0], most)
	if a := testing.AllocsPerRun(5, func() {
		for _, rg := range ranges {
			tab.SortedRowsIn(&rs, rg, h.Count(rg))
		}
	}); a != 0 {
		t.Fatalf("%v allocations listing %d ranges, want 0", a, len(ranges))
	}
}

// listRangeReference is listRange's reference loop: a branch per bucket.
func listRangeReference(b []uint32, rg IDRange, ids []uint64, slots []uint32) ([]uint64, []uint32) {
	for i := 0; i+2 < len(b); i += 3 {
		if s := slotOf(b, i); s != emptySlot {
			if id := uint64(b[i]) | uint64(b[i+1])<<32; id-rg.Lo <= rg.Hi-rg.Lo {
				ids, slots = append(ids, id), append(slots, s)
			}
		}
	}
	return ids, slots
}

// TestListRangeMatchesReference checks the branch-free scan against the
// reference loop, on tables holding id 0 and the largest id (an empty
// bucket reads as id 0), for ranges at both ends, inside, of one id and
// of every id, with n too small as well (the lists must grow).
func TestListRangeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, size := range []int{0, 1, 100, 5000, 40000} {
		ids := []uint64{0, math.MaxUint64}
		for range size {
			ids = append(ids, r.Uint64()>>r.IntN(64))
		}
		tab := idRangeTable(t, ids)
		mid := r.Uint64()
		for _, rg := range []IDRange{AllIDs, {0, 0}, {0, mid}, {mid, math.MaxUint64}, {math.MaxUint64, math.MaxUint64}, {mid / 2, mid}, {ids[len(ids)-1], ids[len(ids)-1]}} {
			wantIDs, wantSlots := listRangeReference(tab.idx.b, rg, nil, nil)
			for _, n := range []int{0, len(wantIDs)} {
				gotIDs, gotSlots := listRange(tab.idx.b, rg, nil, nil, n)
				if !slices.Equal(gotIDs, wantIDs) || !slices.Equal(gotSlots, wantSlots) {
					t.Fatalf("%d ids, range %v, n %d: listed %d ids, the reference %d", len(ids), rg, n, len(gotIDs), len(wantIDs))
				}
			}
		}
	}
}

// BenchmarkListRange times one scan of a 5M-row table's index for a tenth
// of its ids and for all of them: the branch-free listRange against the
// reference loop (a snapshot of a large table scans each stripe's index
// once per range it lists).
func BenchmarkListRange(b *testing.B) {
	tab := newTestTable(b, TableSpec{Name: "emb", Dim: 2, Optimizer: OptimizerSpec{Name: OptSGD}, Init: InitSpec{Kind: InitUniform}})
	fillTable(tab, 0, 5_000_000, 4096)
	for _, parts := range []uint64{1, 10} {
		rg := IDRange{0, math.MaxUint64 / parts}
		n := tab.Len()/int(parts) + tab.Len()/100
		b.Run(fmt.Sprintf("range=1|%d/branch-free", parts), func(b *testing.B) {
			ids, slots := make([]uint64, 0, n), make([]uint32, 0, n)
			for b.Loop() {
				ids, slots = listRange(tab.idx.b, rg, ids[:0], slots[:0], n)
			}
		})
		b.Run(fmt.Sprintf("range=1|%d/reference", parts), func(b *testing.B) {
			ids, slots := make([]uint64, 0, n), make([]uint32, 0, n)
			for b.Loop() {
				ids, slots = listRangeReference(tab.idx.b, rg, ids[:0], slots[:0])
			}
		})
	}
}
