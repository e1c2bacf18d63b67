package ams

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// rowSetTable returns an Adagrad table of dim 5 with n rows of random ids
// (small ones too, so the radix sort's skipped bytes are exercised), rows
// pushed so that values, state and statistics differ.
func rowSetTable(t *testing.T, n int, r *rand.Rand) *Table {
	t.Helper()
	tab, err := NewTable(TableSpec{Name: "t", Dim: 5, Optimizer: OptimizerSpec{Name: OptAdagrad, LR: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, n)
	for i := range ids {
		if i%3 == 0 {
			ids[i] = uint64(r.IntN(1 << 20))
		} else {
			ids[i] = r.Uint64()
		}
	}
	grads := make([]float32, n*5)
	for i := range grads {
		grads[i] = r.Float32() - 0.5
	}
	tab.Push(ids, grads, uint32(r.IntN(1000)))
	return tab
}

// snapshotOf encodes ids one at a time with AppendSnapshotRow, the
// reference, and reports the ids it lacks.
func snapshotOf(tab *Table, ids []uint64) ([]byte, []int) {
	var b []byte
	var missing []int
	n := tab.SnapshotRowBytes()
	for j, id := range ids {
		var ok bool
		if b, ok = tab.AppendSnapshotRow(b, id); !ok {
			missing = append(missing, j)
			b = append(b, make([]byte, n)...)
		}
	}
	return b, missing
}

// TestRowSetMatchesPerRow checks SortedRowsIn (of every id), LocateRows, MergeAbsent and
// AppendSnapshotRows against listing, sorting and encoding row by row,
// also after deletions freed slots that later creations reused.
func TestRowSetMatchesPerRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 255, 256, 3000} {
		tab := rowSetTable(t, n, r)
		var rs RowSet
		tab.SortedRowsIn(&rs, AllIDs, tab.Len())
		want := slices.Sorted(slices.Values(tab.IDs(nil)))
		if !slices.Equal(rs.IDs(), want) {
			t.Fatalf("n=%d: SortedRowsIn of every id differs from the sorted ids", n)
		}
		check := func(what string, rs *RowSet) {
			t.Helper()
			ids := rs.IDs()
			wantB, wantMissing := snapshotOf(tab, ids)
			var got []byte
			var missing []int
			for lo := 0; lo < len(ids); lo += 100 { // in chunks, as a snapshot does
				hi := min(lo+100, len(ids))
				var m []int
				got, m = tab.AppendSnapshotRows(got, rs, lo, hi, nil)
				for _, k := range m {
					missing = append(missing, lo+k)
				}
			}
			if !bytes.Equal(got, wantB) || !slices.Equal(missing, wantMissing) {
				t.Fatalf("n=%d %s: AppendSnapshotRows differs from AppendSnapshotRow (missing %v, want %v)", n, what, missing, wantMissing)
			}
			seen := 0
			tab.EachRowValues(rs, 0, len(ids), func(j int, v []float32, ok bool) {
				w, wok := tab.Get(ids[j])
				if j != seen || ok != wok || !slices.Equal(v, w) {
					t.Fatalf("n=%d %s: EachRowValues(%d) = %v %v, want %v %v", n, what, j, v, ok, w, wok)
				}
				seen++
			})
			if seen != len(ids) {
				t.Fatalf("n=%d %s: EachRowValues visited %d of %d ids", n, what, seen, len(ids))
			}
		}
		check("sorted", &rs)
		if n == 0 {
			continue
		}
		// Free slots and reuse them for other ids: the set must look its
		// ids up again rather than read the new rows.
		for _, id := range want[:n/2] {
			tab.Delete(id)
		}
		fresh := []uint64{want[0] + 1, want[n/2] ^ 1<<63}
		tab.Push(fresh, make([]float32, 10), 5)
		check("after deletes", &rs)
		// Ids on disk (absent from the table) merged in, some present.
		extra := slices.Sorted(slices.Values([]uint64{1, 2, 2, want[n-1], 1 << 40}))
		tab.SortedRowsIn(&rs, AllIDs, tab.Len())
		rs.MergeAbsent(extra)
		all := slices.Compact(slices.Sorted(slices.Values(append(tab.IDs(nil), extra...))))
		if !slices.Equal(rs.IDs(), all) {
			t.Fatalf("n=%d: MergeAbsent ids %d, want %d", n, len(rs.IDs()), len(all))
		}
		check("merged", &rs)
		var located RowSet
		tab.LocateRows(&located, all)
		check("located", &located)
	}
}

// TestLoadSnapshotRows checks the batch load against LoadSnapshotRow:
// the same rows, values, state and statistics, into an empty table and
// over existing rows, and its refusal of a wrong length.
func TestLoadSnapshotRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := rowSetTable(t, 2000, r)
	var rs RowSet
	src.SortedRowsIn(&rs, AllIDs, src.Len())
	enc, _ := src.AppendSnapshotRows(nil, &rs, 0, rs.Len(), nil)
	ids := rs.IDs()
	n := src.SnapshotRowBytes()
	for _, into := range []string{"empty", "over"} {
		a, b := rowSetTable(t, 0, r), rowSetTable(t, 0, r)
		if into == "over" {
			for _, tab := range []*Table{a, b} {
				tab.Push(ids[:500], make([]float32, 500*5), 1)
			}
		}
		if err := a.LoadSnapshotRows(ids, enc); err != nil {
			t.Fatal(err)
		}
		values, state := make([]float32, 5), make([]float32, b.StateWidth())
		for j, id := range ids {
			if err := b.LoadSnapshotRow(id, enc[j*n:(j+1)*n], values, state); err != nil {
				t.Fatal(err)
			}
		}
		ga, _ := snapshotOf(a, ids)
		gb, _ := snapshotOf(b, ids)
		if !bytes.Equal(ga, gb) || !bytes.Equal(ga, enc) || a.Len() != b.Len() {
			t.Fatalf("%s: LoadSnapshotRows differs from LoadSnapshotRow", into)
		}
	}
	// An id twice in one load: one row, the later encoding.
	dup := rowSetTable(t, 0, r)
	twice := []uint64{ids[0], ids[1], ids[0]}
	if err := dup.LoadSnapshotRows(twice, slices.Concat(enc[:2*n], enc[n:2*n])); err != nil {
		t.Fatal(err)
	}
	if got, _ := snapshotOf(dup, ids[:2]); dup.Len() != 2 || !bytes.Equal(got, slices.Concat(enc[n:2*n], enc[n:2*n])) {
		t.Fatalf("a duplicate id: %d rows, want 2 with the later encoding", dup.Len())
	}
	tab := rowSetTable(t, 0, r)
	if err := tab.LoadSnapshotRows(ids, enc[:len(enc)-1]); !errors.Is(err, ErrDimMismatch) || tab.Len() != 0 {
		t.Fatalf("short rows: %v, %d rows loaded; want ErrDimMismatch and none", err, tab.Len())
	}
}
