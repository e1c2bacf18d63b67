package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// LayoutBlocks is FileMeta.Layout of a table file whose sstable entries
// are blocks of rows rather than one row each (CreateBlockTableFile).
//
// A block is the entry keyed by its first id (8 bytes big-endian, as a
// row's key) whose value holds up to BlockRows rows and deletions of ids
// in increasing order, each row of FileMeta.RowBytes bytes:
//
//	uvarint count
//	byte    w                 the bits of the largest gap (0 to 64)
//	byte    flags             bit 0: the block holds deletions
//	(count-1) gaps of w bits  each id minus the one before, packed
//	                          little-endian, the last byte padded with 0
//	ceil(count/8) bytes       with deletions only: bit i set when entry i
//	                          is one
//	the rows' bytes, in order (count - deletions) x RowBytes
//
// so that an id costs its gap's w bits (about 46 for a million hashed
// ids, whose gaps are near 2^64/n) instead of a sorted table's key, its
// shared-prefix varints and its 8-byte trailer.
const LayoutBlocks = "blocks"

// BlockRows is the most rows and deletions a block holds.
const BlockRows = 128

// errBlock is wrapped by the errors of a block that does not decode.
var errBlock = errors.New("bad block")

// CreateBlockTableFile is CreateTableFile (Snappy-compressed) for rows
// of rowBytes bytes each, written in blocks (LayoutBlocks): the file's
// FileMeta says so, and OpenTableFile reads it row by row as any other.
func CreateBlockTableFile(s Store, dir, name string, rowBytes int) (*TableWriter, error) {
	if rowBytes <= 0 {
		return nil, fmt.Errorf("snapshot: %s: blocks of rows of %d bytes", name, rowBytes)
	}
	t, err := CreateTableFile(s, dir, name, true)
	if err != nil {
		return nil, err
	}
	t.rowBytes = rowBytes
	return t, nil
}

// addToBlock adds id (value nil: a deletion) to the open block, writing
// it out when full. order(id) was checked.
func (t *TableWriter) addToBlock(id uint64, value []byte) error {
	if value != nil && len(value) != t.rowBytes {
		return fmt.Errorf("snapshot: %s: a row of %d bytes in blocks of rows of %d", t.cw.name, len(value), t.rowBytes)
	}
	t.blockIDs = append(t.blockIDs, id)
	t.blockDel = append(t.blockDel, value == nil)
	t.blockRows = append(t.blockRows, value...)
	if len(t.blockIDs) == BlockRows {
		return t.flushBlock()
	}
	return nil
}

// flushBlock writes the open block, if any.
func (t *TableWriter) flushBlock() error {
	ids := t.blockIDs
	if len(ids) == 0 {
		return nil
	}
	w, dels := 0, false
	for i := range ids {
		if i > 0 {
			w = max(w, bits.Len64(ids[i]-ids[i-1]))
		}
		dels = dels || t.blockDel[i]
	}
	v := binary.AppendUvarint(t.blockBuf[:0], uint64(len(ids)))
	flags := byte(0)
	if dels {
		flags = 1
	}
	v = append(v, byte(w), flags)
	var acc uint64 // bits not yet written, n < 8 of them between gaps
	n := 0
	emit := func(x uint64, bits int) { // bits <= 64-n
		acc |= x << n
		for n += bits; n >= 8; n -= 8 {
			v, acc = append(v, byte(acc)), acc>>8
		}
	}
	for i := 1; i < len(ids); i++ {
		g := ids[i] - ids[i-1]
		take := min(w, 64-n)
		emit(g&lowBits(take), take)
		if w > take { // take < 64
			emit(g>>take, w-take)
		}
	}
	if n > 0 {
		v = append(v, byte(acc))
	}
	if dels {
		bm := make([]byte, (len(ids)+7)/8)
		for i, d := range t.blockDel {
			if d {
				bm[i/8] |= 1 << (i % 8)
			}
		}
		v = append(v, bm...)
	}
	v = append(v, t.blockRows...)
	t.blockBuf = v
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], ids[0])
	t.blockIDs, t.blockDel, t.blockRows = ids[:0], t.blockDel[:0], t.blockRows[:0]
	if err := t.sw.Set(key[:], v); err != nil {
		return fmt.Errorf("snapshot: %s: %w", t.cw.name, err)
	}
	return nil
}

// lowBits returns a mask of the low n bits (n <= 64).
func lowBits(n int) uint64 {
	if n == 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// block is a decoded block: its entries' ids, which are deletions, and
// the rows' bytes (aliasing the entry's value).
type block struct {
	ids  []uint64
	del  []bool
	rows []byte
	next int // the entry Next returns next
	off  int // rows' bytes before it
}

// decodeBlock decodes the block keyed key of value v, of rows of
// rowBytes, into b, checking it whole: at most BlockRows entries, ids
// increasing from key, above last (the previous block's last id) when
// after, and exactly the rows' bytes.
func decodeBlock(b *block, key uint64, v []byte, rowBytes int, last uint64, after bool) error {
	n, k := binary.Uvarint(v)
	if k <= 0 || n == 0 || n > BlockRows || len(v) < k+2 {
		return fmt.Errorf("%w: a count of %d (1 to %d) or no header", errBlock, n, BlockRows)
	}
	w, flags := int(v[k]), v[k+1]
	v = v[k+2:]
	if w > 64 || flags > 1 {
		return fmt.Errorf("%w: gaps of %d bits, flags %#x", errBlock, w, flags)
	}
	if after && key <= last {
		return fmt.Errorf("%w: id %d after %d", errBlock, key, last)
	}
	packed := (int(n-1)*w + 7) / 8
	if len(v) < packed {
		return fmt.Errorf("%w: %d bytes for %d gaps of %d bits", errBlock, len(v), n-1, w)
	}
	b.ids, b.del, b.next, b.off = append(b.ids[:0], key), b.del[:0], 0, 0
	id, pos := key, 0 // pos: the bit to read next
	for i := 1; i < int(n); i++ {
		var g uint64
		for got := 0; got < w; {
			byt, bit := pos/8, pos%8
			take := min(w-got, 8-bit)
			g |= uint64(v[byt]>>bit&(1<<take-1)) << got
			got, pos = got+take, pos+take
		}
		if g == 0 || id+g <= id {
			return fmt.Errorf("%w: entry %d: a gap of %d after id %d", errBlock, i, g, id)
		}
		id += g
		b.ids = append(b.ids, id)
	}
	v = v[packed:]
	rows := int(n)
	for i := range int(n) {
		d := false
		if flags == 1 {
			if len(v) < (int(n)+7)/8 {
				return fmt.Errorf("%w: no room for the deletions' bitmap", errBlock)
			}
			d = v[i/8]>>(i%8)&1 == 1
		}
		if d {
			rows--
		}
		b.del = append(b.del, d)
	}
	if flags == 1 {
		v = v[(n+7)/8:]
	}
	if len(v) != rows*rowBytes {
		return fmt.Errorf("%w: %d bytes for %d rows of %d", errBlock, len(v), rows, rowBytes)
	}
	b.rows = v
	return nil
}

// nextInBlock moves t to the next entry of its block and reports whether
// there was one.
func (t *TableReader) nextInBlock() bool {
	b := &t.blk
	if b.next == len(b.ids) {
		return false
	}
	t.id, t.del = b.ids[b.next], b.del[b.next]
	t.val = nil
	if !t.del {
		t.val = b.rows[b.off : b.off+t.rowBytes : b.off+t.rowBytes]
		b.off += t.rowBytes
	}
	b.next++
	return true
}
