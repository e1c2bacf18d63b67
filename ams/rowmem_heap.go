//go:build !linux || purego

package ams

// offHeap reports whether slab chunks are mapped outside the Go heap.
const offHeap = false

// mapRegion maps nothing: chunks come from the Go heap.
func mapRegion(int) []byte { return nil }

func registerRegion(*region) {}

func unmapRegion([]byte) {}
