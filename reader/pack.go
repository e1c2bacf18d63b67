package reader

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/xdlgo/xps/model/prefetch"
)

// Pack holds many sample groups in a few flat arrays shared by all of them:
// a worker's training data in memory, or a shuffle window. A libFFM sample
// of 23 one-hot features costs 784 bytes as one cloned *Group (the Group,
// its Level and one small heap allocation per slice), and about 233 bytes in
// a Pack, 1.27 times its 23 IDs (TestPackBytesPerSample measures both).
//
// Layout. Append encodes each group into one byte stream, data; starts[i] is
// the offset in data where group i's encoding begins. Numbers are uvarints
// and zig-zag varints as encoding/binary writes them, or fixed-size little
// endian (IDs 8 bytes, float32s 4 bytes as their bits):
//
//	group     flags:byte len(Levels):uvarint level... position
//	level     Len()<<1 | hasDense:uvarint line...
//	line      features<<1 | allOnes:uvarint [labels] [parent:uvarint]
//	          field:uvarint... id:8... [value:4...] [dense]
//	labels    (level 0) 0 for the one label 0, 1 for the one label 1,
//	          else 2+n:uvarint and n labels:4
//	parent    (levels below the top)
//	value     (when allOnes is 0: some value of the line is not exactly 1.0;
//	          otherwise the values are omitted and read back as 1.0)
//	dense     (when hasDense: the level has dense features) n:uvarint, then
//	          n times field:uvarint m:uvarint value:4 (m values)
//	position  Pos.File:uvarint Pos.Offset:varint [Pos.Index:varint]
//	          [Next.File:uvarint] Next.Offset-Pos.Offset:varint
//	          [Next.Index:varint] [Line:varint]
//
// The bracketed parts of position are present when flags has packPosIndex,
// packNextFile, packNextIndex or packLine set (Next.File differs from
// Pos.File, the others are not 0). File names are indices into files, the
// distinct names seen since the last Reset.
//
// Fields take one byte below 128, two below 16384, three below MaxField.
// A columnar layout (offsets per group, level and line, uint16 fields,
// fixed-size positions) would spend about 60 bytes more per libFFM sample.
//
// data and starts are stored in chunks (64 KiB of bytes, 8192 offsets), so
// that a large Pack never copies itself to grow and holds at most one
// partly used chunk of each; a group's encoding may straddle chunks.
//
// Invariants:
//
//  1. Len() == starts.n; starts[0] == 0 and starts increases (an encoding
//     has at least 2 bytes); group i's encoding is data[starts[i]:
//     starts[i+1]], the last one's ends at data.n.
//  2. Element j of data or starts is chunks[j>>shift][j&(1<<shift-1)]:
//     every chunk before the one holding element n-1 is full; the first may
//     be shorter than 1<<shift only while it is the only one used; chunks
//     after it are empty (kept by Reset).
//  3. files holds distinct names and fileIdx[files[j]] == j.
//  4. samples is the sum of the groups' NumSamples.
//  5. Every group appended satisfied Validate. Group(i, dst) gives dst what
//     dst.CopyFrom(original) would give it, floats bit for bit, except that
//     empty slices may be nil or not (a level below the top always has a
//     non-nil Parent, the top level a nil one, as after Group.Reset).
//
// The zero Pack is empty and ready to use. Append and Reset mutate the Pack;
// Len, NumSamples, Group, Samples and Bytes only read it and may run
// concurrently with each other.
type Pack struct {
	data    packChunks[byte]  // the groups' encodings, back to back
	starts  packChunks[int64] // where each group's encoding begins in data
	samples int64
	buf     []byte            // the encoding of the group being appended
	files   []string          // the distinct file names of positions
	fileIdx map[string]uint32 // the index of each name in files
	last    uint32            // the index of the last name looked up
	// most is the size of the largest group appended since the last
	// Reset, level by level (each figure on its own): Group sizes its
	// destination for it at once, so that a pool of groups refilled from
	// the Pack stops allocating after one round.
	most packShape
}

// packShape is the largest lines, features, dense features, dense values
// of each level of the groups of a Pack, and their most labels.
type packShape struct {
	levels []packLevelShape
	labels int
}

type packLevelShape struct{ lines, features, dense, denseValues int }

// Chunk sizes of a Pack's arrays, as log2 of their length in elements.
const (
	packDataShift  = 16 // 64 KiB
	packStartShift = 13 // 8192 offsets, 64 KiB
	// packBufKeep is the largest scratch buffer a Pack keeps after an
	// Append: the encoding of a larger group is not kept around.
	packBufKeep = 1 << packDataShift
)

// Bits of a group's flags byte: which optional parts its position has.
const (
	packPosIndex  = 1 << iota // Pos.Index != 0
	packNextFile              // Next.File != Pos.File
	packNextIndex             // Next.Index != 0
	packLine                  // Line != 0
)

// packOne is the bits of the float32 1.0.
const packOne = 0x3f800000

// Len returns the number of groups the Pack holds.
func (p *Pack) Len() int { return int(p.starts.n) }

// Samples returns the number of samples of all groups (counting the ones
// before each group's Pos.Index, like Group.NumSamples).
func (p *Pack) Samples() int64 { return p.samples }

// NumSamples returns the number of samples (level-0 lines) of group i.
func (p *Pack) NumSamples(i int) int {
	r := p.reader(i)
	r.byte()
	r.uvarint() // levels, at least 1
	return int(r.uvarint() >> 1)
}

// Bytes returns the memory the Pack holds: the capacities of its arrays,
// with about 48 bytes per file name for the map that interns them.
func (p *Pack) Bytes() int64 {
	n := p.data.bytes(1) + p.starts.bytes(8) + int64(cap(p.buf)) + int64(cap(p.files))*(16+48)
	for _, f := range p.files {
		n += int64(len(f))
	}
	return n
}

// Reset empties the Pack, keeping its memory for the groups appended next.
func (p *Pack) Reset() {
	p.data.reset()
	p.starts.reset()
	p.samples = 0
	clear(p.files) // let go of the names
	p.files = p.files[:0]
	clear(p.fileIdx)
	p.last = 0
	p.most.levels, p.most.labels = p.most.levels[:0], 0
}

// note makes p.most cover g.
func (p *Pack) note(g *Group) {
	m := &p.most
	for len(m.levels) < len(g.Levels) {
		m.levels = append(m.levels, packLevelShape{})
	}
	for k := range g.Levels {
		l, ml := &g.Levels[k], &m.levels[k]
		ml.lines, ml.features = max(ml.lines, l.Len()), max(ml.features, len(l.IDs))
		ml.dense, ml.denseValues = max(ml.dense, len(l.DenseFields)), max(ml.denseValues, len(l.DenseValues))
	}
	m.labels = max(m.labels, len(g.Labels))
}

// reserve gives dst, just reset to levels levels, the capacity of the
// largest group of p (p.most), so that decoding any group into it does
// not grow it.
func (p *Pack) reserve(dst *Group) {
	m := &p.most
	for k := range min(len(dst.Levels), len(m.levels)) {
		l, ml := &dst.Levels[k], &m.levels[k]
		if k < len(dst.Levels)-1 {
			l.Parent = slices.Grow(l.Parent, ml.lines)
		}
		l.Offsets = slices.Grow(l.Offsets, ml.lines)
		l.Fields, l.IDs = slices.Grow(l.Fields, ml.features), slices.Grow(l.IDs, ml.features)
		l.Values = slices.Grow(l.Values, ml.features)
		l.DenseOffsets = slices.Grow(l.DenseOffsets, ml.lines)
		l.DenseFields, l.DenseEnds = slices.Grow(l.DenseFields, ml.dense), slices.Grow(l.DenseEnds, ml.dense)
		l.DenseValues = slices.Grow(l.DenseValues, ml.denseValues)
	}
	if len(m.levels) > 0 {
		dst.LabelOffsets = slices.Grow(dst.LabelOffsets, m.levels[0].lines)
	}
	dst.Labels = slices.Grow(dst.Labels, m.labels)
}

// Append copies g into the Pack as group Len(). g must satisfy Validate
// (every Source's groups do); Append panics otherwise.
func (p *Pack) Append(g *Group) {
	if err := g.Validate(); err != nil {
		panic(fmt.Sprintf("reader: Pack.Append: %v", err))
	}
	if p.data.shift == 0 {
		p.data.shift, p.starts.shift = packDataShift, packStartShift
	}
	b := append(p.buf[:0], packFlags(g))
	b = binary.AppendUvarint(b, uint64(len(g.Levels)))
	for k := range g.Levels {
		b = appendPackLevel(b, g, k)
	}
	b = p.appendPosition(b, g)
	p.starts.write([]int64{p.data.n})
	p.data.write(b)
	p.samples += int64(g.NumSamples())
	p.note(g)
	if cap(b) <= packBufKeep {
		p.buf = b
	}
}

// packFlags returns the flags byte of g's encoding.
func packFlags(g *Group) byte {
	var f byte
	if g.Pos.Index != 0 {
		f |= packPosIndex
	}
	if g.Next.File != g.Pos.File {
		f |= packNextFile
	}
	if g.Next.Index != 0 {
		f |= packNextIndex
	}
	if g.Line != 0 {
		f |= packLine
	}
	return f
}

// appendPackLevel appends the encoding of level k of g to b.
func appendPackLevel(b []byte, g *Group, k int) []byte {
	l := &g.Levels[k]
	n, dense := l.Len(), len(l.DenseFields) > 0
	b = binary.AppendUvarint(b, uint64(n)<<1|packBit(dense))
	for i := range n {
		fields, ids, values := l.Line(i)
		ones := true
		for _, v := range values {
			ones = ones && math.Float32bits(v) == packOne
		}
		b = binary.AppendUvarint(b, uint64(len(ids))<<1|packBit(ones))
		if k == 0 {
			b = appendPackLabels(b, g.SampleLabels(i))
		}
		if k < len(g.Levels)-1 {
			b = binary.AppendUvarint(b, uint64(l.Parent[i]))
		}
		for _, f := range fields {
			b = binary.AppendUvarint(b, uint64(f))
		}
		for _, id := range ids {
			b = binary.LittleEndian.AppendUint64(b, id)
		}
		if !ones {
			b = appendPackFloats(b, values)
		}
		if dense {
			b = appendPackDense(b, l, i)
		}
	}
	return b
}

func packBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// appendPackFloats appends the bits of values, 4 bytes each.
func appendPackFloats(b []byte, values []float32) []byte {
	for _, v := range values {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// appendPackLabels appends the encoding of a sample's labels to b.
func appendPackLabels(b []byte, labels []float32) []byte {
	if len(labels) == 1 {
		switch math.Float32bits(labels[0]) {
		case 0:
			return append(b, 0)
		case packOne:
			return append(b, 1)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(labels))+2)
	return appendPackFloats(b, labels)
}

// appendPackDense appends the dense features of line i of l to b.
func appendPackDense(b []byte, l *Level, i int) []byte {
	lo, hi := l.DenseOffsets[i], l.DenseOffsets[i+1]
	b = binary.AppendUvarint(b, uint64(hi-lo))
	for j := lo; j < hi; j++ {
		start := int32(0)
		if j > 0 {
			start = l.DenseEnds[j-1]
		}
		b = binary.AppendUvarint(b, uint64(l.DenseFields[j]))
		b = binary.AppendUvarint(b, uint64(l.DenseEnds[j]-start))
		b = appendPackFloats(b, l.DenseValues[start:l.DenseEnds[j]])
	}
	return b
}

// appendPosition appends the encoding of g's positions to b.
func (p *Pack) appendPosition(b []byte, g *Group) []byte {
	b = binary.AppendUvarint(b, uint64(p.intern(g.Pos.File)))
	b = binary.AppendVarint(b, g.Pos.Offset)
	if g.Pos.Index != 0 {
		b = binary.AppendVarint(b, int64(g.Pos.Index))
	}
	if g.Next.File != g.Pos.File {
		b = binary.AppendUvarint(b, uint64(p.intern(g.Next.File)))
	}
	b = binary.AppendVarint(b, g.Next.Offset-g.Pos.Offset)
	if g.Next.Index != 0 {
		b = binary.AppendVarint(b, int64(g.Next.Index))
	}
	if g.Line != 0 {
		b = binary.AppendVarint(b, g.Line)
	}
	return b
}

// intern returns the index of name in files, adding it when it is new.
func (p *Pack) intern(name string) uint32 {
	if int(p.last) < len(p.files) && p.files[p.last] == name {
		return p.last
	}
	j, ok := p.fileIdx[name]
	if !ok {
		if p.fileIdx == nil {
			p.fileIdx = make(map[string]uint32)
		}
		j = uint32(len(p.files))
		p.files = append(p.files, name)
		p.fileIdx[name] = j
	}
	p.last = j
	return j
}

// Group copies group i into dst, reusing dst's buffers: dst becomes what
// dst.CopyFrom(g) gave it for the group g appended as group i (see
// invariant 5), with the values of 1.0 that the Pack omitted written back.
// It allocates nothing once dst's buffers have grown, as long as the groups
// it is given have the same number of levels (dst.Reset drops the buffer of
// the top level's Parent); it grows them at once to hold the largest group
// of the Pack, so a dst is grown once, on its first use, while the Pack
// holds the same groups.
func (p *Pack) Group(i int, dst *Group) {
	r := p.reader(i)
	flags := r.byte()
	dst.Reset(int(r.uvarint()))
	p.reserve(dst)
	for k := range dst.Levels {
		r.level(dst, k)
	}
	r.position(dst, flags, p.files)
}

// Prefetching ahead of a read in shuffled order (WindowSource): group i's
// encoding sits anywhere in the Pack, so its start offset and its bytes
// are cache misses that the hardware prefetcher cannot see coming.
const (
	// PrefetchStartAhead and PrefetchAhead are how many groups ahead of
	// the one being read a reader in shuffled order calls PrefetchStart
	// and Prefetch: the start offset is hinted first, so that Prefetch
	// finds it in cache.
	PrefetchStartAhead = 16
	PrefetchAhead      = 8
	// prefetchBytes bounds the bytes of a group Prefetch hints: a libFFM
	// sample of 50 features encodes to about 500.
	prefetchBytes = 1024
)

// PrefetchStart hints the CPU to load where group i's encoding begins. It
// changes nothing; i must be in [0, Len()).
func (p *Pack) PrefetchStart(i int) { prefetch.Of(p.starts.addr(int64(i))) }

// Prefetch hints the CPU to load the start of group i's encoding (up to
// prefetchBytes, within its chunk). It reads the group's start offset (see
// PrefetchStart) and changes nothing; i must be in [0, Len()).
func (p *Pack) Prefetch(i int) {
	b := p.reader(i).b // the rest of the chunk the encoding starts in
	prefetch.Bytes(b[:min(len(b), prefetchBytes)])
}

// reader returns a reader of group i's encoding.
func (p *Pack) reader(i int) packReader {
	if i < 0 || i >= p.Len() {
		panic(fmt.Sprintf("reader: Pack group %d outside [0, %d)", i, p.Len()))
	}
	off := p.starts.at(int64(i))
	k := int(off >> p.data.shift)
	return packReader{chunks: p.data.chunks, k: k, b: p.data.chunks[k][off&(1<<p.data.shift-1):]}
}

// packReader reads an encoding from the chunks of a Pack's data, crossing
// from one chunk to the next.
type packReader struct {
	chunks [][]byte
	k      int    // the chunk being read
	b      []byte // the unread rest of chunk k
}

func (r *packReader) byte() byte {
	if len(r.b) == 0 {
		r.k++
		r.b = r.chunks[r.k]
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

func (r *packReader) uvarint() uint64 {
	if len(r.b) > 0 && r.b[0] < 0x80 { // one byte: most counts and fields
		v := r.b[0]
		r.b = r.b[1:]
		return uint64(v)
	}
	return r.uvarintLong()
}

func (r *packReader) uvarintLong() uint64 {
	if v, n := binary.Uvarint(r.b); n > 0 {
		r.b = r.b[n:]
		return v
	}
	var v uint64 // the varint straddles two chunks
	for s := uint(0); ; s += 7 {
		x := r.byte()
		v |= uint64(x&0x7f) << s
		if x < 0x80 {
			return v
		}
	}
}

func (r *packReader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *packReader) uint64() uint64 {
	if len(r.b) >= 8 {
		v := binary.LittleEndian.Uint64(r.b)
		r.b = r.b[8:]
		return v
	}
	return uint64(r.uint32Short()) | uint64(r.uint32Short())<<32 // it straddles two chunks
}

func (r *packReader) uint32() uint32 {
	if len(r.b) >= 4 {
		v := binary.LittleEndian.Uint32(r.b)
		r.b = r.b[4:]
		return v
	}
	return r.uint32Short()
}

// uint32Short reads a uint32 one byte at a time, crossing chunks.
func (r *packReader) uint32Short() uint32 {
	var v uint32
	for s := 0; s < 32; s += 8 {
		v |= uint32(r.byte()) << s
	}
	return v
}

func (r *packReader) float() float32 { return math.Float32frombits(r.uint32()) }

// level reads level k of g (after g.Reset).
func (r *packReader) level(g *Group, k int) {
	l := &g.Levels[k]
	head := r.uvarint()
	for range head >> 1 {
		line := r.uvarint()
		if k == 0 {
			r.labels(g)
		}
		if k < len(g.Levels)-1 {
			l.Parent = append(l.Parent, int32(r.uvarint()))
		}
		r.features(l, int(line>>1), line&1 != 0)
		l.Offsets = append(l.Offsets, int32(len(l.IDs)))
		if head&1 != 0 {
			r.dense(l)
		}
		l.DenseOffsets = append(l.DenseOffsets, int32(len(l.DenseFields)))
	}
}

// features reads the n sparse features of a line into l; ones says that
// their values are omitted, all 1.0.
func (r *packReader) features(l *Level, n int, ones bool) {
	for range n {
		l.Fields = append(l.Fields, uint32(r.uvarint()))
	}
	if len(r.b) >= 8*n { // the IDs do not straddle chunks
		for j := range n {
			l.IDs = append(l.IDs, binary.LittleEndian.Uint64(r.b[8*j:]))
		}
		r.b = r.b[8*n:]
	} else {
		for range n {
			l.IDs = append(l.IDs, r.uint64())
		}
	}
	for range n {
		v := float32(1)
		if !ones {
			v = r.float()
		}
		l.Values = append(l.Values, v)
	}
}

// labels reads the labels of the next sample of g.
func (r *packReader) labels(g *Group) {
	switch h := r.uvarint(); h {
	case 0, 1:
		g.Labels = append(g.Labels, float32(h))
	default:
		for range h - 2 {
			g.Labels = append(g.Labels, r.float())
		}
	}
	g.LabelOffsets = append(g.LabelOffsets, int32(len(g.Labels)))
}

// dense reads the dense features of the last line of l.
func (r *packReader) dense(l *Level) {
	for range r.uvarint() {
		l.DenseFields = append(l.DenseFields, uint32(r.uvarint()))
		for range r.uvarint() {
			l.DenseValues = append(l.DenseValues, r.float())
		}
		l.DenseEnds = append(l.DenseEnds, int32(len(l.DenseValues)))
	}
}

// position reads g's Pos, Next and Line.
func (r *packReader) position(g *Group, flags byte, files []string) {
	g.Pos.File = files[r.uvarint()]
	g.Pos.Offset = r.varint()
	if flags&packPosIndex != 0 {
		g.Pos.Index = int(r.varint())
	}
	g.Next.File = g.Pos.File
	if flags&packNextFile != 0 {
		g.Next.File = files[r.uvarint()]
	}
	g.Next.Offset = g.Pos.Offset + r.varint()
	if flags&packNextIndex != 0 {
		g.Next.Index = int(r.varint())
	}
	if flags&packLine != 0 {
		g.Line = r.varint()
	}
}

// packChunks is an append-only array stored in chunks of 1<<shift elements
// (see Pack's invariant 2), so that it never copies itself to grow once it
// holds more than one chunk.
type packChunks[T any] struct {
	chunks [][]T
	n      int64 // elements held
	shift  uint8
}

// write appends v.
func (c *packChunks[T]) write(v []T) {
	full := 1 << c.shift
	for len(v) > 0 {
		k := int(c.n >> c.shift)
		if k == len(c.chunks) {
			size := full
			if k == 0 {
				size = min(full, max(64, len(v)))
			}
			c.chunks = append(c.chunks, make([]T, 0, size))
		}
		ch := c.chunks[k]
		if len(ch) == cap(ch) { // the first chunk, still short: grow it
			ch = append(make([]T, 0, min(full, max(2*cap(ch), len(ch)+len(v)))), ch...)
		}
		m := copy(ch[len(ch):cap(ch)], v)
		c.chunks[k] = ch[:len(ch)+m]
		c.n += int64(m)
		v = v[m:]
	}
}

// at returns element j.
func (c *packChunks[T]) at(j int64) T { return *c.addr(j) }

// addr returns the address of element j.
func (c *packChunks[T]) addr(j int64) *T { return &c.chunks[j>>c.shift][j&(1<<c.shift-1)] }

// reset empties the array, keeping its chunks.
func (c *packChunks[T]) reset() {
	for k := range c.chunks {
		c.chunks[k] = c.chunks[k][:0]
	}
	c.n = 0
}

// bytes returns the memory held by the chunks of elements of size bytes.
func (c *packChunks[T]) bytes(size int64) int64 {
	n := int64(cap(c.chunks)) * 24
	for _, ch := range c.chunks {
		n += int64(cap(ch)) * size
	}
	return n
}
