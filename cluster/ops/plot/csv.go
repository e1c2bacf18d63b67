package plot

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Table is a CSV file: a header naming the columns, then rows of cells.
type Table struct {
	Header []string
	Rows   [][]string
}

// ReadTable reads a CSV file with a header line. Rows may have fewer cells
// than the header (the missing ones are empty) but not more. An input
// without a header is ErrNoData.
func ReadTable(r io.Reader) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: empty CSV input (want a header line)", ErrNoData)
	}
	if err != nil {
		return nil, fmt.Errorf("plot: read CSV: %w", err)
	}
	t := &Table{Header: header}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("plot: read CSV: %w", err)
		}
		if len(rec) > len(header) {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("%w: CSV line %d has %d cells, the header %d", ErrBadValue, line, len(rec), len(header))
		}
		t.Rows = append(t.Rows, rec)
	}
}

// column returns the index of the named column.
func (t *Table) column(name string) (int, error) {
	i := slices.Index(t.Header, name)
	if i < 0 {
		return 0, fmt.Errorf("%w: no column %q in the CSV header %v", ErrNoData, name, t.Header)
	}
	return i, nil
}

// Series returns the (x, y) points of columns x and y: one series named
// name, or, when by is not empty, one series per distinct value of column
// by, named after it, in order of first appearance. Rows whose x or y cell
// is empty (or missing) are skipped; a cell that is not a finite number is
// ErrBadValue, naming its row and column. A table without points gives
// ErrNoData.
func (t *Table) Series(name, x, y, by string) ([]Series, error) {
	xi, err := t.column(x)
	if err != nil {
		return nil, err
	}
	yi, err := t.column(y)
	if err != nil {
		return nil, err
	}
	bi := -1
	if by != "" {
		if bi, err = t.column(by); err != nil {
			return nil, err
		}
	}
	var out []Series
	index := map[string]int{}
	for r, row := range t.Rows {
		xv, okx, err := cell(row, xi, r, x)
		if err != nil {
			return nil, err
		}
		yv, oky, err := cell(row, yi, r, y)
		if err != nil {
			return nil, err
		}
		if !okx || !oky {
			continue
		}
		label := name
		if bi >= 0 && bi < len(row) {
			label = row[bi]
		}
		k, ok := index[label]
		if !ok {
			k, index[label] = len(out), len(out)
			out = append(out, Series{Name: label})
		}
		out[k].X, out[k].Y = append(out[k].X, xv), append(out[k].Y, yv)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no row has both %q and %q", ErrNoData, x, y)
	}
	return out, nil
}

// cell parses row[i]; ok is false for an empty or missing cell.
func cell(row []string, i, r int, col string) (v float64, ok bool, err error) {
	if i >= len(row) || strings.TrimSpace(row[i]) == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseFloat(strings.TrimSpace(row[i]), 64)
	if err != nil || !finite(v) {
		return 0, false, fmt.Errorf("%w: data row %d, column %q: %q is not a finite number", ErrBadValue, r+1, col, row[i])
	}
	return v, true, nil
}
