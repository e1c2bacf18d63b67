//go:build linux && !purego

package ams

import (
	"bufio"
	"fmt"
	"os"
	"testing"
	"unsafe"
)

// mapped reports whether any mapping of the process covers addr
// (/proc/self/maps).
func mapped(t *testing.T, addr uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(sc.Text(), "%x-%x", &lo, &hi); err == nil && lo <= addr && addr < hi {
			return true
		}
	}
	return false
}

// TestRegionRelease: a released region, and the head and tail mapRegion
// trims off to align it, are unmapped (package syscall's Munmap refused
// the trimmed slices, so resized indexes and reset tables kept their old
// memory mapped, and resident, for good).
func TestRegionRelease(t *testing.T) {
	r := newRegion(3 * hugePage)
	if r == nil {
		t.Fatal("no region mapped")
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	hi := lo + uintptr(len(r.mem))
	if lo%hugePage != 0 || len(r.mem) != 3*hugePage {
		t.Fatalf("region at %#x of %d bytes, want %d bytes aligned to %d", lo, len(r.mem), 3*hugePage, hugePage)
	}
	clear(r.mem) // resident
	for _, a := range []uintptr{lo, hi - 1} {
		if !mapped(t, a) {
			t.Fatalf("%#x of the region not mapped", a)
		}
	}
	for _, a := range []uintptr{lo - 1, hi} {
		if mapped(t, a) {
			// a neighbour's mapping may abut the region; the trimmed
			// pages of this one must not be it
			t.Logf("%#x next to the region is mapped (a neighbour?)", a)
		}
	}
	r.release()
	for _, a := range []uintptr{lo, lo + hugePage, hi - 1} {
		if mapped(t, a) {
			t.Fatalf("%#x still mapped after release", a)
		}
	}
}
