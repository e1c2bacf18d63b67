package export

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/xdlgo/xps/snapshot"
)

// ReadTable calls fn for every row and deletion of table in export m, file
// by file (shard by shard; each file in id order): a row with its values
// decoded into a buffer valid during the call, a deletion with nil values.
// It stops at fn's first error. A file that does not decode is an error
// wrapping ErrCorrupt; Verify m first to refuse a damaged export as a
// whole.
func ReadTable(s snapshot.Store, m *Manifest, table string, fn func(id uint64, values []float32) error) error {
	t, err := m.table(table)
	if err != nil {
		return err
	}
	v := make([]float32, t.Dim)
	for _, f := range t.Files {
		if err := readFile(s, m, t, f, v, fn); err != nil {
			return err
		}
	}
	return nil
}

// FileReader reads one file of a table of an export in id order (see
// OpenTableFile): Next, then Row, until Next is false; then Err.
type FileReader struct {
	tr  *snapshot.TableReader
	m   *Manifest
	t   *Table
	f   snapshot.FileMeta
	v   []float32
	id  uint64
	del bool
	err error
}

// OpenTableFile opens file i of table in export m (shard i's part:
// Table.Files[i], whose Rows it holds) for reading in id order.
func OpenTableFile(s snapshot.Store, m *Manifest, table string, i int) (*FileReader, error) {
	t, err := m.table(table)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(t.Files) {
		return nil, fmt.Errorf("export %d: table %q has %d files, no file %d", m.Seq, table, len(t.Files), i)
	}
	return openFile(s, m, t, t.Files[i], make([]float32, t.Dim))
}

func openFile(s snapshot.Store, m *Manifest, t *Table, f snapshot.FileMeta, v []float32) (*FileReader, error) {
	tr, err := snapshot.OpenTableFile(s, m.Dir(), f)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &FileReader{tr: tr, m: m, t: t, f: f, v: v}, nil
}

// Next moves to the next row or deletion and reports whether there is
// one; a row that does not decode ends the file with Err set.
func (r *FileReader) Next() bool {
	if r.err != nil || !r.tr.Next() {
		return false
	}
	id, b := r.tr.Row()
	r.id, r.del = id, r.tr.Deleted()
	if r.del {
		if r.m.Kind != KindDelta {
			r.err = fmt.Errorf("%w: %s/%s: a deletion in a full export", ErrCorrupt, r.m.Dir(), r.f.Name)
			return false
		}
		return true
	}
	if err := DecodeRow(r.v, r.t.Quant, b); err != nil {
		r.err = fmt.Errorf("%w: %s/%s: row %d: %w", ErrCorrupt, r.m.Dir(), r.f.Name, id, err)
		return false
	}
	return true
}

// Row returns the current row's id and values (valid until Next), nil
// values for a deletion.
func (r *FileReader) Row() (uint64, []float32) {
	if r.del {
		return r.id, nil
	}
	return r.id, r.v
}

// Err returns what ended the file early, nil at its end.
func (r *FileReader) Err() error {
	if r.err != nil {
		return r.err
	}
	if err := r.tr.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// Close releases the file.
func (r *FileReader) Close() error { return r.tr.Close() }

// table returns m's table of that name.
func (m *Manifest) table(name string) (*Table, error) {
	for i := range m.Tables {
		if m.Tables[i].Name == name {
			return &m.Tables[i], nil
		}
	}
	return nil, fmt.Errorf("export %d has no table %q", m.Seq, name)
}

func readFile(s snapshot.Store, m *Manifest, t *Table, f snapshot.FileMeta, v []float32, fn func(uint64, []float32) error) error {
	r, err := openFile(s, m, t, f, v)
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
		if err := fn(r.Row()); err != nil {
			return err
		}
	}
	return r.Err()
}

// ReadDense returns dense vector name of export m, its ranges read and
// checked (size, SHA-256, finite values).
func ReadDense(s snapshot.Store, m *Manifest, name string) ([]float32, error) {
	for _, d := range m.Dense {
		if d.Name != name {
			continue
		}
		// Grown as the parts are read: no allocation the files do not back.
		var out []float32
		for _, p := range d.Parts {
			if p.Lo != len(out) || p.Hi < p.Lo {
				return nil, fmt.Errorf("%w: %s: dense %q: range [%d, %d) after %d values", ErrCorrupt, m.Dir(), name, p.Lo, p.Hi, len(out))
			}
			r, err := snapshot.OpenFileIn(s, m.Dir(), p.File)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			if len(b)%4 != 0 || len(b)/4 != p.Hi-p.Lo {
				return nil, fmt.Errorf("%w: %s/%s: %d bytes for [%d, %d)", ErrCorrupt, m.Dir(), p.File.Name, len(b), p.Lo, p.Hi)
			}
			out = slices.Grow(out, p.Hi-p.Lo)
			for i := range p.Hi - p.Lo {
				x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
				if !finite(x) {
					return nil, fmt.Errorf("%w: %s/%s: value %d is %v", ErrCorrupt, m.Dir(), p.File.Name, p.Lo+i, x)
				}
				out = append(out, x)
			}
		}
		if len(out) != d.Len {
			return nil, fmt.Errorf("%w: %s: dense %q: ranges of %d values, the vector has %d", ErrCorrupt, m.Dir(), name, len(out), d.Len)
		}
		return out, nil
	}
	return nil, fmt.Errorf("export %d has no dense vector %q", m.Seq, name)
}
