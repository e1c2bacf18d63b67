// Package prefetch asks the CPU to start loading memory that a loop will
// read a few iterations later, for loops that walk rows of a large table in
// random order (the SLIDE layer's active rows and its Adam updates), where
// every row is a cache miss and the hardware prefetcher cannot guess the
// next address.
//
// Invariants: a prefetch is only a hint. It never faults (a bad address is
// ignored by the CPU), never changes memory or results, and may be dropped;
// code must be correct without it. On amd64 (without the purego build tag)
// Lines issues one PREFETCHT0 per 64-byte line; elsewhere, and under
// purego (the build the race detector checks), it does nothing.
//
// # Files
//
//   - prefetch.go: the hints by type (Float32s, Bytes, Of...), all over lines.
//   - prefetch_amd64.go: the declaration of lines, whose body is prefetch_amd64.s: one PREFETCHT0 per cache line (amd64, not purego).
//   - prefetch_other.go: lines doing nothing (other architectures, purego).
package prefetch
