package rowsrc

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Version is the protocol version a client speaks (Schema.Version).
const Version = 1

// Column types on the wire (Column.Type): little-endian values, one a
// row.
const (
	TypeInt64   = "int64"
	TypeUint64  = "uint64"
	TypeInt32   = "int32"
	TypeFloat64 = "float64"
	TypeFloat32 = "float32"
	TypeBool    = "bool" // a byte a row, 0 or 1
	// TypeDict is an int32 code a row into the column's dictionary of
	// byte strings (sent once, after the schema), -1 a null: strings and
	// categoricals.
	TypeDict = "dict"
)

// Limits a client holds the service to, so that a broken or hostile
// service cannot make it allocate without bound.
const (
	maxHeader    = 1 << 20 // bytes of a JSON header line
	maxColumns   = 1 << 12
	maxDictLen   = 1 << 28 // entries of a dictionary
	maxDictBytes = 1 << 34 // bytes of a dictionary's entries
)

// Column is a column of a table, as the schema gives it.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Nullable says that a validity byte a row (1 valid, 0 null) follows
	// the column's values in every batch.
	Nullable bool `json:"nullable,omitempty"`
	// DictLen and DictBytes size a dict column's dictionary: its entries,
	// and their bytes in all.
	DictLen   int64 `json:"dict_len,omitempty"`
	DictBytes int64 `json:"dict_bytes,omitempty"`
}

// size is the bytes of one value of type t, or 0 for an unknown type.
func size(t string) int {
	switch t {
	case TypeInt64, TypeUint64, TypeFloat64:
		return 8
	case TypeInt32, TypeFloat32, TypeDict:
		return 4
	case TypeBool:
		return 1
	}
	return 0
}

// Schema is the service's answer to a schema request: the table's rows
// and columns. A non-empty Error is the service's refusal.
type Schema struct {
	Version int      `json:"version"`
	Table   string   `json:"table"`
	Rows    int64    `json:"rows"`
	Columns []Column `json:"columns"`
	Error   string   `json:"error,omitempty"`
}

// request is what a client sends: one JSON line.
type request struct {
	Table  string    `json:"table"`
	Schema bool      `json:"schema,omitempty"`
	Rows   *[2]int64 `json:"rows,omitempty"`
}

// batchHeader heads a batch: rows [From, To) follow, column by column.
type batchHeader struct {
	From  int64  `json:"from"`
	To    int64  `json:"to"`
	Error string `json:"error,omitempty"`
}

// protocolError wraps ErrProtocol with what was wrong.
func protocolError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, a...)...)
}

// readHeader reads one JSON line into v.
func readHeader(br *bufio.Reader, v any) error {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return protocolError("a header line longer than %d bytes", maxHeader)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return protocolError("header %.80q: %v", line, err)
	}
	return nil
}

// check validates a schema (not a refusal) against the limits and the
// types.
func (s *Schema) check(table string) error {
	switch {
	case s.Version != Version:
		return protocolError("the service speaks version %d, this worker %d", s.Version, Version)
	case s.Table != table:
		return protocolError("asked for table %q, the service described %q", table, s.Table)
	case s.Rows < 0:
		return protocolError("table %q has %d rows", table, s.Rows)
	case len(s.Columns) == 0 || len(s.Columns) > maxColumns:
		return protocolError("table %q has %d columns (want 1 to %d)", table, len(s.Columns), maxColumns)
	}
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if size(c.Type) == 0 {
			return protocolError("column %q: unknown type %q", c.Name, c.Type)
		}
		if seen[c.Name] {
			return protocolError("column %q given twice", c.Name)
		}
		seen[c.Name] = true
		if c.Type == TypeDict && (c.DictLen < 0 || c.DictLen > maxDictLen || c.DictBytes < 0 || c.DictBytes > maxDictBytes) {
			return protocolError("column %q: a dictionary of %d entries, %d bytes", c.Name, c.DictLen, c.DictBytes)
		}
	}
	return nil
}

// readDict reads dict column c's dictionary: DictLen+1 int64 offsets,
// then the entries' bytes; entry k is data[off[k]:off[k+1]]. each is
// called on every entry, in order.
func readDict(r io.Reader, c Column, each func(k int, entry []byte)) error {
	off, err := readN(r, 8*(c.DictLen+1))
	if err != nil {
		return fmt.Errorf("column %q's dictionary: %w", c.Name, err)
	}
	data, err := readN(r, c.DictBytes)
	if err != nil {
		return fmt.Errorf("column %q's dictionary: %w", c.Name, err)
	}
	prev := int64(0)
	for k := range c.DictLen + 1 {
		o := int64(binary.LittleEndian.Uint64(off[8*k:]))
		if (k == 0 && o != 0) || o < prev || o > c.DictBytes || (k == c.DictLen && o != c.DictBytes) {
			return protocolError("column %q: dictionary offset %d of entry %d (of %d, %d bytes)", c.Name, o, k, c.DictLen, c.DictBytes)
		}
		if k > 0 {
			each(int(k-1), data[prev:o])
		}
		prev = o
	}
	return nil
}

// readChunk is the most readN allocates ahead of the bytes that arrived.
const readChunk = 1 << 20

// readN reads n bytes, growing its buffer with the bytes that arrive, so
// that a size the service announces but does not send costs no more
// than readChunk.
func readN(r io.Reader, n int64) ([]byte, error) {
	b := make([]byte, 0, min(n, readChunk))
	for int64(len(b)) < n {
		k := min(n-int64(len(b)), readChunk)
		b = slices.Grow(b, int(k))
		if _, err := io.ReadFull(r, b[len(b):len(b)+int(k)]); err != nil {
			return nil, err
		}
		b = b[:len(b)+int(k)]
	}
	return b, nil
}

// colData is a column's values over a batch: integers (also bools and
// dict codes) or floating-point numbers, and validity (nil: all valid).
type colData struct {
	ints  []int64
	uints []uint64
	nums  []float64
	valid []byte
}

// null reports whether row i is null.
func (d *colData) null(i int) bool { return d.valid != nil && d.valid[i] == 0 }

// number returns row i as a float64 (a null as NaN).
func (d *colData) number(i int) float64 {
	switch {
	case d.null(i):
		return math.NaN()
	case d.nums != nil:
		return d.nums[i]
	case d.uints != nil:
		return float64(d.uints[i])
	}
	return float64(d.ints[i])
}

// readColumn reads n rows of column c into d, raw through scratch.
func readColumn(r io.Reader, c Column, n int, d *colData, scratch *[]byte) error {
	sz := size(c.Type)
	*scratch = slices.Grow((*scratch)[:0], n*sz)[:n*sz]
	b := *scratch
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("column %q: %w", c.Name, err)
	}
	d.ints, d.uints, d.nums = d.ints[:0], d.uints[:0], d.nums[:0]
	le := binary.LittleEndian
	switch c.Type {
	case TypeInt64:
		for i := range n {
			d.ints = append(d.ints, int64(le.Uint64(b[8*i:])))
		}
	case TypeUint64:
		for i := range n {
			d.uints = append(d.uints, le.Uint64(b[8*i:]))
		}
	case TypeInt32, TypeDict:
		for i := range n {
			d.ints = append(d.ints, int64(int32(le.Uint32(b[4*i:]))))
		}
	case TypeBool:
		for i := range n {
			d.ints = append(d.ints, int64(b[i]))
		}
	case TypeFloat64:
		for i := range n {
			d.nums = append(d.nums, math.Float64frombits(le.Uint64(b[8*i:])))
		}
	case TypeFloat32:
		for i := range n {
			d.nums = append(d.nums, float64(math.Float32frombits(le.Uint32(b[4*i:]))))
		}
	}
	if !c.Nullable {
		d.valid = nil
		return nil
	}
	d.valid = slices.Grow(d.valid[:0], n)[:n]
	if _, err := io.ReadFull(r, d.valid); err != nil {
		return fmt.Errorf("column %q's validity: %w", c.Name, err)
	}
	return nil
}
