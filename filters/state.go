package filters

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
)

// The partition state format, version 1. All integers are little-endian.
//
//	offset size
//	 0     4    magic "XPSF"
//	 4     1    format version (1)
//	 5     1    kind: 0 none, 1 probability, 2 count
//	 6     2    levels L (N-1; 0 unless the filter is stateful)
//	 8     4    partition
//	12     4    words W per Bloom filter (FilterBits/64)
//	16     4    hashes k
//	20     4    capacity
//	24     2    generations G of the spec
//	26     2    generations g present, at most G
//	28     4    reserved, zero
//	32          g generations, oldest first, each:
//	              L x uint32  insertions per level
//	              L x W x uint64  the Bloom words, level by level
//	end-4  4    CRC-32C (Castagnoli) of every byte before it
const (
	stateMagic   = "XPSF"
	stateVersion = 1
	headerLen    = 32
	trailerLen   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded fixed part of a partition state.
type header struct {
	kind                   uint8
	levels                 uint16
	partition              uint32
	words, hashes, capcty  uint32
	generations, gensInUse uint16
}

func kindCode(kind string) uint8 {
	switch kind {
	case KindProbability:
		return 1
	case KindCount:
		return 2
	default:
		return 0
	}
}

// want returns the header the filter writes for part with g generations.
func (f *Filter) want(part uint32, g int) header {
	return header{kind: kindCode(f.spec.Kind), levels: uint16(f.sz.Levels), partition: part,
		words: uint32(f.sz.FilterBits / 64), hashes: uint32(f.sz.Hashes), capcty: uint32(f.sz.Capacity),
		generations: uint16(f.sz.Generations), gensInUse: uint16(g)}
}

// MarshalPartition returns the state of partition part (see
// AppendPartition).
func (f *Filter) MarshalPartition(part uint32) []byte { return f.AppendPartition(nil, part) }

// AppendPartition appends the state of partition part to dst and returns
// the extended slice: a versioned, checksummed encoding of its
// generations, or of none when the partition was never sighted or the
// filter is stateless. Two filters of the same spec that saw the same
// sightings of part write the same bytes. It panics when part is not below
// the partitions given to New.
func (f *Filter) AppendPartition(dst []byte, part uint32) []byte {
	f.checkPart(part)
	var gens []*generation
	if f.parts != nil && f.parts[part] != nil {
		gens = f.parts[part].gens
	}
	h := f.want(part, len(gens))
	start := len(dst)
	dst = slices.Grow(dst, headerLen+len(gens)*f.stateGenBytes()+trailerLen)
	dst = append(dst, stateMagic...)
	dst = append(dst, stateVersion, h.kind)
	dst = binary.LittleEndian.AppendUint16(dst, h.levels)
	dst = binary.LittleEndian.AppendUint32(dst, h.partition)
	dst = binary.LittleEndian.AppendUint32(dst, h.words)
	dst = binary.LittleEndian.AppendUint32(dst, h.hashes)
	dst = binary.LittleEndian.AppendUint32(dst, h.capcty)
	dst = binary.LittleEndian.AppendUint16(dst, h.generations)
	dst = binary.LittleEndian.AppendUint16(dst, h.gensInUse)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	for _, g := range gens {
		for _, n := range g.inserts {
			dst = binary.LittleEndian.AppendUint32(dst, n)
		}
		for _, w := range g.words {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// stateGenBytes is the encoded size of one generation.
func (f *Filter) stateGenBytes() int { return f.sz.Levels * (4 + f.sz.FilterBits/8) }

// UnmarshalPartition replaces the state of partition part with the one
// data encodes (written by AppendPartition of a filter with the same spec,
// for the same partition, on any owner). It checks all of data before it
// changes anything: on an error the partition keeps its state. A state that
// does not decode is refused with an error wrapping ErrCorrupt, an intact
// state of another policy or sizing with one wrapping ErrMismatch; no
// input makes it panic. It keeps no reference to data. It panics when part
// is not below the partitions given to New.
func (f *Filter) UnmarshalPartition(part uint32, data []byte) error {
	f.checkPart(part)
	h, err := f.decodeHeader(part, data)
	if err != nil {
		return err
	}
	gens, err := f.decodeGenerations(part, h, data[headerLen:len(data)-trailerLen])
	if err != nil {
		return err
	}
	if len(gens) == 0 {
		f.DropPartition(part)
		return nil
	}
	if f.parts == nil {
		f.parts = make([]*partState, f.partitions)
	}
	f.parts[part] = &partState{gens: gens}
	return nil
}

// decodeHeader checks the framing of data (length, magic, version,
// checksum) and its header against the filter's.
func (f *Filter) decodeHeader(part uint32, data []byte) (header, error) {
	corrupt := func(format string, args ...any) (header, error) {
		return header{}, fmt.Errorf("%w: partition %d: "+format, append([]any{ErrCorrupt, part}, args...)...)
	}
	if len(data) < headerLen+trailerLen {
		return corrupt("%d bytes, fewer than the %d of an empty state", len(data), headerLen+trailerLen)
	}
	if string(data[:4]) != stateMagic {
		return corrupt("magic %q, want %q", data[:4], stateMagic)
	}
	if data[4] != stateVersion {
		return corrupt("format version %d, this build reads %d", data[4], stateVersion)
	}
	body := len(data) - trailerLen
	if sum, want := crc32.Checksum(data[:body], castagnoli), binary.LittleEndian.Uint32(data[body:]); sum != want {
		return corrupt("checksum %#08x, the state says %#08x", sum, want)
	}
	le := binary.LittleEndian
	h := header{kind: data[5], levels: le.Uint16(data[6:]), partition: le.Uint32(data[8:]),
		words: le.Uint32(data[12:]), hashes: le.Uint32(data[16:]), capcty: le.Uint32(data[20:]),
		generations: le.Uint16(data[24:]), gensInUse: le.Uint16(data[26:])}
	if r := le.Uint32(data[28:]); r != 0 {
		return corrupt("reserved word %#x, want 0", r)
	}
	if h.partition != part {
		return corrupt("the state is of partition %d", h.partition)
	}
	if w := f.want(part, int(h.gensInUse)); h != w {
		return header{}, fmt.Errorf("%w: partition %d: the state has kind %d, %d levels, %d words, %d hashes, "+
			"capacity %d, %d generations; this filter (%s) has kind %d, %d levels, %d words, %d hashes, capacity %d, %d generations",
			ErrMismatch, part, h.kind, h.levels, h.words, h.hashes, h.capcty, h.generations,
			f.spec.Kind, w.kind, w.levels, w.words, w.hashes, w.capcty, w.generations)
	}
	if h.gensInUse > h.generations {
		return corrupt("%d generations present, more than the %d kept", h.gensInUse, h.generations)
	}
	if n := headerLen + int(h.gensInUse)*f.stateGenBytes() + trailerLen; len(data) != n {
		return corrupt("%d bytes for %d generations of %d bytes, want %d", len(data), h.gensInUse, f.stateGenBytes(), n)
	}
	return h, nil
}

// decodeGenerations decodes the generations of body (its length checked)
// and checks their insertion counts: every level of the current generation
// below capacity (it rotates when one reaches it), and in each older
// generation none above it and one at it.
func (f *Filter) decodeGenerations(part uint32, h header, body []byte) ([]*generation, error) {
	le := binary.LittleEndian
	levels, capacity := int(h.levels), h.capcty
	gens := make([]*generation, h.gensInUse)
	for i := range gens {
		words := make([]uint64, levels*int(h.words))
		g := f.generationOf(words)
		full := false
		for j := range g.inserts {
			g.inserts[j] = le.Uint32(body)
			body = body[4:]
			full = full || g.inserts[j] == capacity
			if g.inserts[j] > capacity {
				return nil, fmt.Errorf("%w: partition %d: generation %d level %d has %d insertions, capacity %d",
					ErrCorrupt, part, i, j, g.inserts[j], capacity)
			}
		}
		if current := i == len(gens)-1; full == current {
			return nil, fmt.Errorf("%w: partition %d: generation %d of %d is full %v, want %v",
				ErrCorrupt, part, i, len(gens), full, !current)
		}
		for k := range words {
			words[k] = le.Uint64(body)
			body = body[8:]
		}
		gens[i] = g
	}
	return gens, nil
}

// DropPartition forgets the state of partition part, as when the partition
// moved to another owner: its next sighting begins it anew. It panics when
// part is not below the partitions given to New.
func (f *Filter) DropPartition(part uint32) {
	f.checkPart(part)
	if f.parts != nil {
		f.parts[part] = nil
	}
}

// Partitions appends to dst the partitions that hold state, in increasing
// order, and returns the extended slice.
func (f *Filter) Partitions(dst []uint32) []uint32 {
	for p, ps := range f.parts {
		if ps != nil {
			dst = append(dst, uint32(p))
		}
	}
	return dst
}
