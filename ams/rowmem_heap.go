//go:build !linux || purego

package ams

// offHeap reports whether slab chunks are mapped outside the Go heap.
const offHeap = false

// RowsOffHeap reports whether tables keep their rows and large index
// arrays outside the Go heap (mapped huge pages: the default Linux build),
// so that the heap of a process that serves them holds little more than
// request buffers.
const RowsOffHeap = offHeap

// mapRegion maps nothing: chunks come from the Go heap.
func mapRegion(int) []byte { return nil }

func registerRegion(*region) {}

func unmapRegion([]byte) {}
