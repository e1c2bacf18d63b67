package hdfstest

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/xdlgo/xps/tests/hdfstest/hdfspb"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksumSpec is a block's checksum scheme: one CRC per chunk of bpc bytes
// (the last chunk may be shorter), stored big-endian, 4 bytes each.
type checksumSpec struct {
	typ hdfspb.ChecksumTypeProto
	bpc int // bytes per checksum (chunk size)
}

func newChecksumSpec(p *hdfspb.ChecksumProto) (checksumSpec, error) {
	cs := checksumSpec{typ: p.GetType(), bpc: int(p.GetBytesPerChecksum())}
	switch cs.typ {
	case hdfspb.ChecksumTypeProto_CHECKSUM_NULL, hdfspb.ChecksumTypeProto_CHECKSUM_CRC32,
		hdfspb.ChecksumTypeProto_CHECKSUM_CRC32C:
	default:
		return checksumSpec{}, fmt.Errorf("unsupported checksum type %v", cs.typ)
	}
	if cs.bpc <= 0 || cs.bpc > 1<<20 {
		return checksumSpec{}, fmt.Errorf("invalid bytesPerChecksum %d", cs.bpc)
	}
	return cs, nil
}

func (cs checksumSpec) proto() *hdfspb.ChecksumProto {
	return &hdfspb.ChecksumProto{Type: cs.typ.Enum(), BytesPerChecksum: uint32Ptr(uint32(cs.bpc))}
}

// size is the number of bytes of one checksum.
func (cs checksumSpec) size() int {
	if cs.typ == hdfspb.ChecksumTypeProto_CHECKSUM_NULL {
		return 0
	}
	return 4
}

// numChunks is the number of chunks (and checksums) covering n bytes.
func (cs checksumSpec) numChunks(n int) int { return (n + cs.bpc - 1) / cs.bpc }

func (cs checksumSpec) crc(chunk []byte) uint32 {
	if cs.typ == hdfspb.ChecksumTypeProto_CHECKSUM_CRC32 {
		return crc32.ChecksumIEEE(chunk)
	}
	return crc32.Checksum(chunk, castagnoli)
}

// appendSums appends the checksums of data, chunked from its start, to dst.
func (cs checksumSpec) appendSums(dst, data []byte) []byte {
	if cs.size() == 0 {
		return dst
	}
	for off := 0; off < len(data); off += cs.bpc {
		dst = binary.BigEndian.AppendUint32(dst, cs.crc(data[off:min(off+cs.bpc, len(data))]))
	}
	return dst
}

// verify checks data, chunked from its start, against sums. It returns the
// index of the first bad chunk, or -1.
func (cs checksumSpec) verify(data, sums []byte) int {
	if cs.size() == 0 {
		return -1
	}
	for i, off := 0, 0; off < len(data); i, off = i+1, off+cs.bpc {
		want := binary.BigEndian.Uint32(sums[4*i:])
		if cs.crc(data[off:min(off+cs.bpc, len(data))]) != want {
			return i
		}
	}
	return -1
}

// replica is one block as the datanode holds it: its bytes and the
// checksums computed when they were written (the datanode's .meta file).
// Reads send the stored checksums, so bytes changed afterwards (see
// blockStore.corrupt) fail the client's verification.
type replica struct {
	genStamp  uint64
	csum      checksumSpec
	data      []byte
	sums      []byte // csum.size() bytes per chunk of data
	finalized bool
}

// blockStore holds the datanode's replicas in memory. It is safe for
// concurrent use. Lock order: namenode.mu before blockStore.mu.
type blockStore struct {
	mu struct {
		sync.Mutex
		replicas map[uint64]*replica // by block id
		bytes    uint64              // total data bytes held
	}
}

func newBlockStore() *blockStore {
	s := &blockStore{}
	s.mu.replicas = map[uint64]*replica{}
	return s
}

// create adds an empty replica being written (Hadoop's "rbw" state).
func (s *blockStore) create(id, genStamp uint64, csum checksumSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.replicas[id]; ok {
		return fmt.Errorf("ReplicaAlreadyExistsException: block blk_%d already exists", id)
	}
	s.mu.replicas[id] = &replica{genStamp: genStamp, csum: csum}
	return nil
}

// write appends data, whose checksums the caller has verified, at offset off
// of a replica being written, and finalizes the replica if last is set.
// Checksums are recomputed for every chunk the data touches, so a packet
// that completes a partial chunk leaves a checksum of the whole chunk.
func (s *blockStore) write(id uint64, off int64, data []byte, last bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.replicas[id]
	switch {
	case !ok:
		return fmt.Errorf("replica blk_%d not found", id)
	case r.finalized:
		return fmt.Errorf("replica blk_%d is already finalized", id)
	case off != int64(len(r.data)):
		return fmt.Errorf("packet offset %d does not match the %d bytes received for blk_%d", off, len(r.data), id)
	}
	if len(data) > 0 {
		firstChunk := len(r.data) / r.csum.bpc
		r.data = append(r.data, data...)
		r.sums = r.csum.appendSums(r.sums[:firstChunk*r.csum.size()], r.data[firstChunk*r.csum.bpc:])
		s.mu.bytes += uint64(len(data))
	}
	r.finalized = r.finalized || last
	return nil
}

// readView is a copy of part of a replica: data from the chunk boundary
// start, and the stored checksums covering it.
type readView struct {
	csum  checksumSpec
	start int64
	data  []byte
	sums  []byte
}

// read copies the chunks of replica id covering [off, off+n), starting at
// the chunk boundary at or before off, as a datanode's BlockSender does.
func (s *blockStore) read(id, genStamp uint64, off, n int64) (readView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.replicas[id]
	if !ok {
		return readView{}, fmt.Errorf("ReplicaNotFoundException: Replica not found for blk_%d", id)
	}
	if r.genStamp < genStamp {
		return readView{}, fmt.Errorf("replica blk_%d has generation stamp %d < requested %d", id, r.genStamp, genStamp)
	}
	length := int64(len(r.data))
	if off < 0 || n < 0 || off > length || n > length-off {
		return readView{}, fmt.Errorf("Offset %d and length %d don't match block blk_%d ( blockLen %d )", off, n, id, length)
	}
	bpc := int64(r.csum.bpc)
	start := off / bpc * bpc
	end := min((off+n+bpc-1)/bpc*bpc, length)
	sz := int64(r.csum.size())
	return readView{
		csum:  r.csum,
		start: start,
		data:  append([]byte(nil), r.data[start:end]...),
		sums:  append([]byte(nil), r.sums[start/bpc*sz:(end+bpc-1)/bpc*sz]...),
	}, nil
}

// blockChecksum returns the MD5 of the replica's stored checksums and their
// count, as OP_BLOCK_CHECKSUM reports for a replicated block.
func (s *blockStore) blockChecksum(id uint64) (csum checksumSpec, crcs uint64, md5sum []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.replicas[id]
	if !ok {
		return checksumSpec{}, 0, nil, fmt.Errorf("ReplicaNotFoundException: Replica not found for blk_%d", id)
	}
	sum := md5.Sum(r.sums)
	return r.csum, uint64(r.csum.numChunks(len(r.data))), sum[:], nil
}

// finalizedLen reports whether replica id is finalized with n bytes.
func (s *blockStore) finalizedLen(id, n uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.replicas[id]
	return ok && r.finalized && uint64(len(r.data)) == n
}

// remove deletes replicas; unknown ids are ignored.
func (s *blockStore) remove(ids []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if r, ok := s.mu.replicas[id]; ok {
			s.mu.bytes -= uint64(len(r.data))
			delete(s.mu.replicas, id)
		}
	}
}

// corrupt flips the bits of one byte in the middle of replica id, leaving
// its stored checksums as they were.
func (s *blockStore) corrupt(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.replicas[id]
	if !ok || len(r.data) == 0 {
		return fmt.Errorf("corrupt blk_%d: no replica with data: %w", id, ErrNotExist)
	}
	r.data[len(r.data)/2] ^= 0xff // readers copy under the lock, so in place is safe
	return nil
}

// usedBytes returns the number of data bytes held.
func (s *blockStore) usedBytes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.bytes
}
