//go:build linux && !purego

package ams

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// offHeap reports whether slab chunks are mapped outside the Go heap.
const offHeap = true

// RowsOffHeap reports whether tables keep their rows and large index
// arrays outside the Go heap (mapped huge pages: the default Linux build),
// so that the heap of a process that serves them holds little more than
// request buffers.
const RowsOffHeap = offHeap

// mapRegion maps size bytes (a multiple of hugePage) of zeroed anonymous
// memory aligned to hugePage and advises it as huge pages; nil on failure.
//
// It maps and unmaps by address (unix.MmapPtr, unix.MunmapPtr): package
// syscall's Munmap takes only a slice Mmap returned, whole, and refuses
// (EINVAL) any other, so the trimmed range it was once given here was
// never unmapped: every resized index leaked its old array and a reset
// table its rows (TestRegionRelease).
func mapRegion(size int) []byte {
	raw, err := unix.MmapPtr(-1, 0, nil, uintptr(size+hugePage), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil
	}
	// Trim to a hugePage-aligned range: unmap the head and the tail.
	addr := uintptr(raw)
	head := (hugePage - addr%hugePage) % hugePage
	if head > 0 {
		unix.MunmapPtr(raw, head) //nolint:errcheck // best effort: the range stays mapped
	}
	if tail := uintptr(hugePage) - head; tail > 0 {
		unix.MunmapPtr(unsafe.Add(raw, head+uintptr(size)), tail) //nolint:errcheck
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(raw, head)), size)
	// Transparent huge pages may be off, or "never": then this fails and
	// the region keeps normal pages.
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE)
	return mem
}

// registerRegion unmaps r's memory once r is unreachable.
func registerRegion(r *region) {
	r.cleanup = runtime.AddCleanup(r, unmapRegion, r.mem)
}

// unmapRegion unmaps memory from mapRegion.
func unmapRegion(mem []byte) {
	unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem))) //nolint:errcheck // nothing to do about a failure
}
