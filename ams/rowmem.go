package ams

import (
	"runtime"
	"unsafe"
)

// Row memory: where slab chunks and large index arrays live (see the
// package documentation, point 2).
//
// On Linux (without the purego build tag) chunks are carved from regions
// mapped with mmap outside the Go heap: the garbage collector never scans
// or moves them, and each region is aligned to 2 MiB and advised as huge
// pages (madvise MADV_HUGEPAGE), so random row reads miss the TLB less. A
// slab's regions grow geometrically (2 MiB, 4 MiB, ... up to 64 MiB each),
// and growing maps a new region: rows never move, and nothing is copied.
// A region is unmapped when the slab that owns it becomes unreachable
// (runtime.AddCleanup on its header). When mmap fails, or on other systems,
// or with -tags purego (the build the race detector can see into, since
// it does not instrument mmap'd memory), chunks come from the Go heap.
const (
	// hugePage is the alignment and the smallest size of a region.
	hugePage = 2 << 20
	// maxRegion caps the size a region grows to (a larger chunk gets a
	// region of its own size, rounded up to hugePage).
	maxRegion = 64 << 20
	// chunkAlign aligns every chunk to a cache line.
	chunkAlign = 64
	// minMappedChunk is the smallest chunk taken from a region: the first,
	// small chunks of a table stay on the heap, so that a tiny table does
	// not cost a (huge) page.
	minMappedChunk = 256 << 10
)

// rowMemory hands out zeroed, 64-byte aligned byte ranges from mapped
// regions. Not safe for concurrent use (a slab's owner uses it).
type rowMemory struct {
	regions []*region // keeps every region reachable while the slab is
	free    []byte    // the unused tail of the newest region
	next    int       // size of the next region
}

// region is one mapped range; its cleanup unmaps it once the region is
// unreachable, unless release unmapped it first.
type region struct {
	mem     []byte
	cleanup runtime.Cleanup
}

// newRegion maps a region of at least size bytes (rounded up to hugePage),
// or returns nil (heap builds, or mmap failed).
func newRegion(size int) *region {
	mem := mapRegion((size + hugePage - 1) &^ (hugePage - 1))
	if mem == nil {
		return nil
	}
	r := &region{mem: mem}
	registerRegion(r)
	return r
}

// release unmaps r now. r must not be used afterwards.
func (r *region) release() {
	if r == nil {
		return
	}
	r.cleanup.Stop()
	if len(r.mem) > 0 {
		unmapRegion(r.mem)
	}
	r.mem = nil
}

// releaseHead unmaps the first n bytes of r (a multiple of hugePage) now:
// r's memory is the rest from here on. The caller must release r in the
// end (its cleanup, which would unmap the whole of the first range, is
// off).
func (r *region) releaseHead(n int) {
	r.cleanup.Stop()
	unmapRegion(r.mem[:n:n])
	r.mem = r.mem[n:]
}

// uint32s views r's memory as n uint32s (n*4 <= len(r.mem)).
func (r *region) uint32s(n int) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(r.mem))), n)
}

// alloc returns n zeroed bytes outside the Go heap, or nil when no region
// can be mapped (the caller then uses the heap).
func (m *rowMemory) alloc(n int) []byte {
	if n <= 0 {
		return nil
	}
	n = (n + chunkAlign - 1) &^ (chunkAlign - 1)
	if len(m.free) < n {
		m.next = min(max(m.next*2, hugePage), maxRegion)
		size := max(m.next, (n+hugePage-1)&^(hugePage-1))
		r := newRegion(size)
		if r == nil {
			return nil
		}
		m.regions = append(m.regions, r)
		m.free = r.mem
	}
	b := m.free[:n:n]
	m.free = m.free[n:]
	return b
}

// mappedBytes returns the bytes of the mapped regions.
func (m *rowMemory) mappedBytes() int64 {
	var n int64
	for _, r := range m.regions {
		n += int64(len(r.mem))
	}
	return n
}

// makeChunk returns a zeroed chunk of n elements of T from m, or from the
// heap when m has none.
func makeChunk[T float32 | uint32](m *rowMemory, n int) []T {
	if n*4 < minMappedChunk {
		return make([]T, n)
	}
	if b := m.alloc(n * 4); b != nil {
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	return make([]T, n)
}
