package parquetsrc

import (
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go/format"
)

// TestLayout: rowAt is the exact inverse of offset (the first row at or
// after a byte), over row groups of every shape: empty ones, fewer bytes
// than rows, more, and sizes near 2^40.
func TestLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := range 200 {
		var md format.FileMetaData
		for range 1 + r.IntN(5) {
			rows, size := int64(r.IntN(50)), int64(1+r.IntN(80))
			if trial%7 == 0 {
				size <<= 34
			}
			md.RowGroups = append(md.RowGroups, format.RowGroup{NumRows: rows,
				Columns: []format.ColumnChunk{{MetaData: format.ColumnMetaData{TotalCompressedSize: size}}}})
		}
		l := newLayout(&md)
		for row := int64(0); row < l.numRows; row++ {
			off := l.offset(row)
			if row > 0 && off < l.offset(row-1) {
				t.Fatalf("offset decreases at row %d", row)
			}
			if got := l.rowAt(off); got > row || l.offset(got) != off {
				t.Fatalf("rowAt(offset(%d) = %d) = %d", row, off, got)
			}
			if got := l.rowAt(off + 1); got <= row {
				t.Fatalf("rowAt(%d) = %d, at or before row %d at %d", off+1, got, row, off)
			}
		}
		if l.rowAt(l.end()) != l.numRows || l.rowAt(0) != min(l.numRows, l.rowAt(magicLen)) {
			t.Fatalf("ends: rowAt(end) %d of %d rows", l.rowAt(l.end()), l.numRows)
		}
	}
}
