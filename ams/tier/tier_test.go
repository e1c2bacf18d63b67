package tier

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// row is a test row of id in table.
func row(table uint32, id uint64) []byte {
	return fmt.Appendf(nil, "t%d-row-%d-%s", table, id, bytes.Repeat([]byte{'x'}, int(id%50)))
}

// TestStoreRoundTrip: rows put in sorted batches read back with one Get
// of sorted ids, found or not; a Delete and a DropTable remove them;
// another table's rows stay; Scan gives a table's rows in id order.
func TestStoreRoundTrip(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cold"))
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[uint64]bool{}
	for range 20 {
		ids := map[uint64]bool{}
		for range 200 {
			ids[rng.Uint64N(100000)] = true
		}
		batch := slices.Sorted(func(yield func(uint64) bool) {
			for id := range ids {
				if !yield(id) {
					return
				}
			}
		})
		rows := make([][]byte, len(batch))
		for i, id := range batch {
			rows[i], want[id] = row(7, id), true
		}
		if err := s.Put(7, batch, rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(8, []uint64{1, 2, 3}, [][]byte{row(8, 1), row(8, 2), row(8, 3)}); err != nil {
		t.Fatal(err)
	}
	ask := make([]uint64, 0, 1000)
	for id := uint64(0); id < 100000; id += 97 {
		ask = append(ask, id)
	}
	dst, found := make([][]byte, len(ask)), make([]bool, len(ask))
	if err := s.Get(7, ask, dst, found); err != nil {
		t.Fatal(err)
	}
	hits := 0
	for i, id := range ask {
		if found[i] != want[id] || (found[i] && !bytes.Equal(dst[i], row(7, id))) {
			t.Fatalf("id %d: found %v (%q), want %v", id, found[i], dst[i], want[id])
		}
		if found[i] {
			hits++
		}
	}
	var scanned []uint64
	if err := s.Scan(7, func(id uint64, r []byte) error {
		if !bytes.Equal(r, row(7, id)) {
			return fmt.Errorf("scan: id %d row %q", id, r)
		}
		scanned = append(scanned, id)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(scanned) || len(scanned) != len(want) {
		t.Fatalf("scan gave %d ids (sorted %v), want %d", len(scanned), slices.IsSorted(scanned), len(want))
	}
	if err := s.Delete(7, scanned[:10]); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(7, scanned[:11], dst[:11], found[:11]); err != nil || slices.Contains(found[:10], true) || !found[10] {
		t.Fatalf("after deleting 10: found %v, %v", found[:11], err)
	}
	if err := s.DropTable(7); err != nil {
		t.Fatal(err)
	}
	n := 0
	s.Scan(7, func(uint64, []byte) error { n++; return nil })
	if err := s.Get(8, []uint64{1, 3}, dst[:2], found[:2]); n != 0 || err != nil || !found[0] || !found[1] {
		t.Fatalf("after dropping table 7: %d of its rows left; table 8: %v, %v", n, found[:2], err)
	}
	st := s.Stats()
	if st.Writes < int64(len(want))+3 || st.Reads != int64(len(ask))+13 || st.Found == 0 || st.Deletes != 10 || st.DiskBytes == 0 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("%d rows, %d hits of %d asked; stats %+v", len(want), hits, len(ask), st)
}

// TestStoreRefusals: unsorted or repeated ids and mismatched lengths are
// errors, and nothing is written.
func TestStoreRefusals(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cold"))
	for _, ids := range [][]uint64{{3, 2}, {1, 1}} {
		if err := s.Put(1, ids, [][]byte{{1}, {2}}); !errors.Is(err, ErrUnsorted) {
			t.Errorf("put %v: %v", ids, err)
		}
		if err := s.Get(1, ids, make([][]byte, 2), make([]bool, 2)); !errors.Is(err, ErrUnsorted) {
			t.Errorf("get %v: %v", ids, err)
		}
	}
	if err := s.Put(1, []uint64{1, 2}, [][]byte{{1}}); err == nil {
		t.Error("put of 1 row for 2 ids")
	}
	if n := 0; s.Scan(1, func(uint64, []byte) error { n++; return nil }) != nil || n != 0 {
		t.Errorf("%d rows written by refused puts", n)
	}
}

// TestOpenBadDir: a directory whose parent is missing, or a path under a
// file, is refused at Open with the path; Fresh discards what a directory
// held, and without it a reopened Store keeps its rows.
func TestOpenBadDir(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", filepath.Join(base, "missing", "cold"), filepath.Join(file, "cold")} {
		if s, err := Open(Options{Dir: dir}); !errors.Is(err, ErrBadDir) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%q): %v, want ErrBadDir", dir, err)
		}
	}
	dir := filepath.Join(base, "cold")
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Flushed (there is no WAL: unflushed rows die with the Store, whose
	// files are scratch space anyway).
	if err := errors.Join(s.Put(1, []uint64{5}, [][]byte{{9}}), s.db.Flush(), s.Close()); err != nil {
		t.Fatal(err)
	}
	for _, fresh := range []bool{false, true} {
		s, err := Open(Options{Dir: dir, Fresh: fresh})
		if err != nil {
			t.Fatal(err)
		}
		dst, found := make([][]byte, 1), make([]bool, 1)
		err = errors.Join(s.Get(1, []uint64{5}, dst, found), s.Close())
		if err != nil || found[0] == fresh {
			t.Errorf("reopened (Fresh %v): found %v, %v", fresh, found[0], err)
		}
	}
}

// TestScanFromAndClear: ScanFrom goes through a table n rows at a time,
// in id order, and says when it reached the end; IDs lists the same ids;
// Clear empties every table.
func TestScanFromAndClear(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cold"))
	ids := []uint64{3, 9, 10, 400, 1 << 40, ^uint64(0)}
	rows := make([][]byte, len(ids))
	for i, id := range ids {
		rows[i] = row(2, id)
	}
	if err := s.Put(2, ids, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(3, ids[:2], rows[:2]); err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	after, first := uint64(0), true
	for laps := 0; ; laps++ {
		last, end, err := s.ScanFrom(2, after, first, 4, func(id uint64, r []byte) error {
			if string(r) != string(row(2, id)) {
				t.Fatalf("row %d: %q", id, r)
			}
			seen = append(seen, id)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if after, first = last, false; end {
			break
		}
		if laps > 3 {
			t.Fatal("the scan does not end")
		}
	}
	if !slices.Equal(seen, ids) {
		t.Fatalf("scanned %v, want %v", seen, ids)
	}
	if got, err := s.IDs(2, nil); err != nil || !slices.Equal(got, ids) {
		t.Fatalf("IDs: %v, %v", got, err)
	}
	if err := s.Clear(); err != nil {
		t.Fatal(err)
	}
	for _, table := range []uint32{2, 3} {
		if got, err := s.IDs(table, nil); err != nil || len(got) != 0 {
			t.Fatalf("table %d after Clear: %v, %v", table, got, err)
		}
	}
}

// TestDiskFull: on a disk that fills up (a 16 MiB tmpfs, mounted by the
// test as root; skipped elsewhere), writes start failing with an error
// that names the directory, within a bounded number of rows: none is
// taken silently and none stalls for ever.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v: %s", err, out)
	}
	defer exec.Command("umount", "-l", dir).Run()
	s, err := Open(Options{Dir: filepath.Join(dir, "cold")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	row := bytes.Repeat([]byte{7}, 1024)
	ids, rows := make([]uint64, 1024), make([][]byte, 1024)
	for i := range rows {
		rows[i] = row
	}
	var werr error
	for b := 0; b < 1000 && werr == nil; b++ { // 1 GiB at most, the disk holds 16 MiB
		for i := range ids {
			ids[i] = uint64(b*len(ids) + i)
		}
		werr = s.Put(1, ids, rows)
	}
	if werr == nil || !strings.Contains(werr.Error(), s.Dir()) {
		t.Fatalf("1 GiB written to a 16 MiB disk: %v", werr)
	}
	t.Logf("the write that failed: %v", werr)
}
