package snapshot_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/snapshot"
)

// TestBlockTableRoundTrip: rows and deletions written in blocks
// (CreateBlockTableFile) read back as written, for files of 0, 1, a
// block's worth, one more, and many entries; the FileMeta names the
// layout and counts rows and deletions.
func TestBlockTableRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, snapshot.BlockRows - 1, snapshot.BlockRows, snapshot.BlockRows + 1, 5000} {
		s := snapshot.NewMemStore()
		ids := make([]uint64, 0, n)
		for len(ids) < n {
			ids = append(ids, rng.Uint64())
			slices.Sort(ids)
			ids = slices.Compact(ids)
		}
		w, err := snapshot.CreateBlockTableFile(s, "x", "t", 5)
		if err != nil {
			t.Fatal(err)
		}
		var want []tableRow
		dels := 0
		for _, id := range ids {
			if rng.IntN(5) == 0 {
				dels++
				want = append(want, tableRow{id: id, val: []byte{}, del: true})
				err = w.Delete(id)
			} else {
				v := []byte{byte(id), byte(id >> 8), 1, 2, byte(id >> 56)}
				want = append(want, tableRow{id: id, val: v})
				err = w.Add(id, v)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		f, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if f.Layout != snapshot.LayoutBlocks || f.RowBytes != 5 || f.Rows != int64(n-dels) || f.Deletes != int64(dels) {
			t.Fatalf("%d entries: %+v", n, f)
		}
		got, err := readRowsOf(t, s, "x", f)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%d entries: read %d, %v", n, len(got), err)
		}
	}
}

// TestBlockTableRefuses: blocks that do not decode (a count of 0 or over
// BlockRows, no header, gaps over 64 bits, unknown flags, a zero or
// overflowing gap, packed gaps or the deletions' bitmap cut short, rows
// of the wrong size, a block overlapping the one before), a row of the
// wrong size written, and an unknown layout are errors wrapping
// ErrCorrupt naming the file.
func TestBlockTableRefuses(t *testing.T) {
	// blk is a block: count, gap width, flags, then the rest's bytes.
	blk := func(count uint64, w, flags byte, rest ...[]byte) []byte {
		b := append(binary.AppendUvarint(nil, count), w, flags)
		for _, r := range rest {
			b = append(b, r...)
		}
		return b
	}
	row := []byte{1, 2}
	for _, c := range []struct {
		name   string
		blocks map[uint64][]byte
	}{
		{"count 0", map[uint64][]byte{5: blk(0, 0, 0)}},
		{"count over", map[uint64][]byte{5: blk(snapshot.BlockRows+1, 0, 0)}},
		{"no header", map[uint64][]byte{5: binary.AppendUvarint(nil, 2)}},
		{"gaps of 65 bits", map[uint64][]byte{5: blk(1, 65, 0, row)}},
		{"unknown flags", map[uint64][]byte{5: blk(1, 0, 2, row)}},
		{"zero gap", map[uint64][]byte{5: blk(2, 1, 0, []byte{0}, row, row)}},
		{"overflow", map[uint64][]byte{1<<63 | 5: blk(2, 64, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, row, row)}},
		{"gaps cut short", map[uint64][]byte{5: blk(3, 40, 0, []byte{1, 2})}},
		{"short rows", map[uint64][]byte{5: blk(2, 1, 0, []byte{1}, row)}},
		{"no bitmap", map[uint64][]byte{5: blk(2, 1, 1, []byte{1})}},
		{"overlap", map[uint64][]byte{5: blk(2, 4, 0, []byte{10}, row, row), 9: blk(1, 0, 0, row)}},
	} {
		s := snapshot.NewMemStore()
		w, err := snapshot.CreateTableFile(s, "x", "t", true) // raw entries
		if err != nil {
			t.Fatal(err)
		}
		keys := slices.Sorted(func(yield func(uint64) bool) {
			for k := range c.blocks {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			if err := w.Add(k, c.blocks[k]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = readRowsOf(t, s, "x", snapshot.FileMeta{Name: "t", Layout: snapshot.LayoutBlocks, RowBytes: 2})
		if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "x/t") {
			t.Errorf("%s: %v, want ErrCorrupt naming the file", c.name, err)
		}
	}
	s := snapshot.NewMemStore()
	w, err := snapshot.CreateBlockTableFile(s, "x", "t", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(1, []byte{1, 2, 3}); err == nil {
		t.Error("a row of 3 bytes in blocks of 2 accepted")
	}
	if err := w.Add(1, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.OpenTableFile(s, "x", snapshot.FileMeta{Name: "t", Layout: "columns"}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("an unknown layout: %v", err)
	}
}
