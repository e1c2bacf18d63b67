package ams

import (
	"testing"
	"unsafe"
)

// TestRowMemory checks that chunks are zeroed, cache-line aligned, never
// move when the slab grows, and come from mapped regions where the build
// maps them.
func TestRowMemory(t *testing.T) {
	for _, width := range []int{1, 16, 38} { // width 1: chunks too small to map
		s := newSlab[float32](width)
		const rows = 300_000
		s.ensure(rows)
		for slot := uint32(0); slot < rows; slot += 997 {
			r := s.row(slot)
			for _, v := range r {
				if v != 0 {
					t.Fatalf("width %d: slot %d not zeroed", width, slot)
				}
			}
			r[0] = float32(slot)
		}
		first := &s.row(0)[0]
		s.ensure(4 * rows) // more regions
		if &s.row(0)[0] != first {
			t.Fatalf("width %d: row 0 moved when the slab grew", width)
		}
		for slot := uint32(0); slot < rows; slot += 997 {
			if got := s.row(slot)[0]; got != float32(slot) {
				t.Fatalf("width %d: slot %d holds %v after growing", width, slot, got)
			}
		}
		for _, c := range s.chunks {
			if len(c)*4 >= minMappedChunk && uintptr(unsafe.Pointer(&c[0]))%chunkAlign != 0 {
				t.Fatalf("width %d: a chunk is not %d-byte aligned", width, chunkAlign)
			}
		}
		mapped := s.mem.mappedBytes()
		big := false
		for _, c := range s.chunks {
			big = big || len(c)*4 >= minMappedChunk
		}
		if offHeap && big && mapped == 0 {
			t.Fatalf("width %d: nothing mapped off the heap", width)
		}
		if !offHeap && mapped != 0 {
			t.Fatalf("width %d: %d bytes mapped in a heap build", width, mapped)
		}
		if logical := int64(s.rows) * int64(width) * 4; mapped > logical+maxRegion {
			t.Fatalf("width %d: %d bytes mapped for %d bytes of rows", width, mapped, logical)
		}
	}
}

func TestRowMemoryAlloc(t *testing.T) {
	var m rowMemory
	if m.alloc(0) != nil {
		t.Fatal("alloc(0) returned memory")
	}
	a := m.alloc(100)
	b := m.alloc(hugePage) // does not fit the first region's rest: a new region
	if offHeap {
		if len(a) != 128 || len(b) != hugePage || cap(a) != 128 {
			t.Fatalf("len/cap %d/%d and %d", len(a), cap(a), len(b))
		}
		if len(m.regions) != 2 {
			t.Fatalf("%d regions, want 2", len(m.regions))
		}
		for _, r := range m.regions {
			if uintptr(unsafe.Pointer(&r.mem[0]))%hugePage != 0 {
				t.Fatal("a region is not aligned to 2 MiB")
			}
		}
		b[len(b)-1] = 1 // the whole range is writable
	} else if a != nil || b != nil {
		t.Fatal("a heap build mapped memory")
	}
}
