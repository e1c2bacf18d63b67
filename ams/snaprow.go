package ams

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// Snapshot rows. A row travels into a snapshot as its values (Dim
// float32), its optimizer state (StateWidth float32) and its statistics
// (last-touched time, hit count and last-update step, uint32), all
// little-endian: 4*(Dim + StateWidth) + 12 bytes. The layout belongs to
// the table's spec: restoring needs a table of the same Dim and optimizer.
// (Snapshots written before rows had a step, with 8 bytes of statistics,
// are refused with ErrDimMismatch.)

// SnapshotRowBytes is the size of an encoded row of t.
func (t *Table) SnapshotRowBytes() int { return 4*(t.dim+t.sw) + 4*statWords }

// AppendSnapshotRow appends id's encoded row to dst and reports whether
// the row exists.
func (t *Table) AppendSnapshotRow(dst []byte, id uint64) ([]byte, bool) {
	slot, ok := t.idx.get(id)
	if !ok {
		return dst, false
	}
	return t.appendSlot(dst, slot), true
}

// appendSlot appends the encoding of the row in slot to dst.
func (t *Table) appendSlot(dst []byte, slot uint32) []byte {
	n := t.SnapshotRowBytes()
	off := len(dst)
	dst = slices.Grow(dst, n)[:off+n]
	putRow(dst[off:], t.rows.row(slot))
	return dst
}

// LoadSnapshotRow writes id's row from its encoding (see
// AppendSnapshotRow), creating or overwriting it. A length that does not
// fit the table is an error wrapping ErrDimMismatch.
func (t *Table) LoadSnapshotRow(id uint64, b []byte, values, state []float32) error {
	if len(b) != t.SnapshotRowBytes() {
		return fmt.Errorf("%w: table %q: snapshot row of id %d has %d bytes, want %d (dim %d, %d state words)",
			ErrDimMismatch, t.spec.Name, id, len(b), t.SnapshotRowBytes(), t.dim, t.sw)
	}
	values, state = values[:t.dim], state[:t.sw]
	for i := range values {
		values[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	b = b[4*t.dim:]
	for i := range state {
		state[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	b = b[4*t.sw:]
	var stats [statWords]uint32
	for i := range stats {
		stats[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return t.load(id, values, state, stats)
}

// SnapshotRowValues decodes the values of a row encoded by
// AppendSnapshotRow for a table of dim dim (its first dim words).
func SnapshotRowValues(b []byte, dim int) []float32 {
	v := make([]float32, dim)
	DecodeSnapshotValues(v, b)
	return v
}

// DecodeSnapshotValues decodes the first len(dst) values of a row encoded
// by AppendSnapshotRow into dst.
func DecodeSnapshotValues(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// SnapshotRowInfo is what a sweep would show of a row encoded by
// AppendSnapshotRow (see RowInfo; Values aliases nothing of b), with its
// age counted from the table's step, saturated as Sweep does.
func (t *Table) SnapshotRowInfo(id uint64, b []byte, values []float32) RowInfo {
	DecodeSnapshotValues(values[:t.dim], b)
	st := b[4*(t.dim+t.sw):]
	step := binary.LittleEndian.Uint32(st[4*statStep:])
	return RowInfo{ID: id, Values: values[:t.dim], Touched: binary.LittleEndian.Uint32(st[4*statTouched:]),
		Hits: binary.LittleEndian.Uint32(st[4*statHits:]), Age: min(t.step-step, maxStepAge)}
}

// SnapshotRowStep is the last-update step of a row encoded by
// AppendSnapshotRow.
func (t *Table) SnapshotRowStep(b []byte) uint32 {
	return binary.LittleEndian.Uint32(b[4*(t.dim+t.sw+statStep):])
}

// StateWidth is the number of optimizer state words per row.
func (t *Table) StateWidth() int { return t.sw }

// Missing appends to dst the ids of ids that have no row, in their
// order: what a tiered table's shard reads from its cold tier before a
// pull or push.
func (t *Table) Missing(ids, dst []uint64) []uint64 {
	for k := 0; k < len(ids); k += rowGroup {
		g := ids[k:min(k+rowGroup, len(ids))]
		t.idx.prefetch(g)
		for _, id := range g {
			if _, ok := t.idx.find(id); !ok {
				dst = append(dst, id)
			}
		}
	}
	return dst
}

// MissingAt appends to dst the indices in ids of the ids that have no
// row, in order.
func (t *Table) MissingAt(ids []uint64, dst []int32) []int32 {
	for k := 0; k < len(ids); k += rowGroup {
		g := ids[k:min(k+rowGroup, len(ids))]
		t.idx.prefetch(g)
		for j, id := range g {
			if _, ok := t.idx.find(id); !ok {
				dst = append(dst, int32(k+j))
			}
		}
	}
	return dst
}

// MarkDirty marks id's row dirty, as a push would: a row an export has
// not taken yet keeps its mark when its shard moves it between tiers. It
// reports whether the row exists.
func (t *Table) MarkDirty(id uint64) bool {
	slot, ok := t.idx.get(id)
	if ok {
		t.markDirty(slot)
	}
	return ok
}

// IDs appends the ids of every row to dst, in no particular order.
func (t *Table) IDs(dst []uint64) []uint64 {
	t.idx.all(func(id uint64, _ uint32) bool {
		dst = append(dst, id)
		return true
	})
	return dst
}

// LoadSnapshotRows writes the rows of ids from their encodings (b holds
// SnapshotRowBytes bytes per id, in order, as AppendSnapshotRows writes
// them), creating or overwriting each, as LoadSnapshotRow would one at a
// time; a length of b that does not fit is an error wrapping
// ErrDimMismatch, and then nothing is loaded. Each id takes one probe of
// the index, which finds its row or indexes a new one in the bucket the
// probe ended at, with the next group's home buckets prefetched; on a
// little-endian machine each row's bytes are copied into its slab row as
// they are.
func (t *Table) LoadSnapshotRows(ids []uint64, b []byte) error {
	n := t.SnapshotRowBytes()
	if len(b) != n*len(ids) {
		return fmt.Errorf("%w: table %q: %d bytes of snapshot rows for %d ids, want %d each (dim %d, %d state words)",
			ErrDimMismatch, t.spec.Name, len(b), len(ids), n, t.dim, t.sw)
	}
	if len(ids) == 0 {
		return nil
	}
	t.idx.reserve(t.idx.len() + len(ids))
	t.idx.prefetch(ids[:min(rowGroup, len(ids))])
	for lo := 0; lo < len(ids); lo += rowGroup {
		hi := min(lo+rowGroup, len(ids))
		if hi < len(ids) {
			t.idx.prefetch(ids[hi:min(hi+rowGroup, len(ids))])
		}
		for k := lo; k < hi; k++ {
			slot, _ := t.idx.findOrPlace(ids[k], t.alloc)
			t.cleanSlot(slot)
			getRow(t.rows.row(slot), b[k*n:(k+1)*n])
		}
	}
	return nil
}

// getRow is putRow's inverse: the snapshot encoding in b into a slab row.
func getRow(row []float32, b []byte) {
	if nativeLittle {
		copy(floatBytes(row), b)
		return
	}
	words := rowWords(row)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
}

// rowWords views a slab row as its 32-bit words, so that the statistics'
// bit patterns never pass through a float32 operation.
func rowWords(row []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(row))), len(row))
}
