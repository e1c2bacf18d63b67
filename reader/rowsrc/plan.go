package rowsrc

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/xdlgo/xps/reader"
)

// plan is a column map bound to a table's schema: the label's column and
// each field's.
type plan struct {
	label  int // the label's column
	fields []fieldPlan
	used   []bool // the columns a batch needs, by index
}

// fieldPlan is one field: its column, kind and the ids it gives.
type fieldPlan struct {
	col    int
	typ    string
	field  uint32
	ns     uint32
	kind   string
	name   string
	dict   []uint64 // dict: each entry's id (token fields)
	bools  [2]uint64
	value  uint64 // kind value: the column name's id
	bounds []float64
	bucket []uint64 // kind bucket: the id of each bucket
}

// isNumber reports whether type t holds numbers (not strings).
func isNumber(t string) bool { return t != TypeDict }

// isFloat reports whether type t is floating-point.
func isFloat(t string) bool { return t == TypeFloat64 || t == TypeFloat32 }

// bind binds m to schema s (the tokens of field f hashed in namespace
// ns[f], or f), reporting every problem at once (wrapping ErrSchema).
func bind(s *Schema, m reader.ColumnMap, ns []uint32) (*plan, error) {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrSchema}, a...)...))
	}
	byName := map[string]int{}
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		byName[c.Name], names[i] = i, strconv.Quote(c.Name)
	}
	look := func(name, what string) (int, bool) {
		i, ok := byName[name]
		if !ok {
			bad("%s: no column %q in table %q (its columns: %s)", what, name, s.Table, strings.Join(names, ", "))
		}
		return i, ok
	}
	p := &plan{used: make([]bool, len(s.Columns))}
	if i, ok := look(m.Label, "the label"); ok {
		p.label, p.used[i] = i, true
		if !isNumber(s.Columns[i].Type) {
			bad("the label column %q holds strings: want numbers or booleans", m.Label)
		}
	}
	for i, f := range m.Fields {
		what := fmt.Sprintf("fields[%d] (column %q)", i, f.Column)
		switch {
		case f.User:
			bad("%s: user-level fields need rows grouped by user: not from a row service (write the data as Parquet)", what)
		case f.Weights != "":
			bad("%s: weights pair with list columns, which a row service does not send", what)
		}
		ci, ok := look(f.Column, what)
		if !ok {
			continue
		}
		c := s.Columns[ci]
		fp := fieldPlan{col: ci, typ: c.Type, field: m.FieldOf(i), kind: f.Kind, name: c.Name, bounds: f.Boundaries}
		fp.ns = fp.field
		if int(fp.field) < len(ns) {
			fp.ns = ns[fp.field]
		}
		if fp.kind == "" {
			fp.kind = reader.KindToken
			if isFloat(c.Type) {
				fp.kind = reader.KindValue
			}
		}
		switch {
		case fp.kind == reader.KindToken && isFloat(c.Type):
			bad("%s: a %s column is not a token: map it as value, dense or bucket", what, c.Type)
		case fp.kind != reader.KindToken && !isNumber(c.Type):
			bad("%s: kind %s takes numbers, not strings", what, fp.kind)
		}
		fp.value = reader.FeatureID(fp.ns, c.Name)
		for b := range len(fp.bounds) + 1 {
			fp.bucket = append(fp.bucket, reader.FeatureID(fp.ns, strconv.Itoa(b)))
		}
		fp.bools = [2]uint64{reader.FeatureID(fp.ns, "false"), reader.FeatureID(fp.ns, "true")}
		p.used[ci] = true
		p.fields = append(p.fields, fp)
	}
	return p, errors.Join(errs...)
}

// features appends row i's features (from the batch's columns cols) to
// the scratch line l, and returns the row's problem, or "".
func (fp *fieldPlan) features(d *colData, i int, l *line) string {
	if d.null(i) {
		return ""
	}
	switch fp.kind {
	case reader.KindToken:
		var id uint64
		switch fp.typ {
		case TypeDict:
			code := d.ints[i]
			if code < 0 {
				return ""
			}
			if code >= int64(len(fp.dict)) {
				return fmt.Sprintf("column %q: code %d past its dictionary of %d", fp.name, code, len(fp.dict))
			}
			id = fp.dict[code]
		case TypeBool:
			id = fp.bools[min(d.ints[i], 1)]
		case TypeUint64:
			l.tok = strconv.AppendUint(l.tok[:0], d.uints[i], 10)
			id = reader.FeatureID(fp.ns, l.tok)
		default:
			l.tok = strconv.AppendInt(l.tok[:0], d.ints[i], 10)
			id = reader.FeatureID(fp.ns, l.tok)
		}
		l.add(fp.field, id, 1)
		return ""
	}
	v := d.number(i)
	if math.IsNaN(v) {
		return ""
	}
	if f := float32(v); math.IsInf(float64(f), 0) {
		return fmt.Sprintf("column %q: value %v is not a finite float32", fp.name, v)
	}
	switch fp.kind {
	case reader.KindValue:
		l.add(fp.field, fp.value, float32(v))
	case reader.KindBucket:
		b := sort.Search(len(fp.bounds), func(j int) bool { return fp.bounds[j] > v })
		l.add(fp.field, fp.bucket[b], 1)
	case reader.KindDense:
		l.dense = append(l.dense, dense{fp.field, float32(v)})
	}
	return ""
}

// line is the scratch of one row's features.
type line struct {
	fields []uint32
	ids    []uint64
	vals   []float32
	dense  []dense
	tok    []byte
	one    [1]float32
}

type dense struct {
	field uint32
	v     float32
}

func (l *line) reset() {
	l.fields, l.ids, l.vals, l.dense = l.fields[:0], l.ids[:0], l.vals[:0], l.dense[:0]
}

func (l *line) add(field uint32, id uint64, v float32) {
	l.fields = append(l.fields, field)
	l.ids = append(l.ids, id)
	l.vals = append(l.vals, v)
}
