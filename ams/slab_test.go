package ams

import (
	"testing"
	"unsafe"
)

func TestSlabGrowthKeepsRowsStable(t *testing.T) {
	for _, width := range []int{1, 2, 16, 33, 300, 70000} {
		s := newSlab[float32](width)
		rows := 1<<s.s*2 + 100 // crosses every small chunk and two full ones
		if width == 70000 {
			rows = 40
		}
		var held [][]float32
		var addrs []unsafe.Pointer
		for slot := range rows {
			s.ensure(slot + 1)
			r := s.row(uint32(slot))
			if len(r) != width || cap(r) != width {
				t.Fatalf("width %d: row %d has len %d cap %d", width, slot, len(r), cap(r))
			}
			for i := range r {
				if r[i] != 0 {
					t.Fatalf("width %d: new row %d not zero", width, slot)
				}
				r[i] = float32(slot*7 + i)
			}
			held = append(held, r)
			addrs = append(addrs, unsafe.Pointer(&r[0]))
		}
		if s.capacity() < rows {
			t.Fatalf("width %d: capacity %d < %d", width, s.capacity(), rows)
		}
		for slot := range rows {
			r := s.row(uint32(slot))
			if unsafe.Pointer(&r[0]) != addrs[slot] {
				t.Fatalf("width %d: row %d moved", width, slot)
			}
			for i := range r {
				if r[i] != float32(slot*7+i) || held[slot][i] != r[i] {
					t.Fatalf("width %d: row %d col %d = %v", width, slot, i, r[i])
				}
			}
		}
		// Rows never overlap: the last element of a row is just before the
		// first of the next one, or the next row is in another chunk.
		for slot := 1; slot < rows; slot++ {
			if &held[slot-1][width-1] == &held[slot][0] {
				t.Fatalf("width %d: rows %d and %d overlap", width, slot-1, slot)
			}
		}
	}
}

func TestSlabChunkSizes(t *testing.T) {
	for _, tc := range []struct {
		width     int
		wantShift uint8
	}{
		{0, 14}, {1, 14}, {2, 14}, {16, 14}, {17, 13}, {33, 12}, {1 << 18, 0},
	} {
		s := newSlab[uint32](tc.width)
		if s.s != tc.wantShift || s.f != min(slabFirstShift, tc.wantShift) {
			t.Errorf("width %d: shifts f=%d s=%d, want s=%d", tc.width, s.f, s.s, tc.wantShift)
		}
	}
	s := newSlab[float32](16)
	s.ensure(1)
	if got := s.memoryBytes(); got != 64*64+24 {
		t.Fatalf("one-row slab holds %d bytes, want one 64-row chunk", got)
	}
	s.ensure(1 << 14)
	if s.capacity() != 1<<14 {
		t.Fatalf("capacity = %d, want 16384", s.capacity())
	}
	s.ensure(1<<14 + 1)
	if s.capacity() != 1<<15 || len(s.chunks[len(s.chunks)-1]) != 16*(1<<14) {
		t.Fatalf("capacity = %d after first full chunk", s.capacity())
	}
}
