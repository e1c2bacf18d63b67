package parquetsrc

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/xdlgo/xps/reader"
)

// TokenWriter writes samples of integer tokens as Parquet: a column
// "label" (int32, 0 or 1) and per field f a column "f<f>", a list of
// unsigned 64-bit tokens (the shape of the generated data: cmd/ctrgen
// -format parquet). TokenColumns is the map that reads it back as the
// same samples as the libFFM lines "label f:token:1 ...".
type TokenWriter struct {
	w      *parquet.Writer
	schema *parquet.Schema
	col    []int // the leaf column of field f
	labCol int
	empty  []int16 // field f's definition level of an empty list
	order  []int   // the fields in column order, -1 for the label
	rows   []parquet.Row
}

// tokenRowGroup is the rows of a TokenWriter's row group.
const tokenRowGroup = 100_000

// NewTokenWriter starts a file of fields token fields on w (snappy pages,
// dictionaries, row groups of 100,000 rows).
func NewTokenWriter(w io.Writer, fields int) *TokenWriter {
	g := parquet.Group{"label": parquet.Int(32)}
	for f := range fields {
		g[fieldName(f)] = parquet.List(parquet.Encoded(parquet.Uint(64), &parquet.RLEDictionary))
	}
	s := parquet.NewSchema("sample", g)
	tw := &TokenWriter{schema: s, col: make([]int, fields), empty: make([]int16, fields),
		w: parquet.NewWriter(w, s, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(tokenRowGroup))}
	for _, c := range s.Columns() {
		leaf, _ := s.Lookup(c...)
		if c[0] == "label" {
			tw.labCol = leaf.ColumnIndex
			continue
		}
		var f int
		fmt.Sscanf(c[0], "f%d", &f)
		tw.col[f] = leaf.ColumnIndex
		tw.empty[f] = int16(leaf.MaxDefinitionLevel - 1)
	}
	tw.order = make([]int, fields+1)
	for f := range fields {
		tw.order[tw.col[f]] = f
	}
	tw.order[tw.labCol] = -1
	return tw
}

func fieldName(f int) string { return fmt.Sprintf("f%d", f) }

// Write adds a sample: its label (1 when > 0) and fields[f], field f's
// tokens.
func (tw *TokenWriter) Write(label float32, fields [][]uint64) error {
	if len(fields) != len(tw.col) {
		return fmt.Errorf("parquetsrc: a sample of %d fields in a file of %d", len(fields), len(tw.col))
	}
	row := make(parquet.Row, 0, len(fields)+1)
	for _, f := range tw.order { // in column order, as the writer takes a row
		if f < 0 {
			row = append(row, parquet.ValueOf(int32(b2i(label > 0))).Level(0, 0, tw.labCol))
			continue
		}
		toks := fields[f]
		if len(toks) == 0 {
			row = append(row, parquet.Value{}.Level(0, int(tw.empty[f]), tw.col[f]))
		}
		for j, t := range toks {
			row = append(row, parquet.ValueOf(t).Level(b2i(j > 0), int(tw.empty[f])+1, tw.col[f]))
		}
	}
	tw.rows = append(tw.rows, row)
	if len(tw.rows) == 1024 {
		return tw.flush()
	}
	return nil
}

func (tw *TokenWriter) flush() error {
	if len(tw.rows) == 0 {
		return nil
	}
	_, err := tw.w.WriteRows(tw.rows)
	tw.rows = tw.rows[:0]
	return err
}

// Close writes the rest and the footer (it does not close the
// io.Writer).
func (tw *TokenWriter) Close() error {
	if err := tw.flush(); err != nil {
		return err
	}
	return tw.w.Close()
}

// TokenColumns is the column map of a TokenWriter's file of fields
// fields, the first userFields of them user-level when grouped.
func TokenColumns(fields, userFields int, grouped bool) reader.ColumnMap {
	m := reader.ColumnMap{Label: "label"}
	for f := range fields {
		m.Fields = append(m.Fields, reader.ColumnField{Column: fieldName(f), User: grouped && f < userFields})
	}
	return m
}
