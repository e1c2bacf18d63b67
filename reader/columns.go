package reader

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ColumnMap says how the columns of a columnar file (Parquet: package
// reader/parquetsrc) become samples: which column is the label, and which
// column each field comes from. It is the job config's train.columns.
type ColumnMap struct {
	// Label names the label column: an integer, boolean or floating-point
	// column, binarized as libFFM labels are (1 when > 0, true is 1).
	Label string `yaml:"label"`
	// Fields maps columns to fields, in the order a sample lists its
	// features: field Fields[i].Field, or i when that is not given.
	Fields []ColumnField `yaml:"fields"`
}

// Column kinds (ColumnField.Kind).
const (
	// KindToken hashes each value of the column as a token of the field
	// (value 1): integers as their decimal, strings and byte arrays as
	// written, booleans as "true" or "false". A list column gives one
	// feature per element, in order (a multi-hot bag, or a sequence field
	// for DIN and DIEN). The default for integer, string, binary and
	// boolean columns, scalar or list.
	KindToken = "token"
	// KindValue gives a floating-point or integer column as one feature
	// whose token is the column's name and whose value is the number, as
	// libFFM's "field:name:value" does. The default for floating-point
	// columns.
	KindValue = "value"
	// KindDense gives a number column as a dense feature of the field
	// (Group.AddDense: one value, or a list column's values in order).
	KindDense = "dense"
	// KindBucket gives a number column as the token of its bucket: the
	// decimal of the number of Boundaries at or below the value ("0" below
	// the first boundary).
	KindBucket = "bucket"
)

// ColumnField is one field's column.
type ColumnField struct {
	// Column names a top-level column of the file.
	Column string `yaml:"column"`
	// Field is the field number; nil means the entry's index in
	// ColumnMap.Fields.
	Field *uint32 `yaml:"field"`
	// Kind is how the column's values become features: token, value,
	// dense or bucket (see KindToken ...); "" picks the column type's
	// default.
	Kind string `yaml:"kind"`
	// Weights names a list column of numbers parallel to a token list
	// Column: each element's value (the default value is 1 for every
	// element).
	Weights string `yaml:"weights"`
	// Boundaries are the increasing bucket boundaries of kind bucket.
	Boundaries []float64 `yaml:"boundaries"`
	// User marks a user-level column: consecutive rows with the same
	// values in every user-level column form one sample group, whose
	// upper level holds these fields' features once and whose samples
	// hold the other fields' (as the sample-group format's level 1).
	User bool `yaml:"user"`
}

// FieldOf returns the field number of entry i.
func (m *ColumnMap) FieldOf(i int) uint32 {
	if f := m.Fields[i].Field; f != nil {
		return *f
	}
	return uint32(i)
}

// Grouped reports whether some field is user-level: the rows form sample
// groups of two levels.
func (m *ColumnMap) Grouped() bool {
	return slices.ContainsFunc(m.Fields, func(f ColumnField) bool { return f.User })
}

// Validate checks what can be checked without a file, reporting every
// problem at once (wrapping ErrBadOptions): a label and at least one
// field, fields below MaxField and not given twice, known kinds, each
// column used once, boundaries only with kind bucket and increasing.
func (m *ColumnMap) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: columns: "+format, append([]any{ErrBadOptions}, a...)...))
	}
	if strings.TrimSpace(m.Label) == "" {
		bad("no label column (columns.label)")
	}
	if len(m.Fields) == 0 {
		bad("no fields (columns.fields)")
	}
	used := map[string]string{m.Label: "the label"}
	fields := map[uint32]int{}
	for i, f := range m.Fields {
		what := fmt.Sprintf("fields[%d]", i)
		if strings.TrimSpace(f.Column) == "" {
			bad("%s: no column", what)
		}
		for _, c := range []string{f.Column, f.Weights} {
			if c == "" {
				continue
			}
			if u, ok := used[c]; ok {
				bad("%s: column %q is already %s", what, c, u)
			}
			used[c] = what
		}
		if fd := m.FieldOf(i); fd >= MaxField {
			bad("%s: field %d is not below %d", what, fd, MaxField)
		} else if j, ok := fields[fd]; ok {
			bad("%s: field %d is fields[%d]'s too", what, fd, j)
		} else {
			fields[fd] = i
		}
		errs = append(errs, f.validate(what)...)
	}
	return errors.Join(errs...)
}

// validate checks the kind-dependent settings of one entry.
func (f *ColumnField) validate(what string) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: columns: %s: "+format, append([]any{ErrBadOptions, what}, a...)...))
	}
	switch f.Kind {
	case "", KindToken, KindValue, KindDense, KindBucket:
	default:
		bad("unknown kind %q (want %s, %s, %s or %s)", f.Kind, KindToken, KindValue, KindDense, KindBucket)
	}
	if f.Weights != "" && f.Kind != "" && f.Kind != KindToken {
		bad("weights go with kind token, not %s", f.Kind)
	}
	if f.Kind == KindBucket && len(f.Boundaries) == 0 {
		bad("kind bucket needs boundaries")
	}
	if f.Kind != KindBucket && len(f.Boundaries) > 0 {
		bad("boundaries go with kind bucket, not %q", f.Kind)
	}
	for j, b := range f.Boundaries {
		if math.IsNaN(b) || math.IsInf(b, 0) || (j > 0 && b <= f.Boundaries[j-1]) {
			bad("boundaries must be finite and increasing: %v", f.Boundaries)
			break
		}
	}
	return errs
}
