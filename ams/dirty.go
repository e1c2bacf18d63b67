package ams

// Dirty marks: the table keeps one bit per slot, set when a push updates
// the slot's row and cleared when an export takes it (TakeDirty) or the
// slot gets a new row (create, load), so that an incremental export
// finds the rows whose values changed since the previous one. Like every
// method of a Table, the marks are the stripe owner's alone: no lock, no
// atomic. A row created by a pull and never pushed is not dirty: its
// values are its initial ones, which a server computes for an id it has
// no row of.

// markDirty sets slot's mark.
func (t *Table) markDirty(slot uint32) { t.dirty[slot>>6] |= 1 << (slot & 63) }

// cleanSlot clears slot's marks (dirty and shadowed: a new row).
func (t *Table) cleanSlot(slot uint32) {
	t.dirty[slot>>6] &^= 1 << (slot & 63)
	t.shadow[slot>>6] &^= 1 << (slot & 63)
}

// growDirty makes room for the marks of slots [0, t.next), doubling.
func (t *Table) growDirty() {
	if need := int(t.next+63) >> 6; need > len(t.dirty) {
		d := make([]uint64, max(need, 2*len(t.dirty)))
		copy(d, t.dirty)
		t.dirty = d
		sh := make([]uint64, len(d))
		copy(sh, t.shadow)
		t.shadow = sh
	}
}

// Shadow marks: a tiered table's shard (package shard) leaves the disk
// copy of a row it reads back into DRAM where it is, stale from then on,
// and marks the row shadowed: when the row leaves DRAM, by the budget its
// disk copy is overwritten, by expiry it is deleted. The mark is cleared
// when the slot gets a new row.

// MarkShadowed marks id's row as having a stale copy on disk. It reports
// whether the row exists.
func (t *Table) MarkShadowed(id uint64) bool {
	slot, ok := t.idx.get(id)
	if ok {
		t.shadow[slot>>6] |= 1 << (slot & 63)
	}
	return ok
}

// TakeDirty appends to ids the id of every row pushed since the last
// TakeDirty or ClearDirty (or since the table was made), in no particular
// order, clears their marks and returns ids.
func (t *Table) TakeDirty(ids []uint64) []uint64 {
	t.idx.all(func(id uint64, slot uint32) bool {
		if w, b := slot>>6, uint64(1)<<(slot&63); t.dirty[w]&b != 0 {
			t.dirty[w] &^= b
			ids = append(ids, id)
		}
		return true
	})
	return ids
}

// ClearDirty clears every mark: a full export took every row.
func (t *Table) ClearDirty() { clear(t.dirty) }

// DirtyLen returns the number of rows marked dirty (for tests and stats).
func (t *Table) DirtyLen() int {
	n := 0
	t.idx.all(func(_ uint64, slot uint32) bool {
		if t.dirty[slot>>6]&(1<<(slot&63)) != 0 {
			n++
		}
		return true
	})
	return n
}
