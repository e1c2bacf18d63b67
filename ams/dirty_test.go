package ams

import (
	"slices"
	"testing"
)

func TestDirtyMarks(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 2})
	g := []float32{1, 1}
	tb.Pull([]uint64{1, 2, 3}, make([]float32, 6), true, 1) // created by pulls: not dirty
	if got := tb.TakeDirty(nil); len(got) != 0 {
		t.Fatalf("rows created by pulls are dirty: %v", got)
	}
	tb.Push([]uint64{2, 4}, append(g, g...), 2) // 2 updated, 4 created by the push
	got := tb.TakeDirty(nil)
	slices.Sort(got)
	if !slices.Equal(got, []uint64{2, 4}) {
		t.Fatalf("TakeDirty after pushes of 2 and 4 = %v", got)
	}
	if got := tb.TakeDirty(nil); len(got) != 0 {
		t.Fatalf("TakeDirty again = %v, want nothing (taken)", got)
	}
	// A dirty row deleted, its slot reused by a row created by a pull:
	// the new row is not dirty.
	tb.Push([]uint64{3}, g, 3)
	tb.Delete(3)
	tb.Pull([]uint64{5}, make([]float32, 2), true, 3)
	if got := tb.TakeDirty(nil); len(got) != 0 {
		t.Fatalf("after deleting dirty 3 and creating 5 by a pull: dirty %v", got)
	}
	// Many rows: the marks grow with the slab.
	ids := make([]uint64, 5000)
	for i := range ids {
		ids[i] = uint64(100 + i)
	}
	tb.Push(ids, make([]float32, 2*len(ids)), 4)
	if n := tb.DirtyLen(); n != len(ids) {
		t.Fatalf("DirtyLen = %d after pushing %d new rows", n, len(ids))
	}
	tb.ClearDirty()
	if n := tb.DirtyLen(); n != 0 {
		t.Fatalf("DirtyLen = %d after ClearDirty", n)
	}
}
