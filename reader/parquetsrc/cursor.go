package parquetsrc

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/xdlgo/xps/reader"
)

// cursor reads one leaf column of a row group row by row. A page's values
// are turned into ids or numbers all at once when the page is loaded; a
// dictionary's entries once per column chunk, so a dictionary-encoded
// column hashes each distinct token once, not once per row.
//
// Invariants:
//
//  1. li <= nl and vi <= len(ids) (tokens) or len(nums) (numbers): the
//     next level entry and the next non-null value of the page.
//  2. After fill(n), the batch holds n rows: off has n+1 offsets into
//     bIDs or bNums (none for a required scalar, whose row i is value
//     i), and for a pairs cursor eoff has n+1 offsets into pres.
type cursor struct {
	b      binding
	tokens bool   // values are hashed into ids (else turned into numbers)
	pairs  bool   // a weighted field's column or weights: keep list entries
	ns     uint32 // the namespace tokens are hashed in
	pages  parquet.Pages

	page   parquet.Page
	def    []byte
	rep    []byte
	nl, li int
	vi     int
	ids    []uint64
	nums   []float64

	dict     parquet.Dictionary
	dictIDs  []uint64
	dictNums []float64
	scratch  []byte

	// The batch of rows decoded by fill.
	off, eoff []int32
	bIDs      []uint64
	bNums     []float64
	pres      []bool
}

// open starts the cursor at row r of the column chunk (r relative to the
// row group).
func (c *cursor) open(chunk parquet.ColumnChunk, r int64) (err error) {
	defer recovered(&err)
	c.close()
	c.pages = chunk.Pages()
	if r > 0 {
		if err := c.pages.SeekToRow(r); err != nil {
			return err
		}
	}
	return nil
}

// close releases the cursor's page and pages.
func (c *cursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
	c.nl, c.li, c.vi = 0, 0, 0
	c.dict = nil
}

// recovered turns a panic of the Parquet library on corrupt data (an
// index out of range in a decoder) into *err: no input may crash the
// job.
func recovered(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("the page does not decode (the Parquet library panicked: %v)", r)
	}
}

// errChunkEnd reports a column chunk that ends before its row group's
// last row.
var errChunkEnd = errors.New("the column chunk ends before the row group's last row")

// fill decodes the cursor's next n rows (n >= 1, all in the row group):
// row i's values are bIDs or bNums[off[i]:off[i+1]], and for a cursor of
// a weighted field (pairs) its list entries pres[eoff[i]:eoff[i+1]]
// (true: an entry with a value, false: a null element); a required
// scalar's row i is value i alone (off stays empty). A list's row may
// span pages.
func (c *cursor) fill(n int) error {
	c.off, c.eoff = append(c.off[:0], 0), append(c.eoff[:0], 0)
	c.bIDs, c.bNums, c.pres = c.bIDs[:0], c.bNums[:0], c.pres[:0]
	rows := 0
	for {
		if c.li == c.nl {
			err := c.load()
			if err == io.EOF && c.b.list && rows == n {
				c.endRow() // the last row ends with the chunk
				return nil
			}
			if err == io.EOF {
				return errChunkEnd
			}
			if err != nil {
				return err
			}
			continue
		}
		var err error
		done := false
		switch {
		case !c.b.list && c.b.maxDef == 0: // required scalars: a run of values, a row each
			k := min(n-rows, c.nl-c.li)
			err = c.takeRun(k)
			c.li += k
			rows += k
			done = rows == n
		case !c.b.list:
			rows, err = c.fillOptional(rows, n)
			done = rows == n
		default:
			rows, done, err = c.fillList(rows, n)
		}
		if err != nil || done {
			return err
		}
	}
}

// errFewValues reports a page whose values run out before its levels.
var errFewValues = errors.New("a page holds fewer values than its definition levels say")

// fillOptional takes an optional scalar's entries, a row each, until n
// rows or the page's end.
func (c *cursor) fillOptional(rows, n int) (int, error) {
	def, maxDef := c.def, byte(c.b.maxDef)
	for ; c.li < c.nl && rows < n; c.li++ {
		if def[c.li] == maxDef {
			if err := c.takeRun(1); err != nil {
				return rows, err
			}
		}
		rows++
		c.off = append(c.off, int32(len(c.bIDs)+len(c.bNums)))
	}
	return rows, nil
}

// fillList takes a list's entries (a value, a null element, or a null or
// empty list) until the (n+1)-th row starts (done) or the page ends.
func (c *cursor) fillList(rows, n int) (int, bool, error) {
	rep, def, maxDef := c.rep, c.def, byte(c.b.maxDef)
	nullElem := byte(255)
	if c.b.optElem {
		nullElem = maxDef - 1
	}
	for ; c.li < c.nl; c.li++ {
		if rep[c.li] == 0 {
			if rows > 0 {
				c.endRow()
			}
			if rows == n {
				return rows, true, nil
			}
			rows++
		} else if rows == 0 {
			return rows, false, errors.New("a row starts with a repeated element (repetition level > 0)")
		}
		switch d := def[c.li]; d {
		case maxDef:
			if c.tokens {
				if c.vi >= len(c.ids) {
					return rows, false, errFewValues
				}
				c.bIDs = append(c.bIDs, c.ids[c.vi])
			} else {
				if c.vi >= len(c.nums) {
					return rows, false, errFewValues
				}
				c.bNums = append(c.bNums, c.nums[c.vi])
			}
			c.vi++
			if c.pairs {
				c.pres = append(c.pres, true)
			}
		case nullElem:
			if c.pairs {
				c.pres = append(c.pres, false)
			}
		}
	}
	return rows, false, nil
}

// endRow closes the list row being filled.
func (c *cursor) endRow() {
	c.off = append(c.off, int32(len(c.bIDs)+len(c.bNums)))
	if c.pairs {
		c.eoff = append(c.eoff, int32(len(c.pres)))
	}
}

// takeRun appends the page's next k values to the batch; for required
// scalars each is a row of its own.
func (c *cursor) takeRun(k int) error {
	have := len(c.ids)
	if !c.tokens {
		have = len(c.nums)
	}
	if c.vi+k > have {
		return errFewValues
	}
	if c.tokens {
		c.bIDs = append(c.bIDs, c.ids[c.vi:c.vi+k]...)
	} else {
		c.bNums = append(c.bNums, c.nums[c.vi:c.vi+k]...)
	}
	c.vi += k
	return nil
}

// load reads the next page and turns its values into ids or numbers.
func (c *cursor) load() (err error) {
	defer recovered(&err)
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	p, err := c.pages.ReadPage()
	if err != nil {
		return err
	}
	c.page = p
	c.nl, c.li, c.vi = int(p.NumValues()), 0, 0
	c.def, c.rep = p.DefinitionLevels(), p.RepetitionLevels()
	if (c.b.maxDef > 0 && len(c.def) != c.nl) || (c.b.list && len(c.rep) != c.nl) {
		return fmt.Errorf("a page of %d values holds %d definition and %d repetition levels", c.nl, len(c.def), len(c.rep))
	}
	if d := p.Dictionary(); d != nil {
		if d != c.dict {
			if err := c.loadDict(d); err != nil {
				return err
			}
		}
		data := p.Data()
		return c.fromDict(data.Int32())
	}
	if p.Type().Kind() == parquet.Boolean {
		return c.booleans(p)
	}
	data := p.Data()
	return c.convert(p.Type().Kind(), &data, &c.ids, &c.nums)
}

// booleans reads a page of booleans through its value reader (they are
// bit-packed in the page's data).
func (c *cursor) booleans(p parquet.Page) error {
	c.ids, c.nums = c.ids[:0], c.nums[:0]
	buf := make([]parquet.Value, 256)
	r := p.Values()
	for {
		n, err := r.ReadValues(buf)
		for _, v := range buf[:n] {
			if v.IsNull() {
				continue
			}
			if c.tokens {
				c.ids = append(c.ids, reader.FeatureID(c.ns, strconv.FormatBool(v.Boolean())))
			} else {
				c.nums = append(c.nums, float64(b2i(v.Boolean())))
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// loadDict turns a dictionary's entries into ids or numbers.
func (c *cursor) loadDict(d parquet.Dictionary) error {
	c.dict = d
	data := d.Page().Data()
	return c.convert(d.Type().Kind(), &data, &c.dictIDs, &c.dictNums)
}

// fromDict looks the page's dictionary indexes up.
func (c *cursor) fromDict(ix []int32) (err error) {
	if c.tokens {
		c.ids, err = lookup(c.ids, c.dictIDs, ix)
	} else {
		c.nums, err = lookup(c.nums, c.dictNums, ix)
	}
	return err
}

// lookup sets dst to dict[ix[0]], dict[ix[1]], ...
func lookup[T any](dst, dict []T, ix []int32) ([]T, error) {
	dst = slices.Grow(dst[:0], len(ix))[:len(ix)]
	for j, i := range ix {
		if uint32(i) >= uint32(len(dict)) {
			return dst, fmt.Errorf("dictionary index %d outside the dictionary's %d entries", i, len(dict))
		}
		dst[j] = dict[i]
	}
	return dst, nil
}

// convert turns values of physical kind k into ids (tokens) or numbers.
func (c *cursor) convert(k parquet.Kind, v *encoding.Values, ids *[]uint64, nums *[]float64) error {
	*ids, *nums = (*ids)[:0], (*nums)[:0]
	switch k {
	case parquet.Int32:
		for _, x := range v.Int32() {
			c.integer(int64(x), uint64(uint32(x)), ids, nums)
		}
	case parquet.Int64:
		for _, x := range v.Int64() {
			c.integer(x, uint64(x), ids, nums)
		}
	case parquet.Float:
		for _, x := range v.Float() {
			*nums = append(*nums, float64(x))
		}
	case parquet.Double:
		*nums = append(*nums, v.Double()...)
	case parquet.ByteArray:
		data, offs := v.ByteArray()
		for i := 0; i+1 < len(offs); i++ {
			*ids = append(*ids, reader.FeatureID(c.ns, data[offs[i]:offs[i+1]]))
		}
	case parquet.FixedLenByteArray:
		data, size := v.FixedLenByteArray()
		for i := 0; size > 0 && i+size <= len(data); i += size {
			*ids = append(*ids, reader.FeatureID(c.ns, data[i:i+size]))
		}
	default:
		return fmt.Errorf("values of type %v", k)
	}
	return nil
}

// integer appends an integer value: its decimal token, or its number.
func (c *cursor) integer(signed int64, unsigned uint64, ids *[]uint64, nums *[]float64) {
	if c.tokens {
		if c.b.unsigned {
			c.scratch = strconv.AppendUint(c.scratch[:0], unsigned, 10)
		} else {
			c.scratch = strconv.AppendInt(c.scratch[:0], signed, 10)
		}
		*ids = append(*ids, reader.FeatureID(c.ns, c.scratch))
		return
	}
	if c.b.unsigned {
		*nums = append(*nums, float64(unsigned))
	} else {
		*nums = append(*nums, float64(signed))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// finite reports whether x is a finite float32 once converted.
func finite(x float64) bool {
	f := float32(x)
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}
