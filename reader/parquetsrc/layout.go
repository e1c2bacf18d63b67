package parquetsrc

import (
	"math/bits"

	"github.com/parquet-go/parquet-go/format"
)

// magicLen is the length of the "PAR1" a Parquet file starts with: the
// first row group's bytes start after it.
const magicLen = 4

// layout places a file's rows on its bytes, for splits by byte ranges
// (see "Splits" in the package documentation). Row group g holds rows
// [first[g], first[g]+rows[g]) and the bytes [base[g], base[g]+size[g]):
// base[0] = magicLen, base[g+1] = base[g]+size[g], size[g] the row
// group's compressed column chunks (at least 1). Row first[g]+k sits at
// byte base[g] + floor(k*size[g]/rows[g]), which never decreases with the
// row, so the rows of a byte range are consecutive.
type layout struct {
	first, rows, base, size []int64
	numRows                 int64
	last                    int // the row group group found last
}

func newLayout(md *format.FileMetaData) layout {
	var l layout
	off := int64(magicLen)
	for _, rg := range md.RowGroups {
		size := int64(0)
		for _, c := range rg.Columns {
			size += c.MetaData.TotalCompressedSize
		}
		size = max(size, 1)
		l.first = append(l.first, l.numRows)
		l.rows = append(l.rows, max(rg.NumRows, 0))
		l.base = append(l.base, off)
		l.size = append(l.size, size)
		l.numRows += max(rg.NumRows, 0)
		off += size
	}
	return l
}

// group returns the row group holding row r (r < numRows).
func (l *layout) group(r int64) int {
	if g := l.last; g < len(l.first) && l.first[g] <= r && r < l.first[g]+l.rows[g] {
		return g // rows are mostly asked for in order
	}
	lo, hi := 0, len(l.first)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if l.first[m] <= r {
			lo = m
		} else {
			hi = m
		}
	}
	for lo < len(l.first)-1 && l.rows[lo] == 0 {
		lo++
	}
	l.last = lo
	return lo
}

// offset returns the byte at which row r sits.
func (l *layout) offset(r int64) int64 {
	if r >= l.numRows {
		return l.end()
	}
	g := l.group(r)
	hi, lo := bits.Mul64(uint64(r-l.first[g]), uint64(l.size[g]))
	q, _ := bits.Div64(hi, lo, uint64(l.rows[g]))
	return l.base[g] + int64(q)
}

// end is the byte after the last row group.
func (l *layout) end() int64 {
	if len(l.base) == 0 {
		return magicLen
	}
	return l.base[len(l.base)-1] + l.size[len(l.size)-1]
}

// rowAt returns the first row sitting at byte off or after it (numRows
// when none does).
func (l *layout) rowAt(off int64) int64 {
	for g := range l.first {
		if l.rows[g] == 0 {
			continue
		}
		if off <= l.base[g] {
			return l.first[g]
		}
		d := off - l.base[g]
		if d >= l.size[g] {
			continue
		}
		// the least k with floor(k*size/rows) >= d: k = ceil(d*rows/size);
		// d < size keeps the quotient below 2^64.
		hi, lo := bits.Mul64(uint64(d), uint64(l.rows[g]))
		q, rem := bits.Div64(hi, lo, uint64(l.size[g]))
		if rem > 0 {
			q++
		}
		if int64(q) < l.rows[g] {
			return l.first[g] + int64(q)
		}
	}
	return l.numRows
}

// rowRange returns the rows of the byte range [start, end) (end <= 0: to
// the end of the file).
func (l *layout) rowRange(start, end int64) (int64, int64) {
	lo := l.rowAt(start)
	if end <= 0 {
		return lo, l.numRows
	}
	return lo, max(lo, l.rowAt(end))
}
