package ams

import "math/bits"

const (
	// slabMaxChunkShift caps the rows per chunk at 1<<14 = 16384: a chunk
	// of dim-16 float32 rows is then exactly 1 MiB.
	slabMaxChunkShift = 14
	// slabChunkBytesShift caps a chunk at about 1 MiB (1<<20 bytes) for
	// wide rows, by giving it fewer rows.
	slabChunkBytesShift = 20
	// slabFirstShift sets the size of the first chunk: 1<<6 = 64 rows, so
	// an empty or tiny table costs little.
	slabFirstShift = 6
)

// slab is chunked storage of fixed-width rows of T, addressed by slot.
//
// Small chunks are allocated with make([]T, ...) (pointer-free for the
// element types used here, so the garbage collector never scans them);
// chunks of at least minMappedChunk bytes come from mmap'd regions outside
// the Go heap where the build allows (see rowMemory). The slab grows by appending chunks and never moves a row, so a
// slice returned by row stays valid (and keeps aliasing that row) for the
// life of the slab.
//
// Chunk sizes: chunk 0 holds rows [0, 2^f); chunk k for 1 <= k <= s-f holds
// [2^(f+k-1), 2^(f+k)) (doubling, so small tables stay small); every later
// chunk holds 2^s rows. s is 14 for rows of up to 64 bytes and smaller for
// wider rows, keeping a full chunk near 1 MiB; f = min(6, s).
//
// Not safe for concurrent use.
type slab[T float32 | uint32] struct {
	width  int
	f, s   uint8 // log2 of the first and of the full chunk's row count
	rows   int   // rows held by the allocated chunks
	chunks [][]T
	mem    *rowMemory // where chunks of at least minMappedChunk bytes come from
}

func newSlab[T float32 | uint32](width int) slab[T] {
	if width < 0 {
		panic("ams: slab: negative width")
	}
	s := slabMaxChunkShift
	if rowBytes := 4 * width; rowBytes > 1 {
		if c := slabChunkBytesShift - bits.Len(uint(rowBytes-1)); c < s {
			s = max(c, 0)
		}
	}
	return slab[T]{width: width, f: uint8(min(slabFirstShift, s)), s: uint8(s), mem: new(rowMemory)}
}

// capacity returns the number of rows the allocated chunks hold.
func (s *slab[T]) capacity() int { return s.rows }

// chunkRows returns the row count of chunk k.
func (s *slab[T]) chunkRows(k int) int {
	switch {
	case k == 0:
		return 1 << s.f
	case k <= int(s.s-s.f):
		return 1 << (int(s.f) + k - 1)
	default:
		return 1 << s.s
	}
}

// ensure allocates chunks until rows [0, n) exist. New rows are zero.
func (s *slab[T]) ensure(n int) {
	for s.rows < n {
		r := s.chunkRows(len(s.chunks))
		s.chunks = append(s.chunks, makeChunk[T](s.mem, r*s.width))
		s.rows += r
	}
}

// locate returns the chunk and the row offset within it of slot.
func (s *slab[T]) locate(slot uint32) (k int, off uint32) {
	if slot>>s.s != 0 { // the common case in a big table
		return int(s.s-s.f) + int(slot>>s.s), slot & (1<<s.s - 1)
	}
	if slot>>s.f == 0 {
		return 0, slot
	}
	k = bits.Len32(slot) - int(s.f) // slot in [2^(f+k-1), 2^(f+k))
	return k, slot - 1<<(int(s.f)+k-1)
}

// row returns the row at slot, with its capacity capped at the width.
// The slot must be below capacity.
func (s *slab[T]) row(slot uint32) []T {
	k, off := s.locate(slot)
	c := s.chunks[k]
	o := int(off) * s.width
	return c[o : o+s.width : o+s.width]
}

// memoryBytes returns the bytes held by the chunks and the chunk directory.
func (s *slab[T]) memoryBytes() int64 {
	const elem = 4    // float32 and uint32
	const header = 24 // one slice header per chunk in the directory
	return int64(s.rows)*int64(s.width)*elem + int64(cap(s.chunks))*header
}
