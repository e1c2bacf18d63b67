//go:build linux && !purego

package ams

import (
	"runtime"
	"syscall"
	"unsafe"
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
func mapRegion(size int) []byte {
	raw, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	// Trim to a hugePage-aligned range: unmap the head and the tail.
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	head := int((hugePage - addr%hugePage) % hugePage)
	if head > 0 {
		syscall.Munmap(raw[:head:head]) //nolint:errcheck // best effort: the range stays mapped
	}
	if tail := len(raw) - head - size; tail > 0 {
		syscall.Munmap(raw[head+size:]) //nolint:errcheck
	}
	mem := raw[head : head+size : head+size]
	// Transparent huge pages may be off, or "never": then this fails and
	// the region keeps normal pages.
	_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE
	return mem
}

// registerRegion unmaps r's memory once r is unreachable.
func registerRegion(r *region) {
	r.cleanup = runtime.AddCleanup(r, unmapRegion, r.mem)
}

// unmapRegion unmaps memory from mapRegion.
func unmapRegion(mem []byte) {
	syscall.Munmap(mem) //nolint:errcheck // nothing to do about a failure
}
