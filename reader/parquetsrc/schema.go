package parquetsrc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/xdlgo/xps/reader"
)

// ErrSchema is wrapped by the errors about a file whose columns do not
// fit the column map (a missing column, an unsupported type), and about
// files whose schemas differ.
var ErrSchema = errors.New("parquetsrc: schema does not fit the column map")

// valueKind is what a column's type can give: tokens only (booleans,
// strings and byte arrays; booleans are numbers too as a label), or
// numbers (integers and floating point; integers are tokens too).
type valueKind int

const (
	asToken  valueKind = iota + 1 // booleans, strings, byte arrays
	asNumber                      // integers, floating point
)

// binding is one mapped column of one file: its leaf and how its values
// are read.
type binding struct {
	name     string // the top-level column's name
	leaf     int    // the leaf column's index in the file's schema
	list     bool   // repeated (max repetition level 1)
	maxDef   int
	optElem  bool // a list's element may be null (definition level maxDef-1)
	phys     parquet.Kind
	unsigned bool // an unsigned integer logical type: tokens are its unsigned decimal
	values   valueKind
	typ      string // the column's type as a message names it
}

// fieldPlan is one field of the map, bound to a file.
type fieldPlan struct {
	field   uint32 // the field of the sample's features
	ns      uint32 // the namespace its tokens are hashed in
	kind    string // reader.KindToken, KindValue, KindDense or KindBucket
	col     binding
	weights *binding
	bounds  []float64
	user    bool
	// ci is the cursor of col (its weights' is ci+1); valueID is kind
	// value's feature id; bucketIDs kind bucket's, a bucket each.
	ci        int
	valueID   uint64
	bucketIDs []uint64
}

// plan is a column map bound to one file's schema.
type plan struct {
	label  binding
	fields []fieldPlan
	// leaves lists the leaf columns read, label first, then each field's
	// column and weights; specs says how each is read.
	leaves []int
	specs  []spec
	// dense lists the fields of kind dense, which build reads a row at a
	// time; grouped says some field is user-level.
	dense   []int
	grouped bool
	// sig is the mapped columns' types, to compare files' schemas.
	sig string
}

// bind binds m to the schema of f (the file named name), reporting every
// problem at once, each wrapping ErrSchema and naming the file.
func bind(name string, f *parquet.File, m *reader.ColumnMap, ns []uint32) (*plan, error) {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: "+format, append([]any{ErrSchema, name}, a...)...))
	}
	p := &plan{}
	var sig strings.Builder
	look := func(col, what string) (binding, bool) {
		b, err := leafOf(f, col)
		if err != nil {
			bad("%s: %v", what, err)
			return b, false
		}
		fmt.Fprintf(&sig, "%s:%s;", col, b.typ)
		return b, true
	}
	if b, ok := look(m.Label, "label column "+quote(m.Label)); ok {
		if b.list || (b.values != asNumber && b.phys != parquet.Boolean) {
			bad("label column %q is %s; want a boolean, integer or floating-point scalar", m.Label, b.typ)
		}
		p.label = b
	}
	for i, mf := range m.Fields {
		fp := fieldPlan{field: m.FieldOf(i), kind: mf.Kind, bounds: mf.Boundaries, user: mf.User}
		fp.ns = fp.field
		if int(fp.field) < len(ns) {
			fp.ns = ns[fp.field]
		}
		what := fmt.Sprintf("fields[%d] (column %s)", i, quote(mf.Column))
		b, ok := look(mf.Column, what)
		if !ok {
			continue
		}
		fp.col = b
		if fp.kind == "" {
			fp.kind = defaultKind(b)
		}
		if msg := kindProblem(fp.kind, b); msg != "" {
			bad("%s: %s", what, msg)
		}
		if mf.Weights != "" {
			if w, ok := look(mf.Weights, what+": weights column "+quote(mf.Weights)); ok {
				if !w.list || !b.list || w.values != asNumber {
					bad("%s: weights column %q is %s; want a list of numbers beside a list column", what, mf.Weights, w.typ)
				}
				fp.weights = &w
			}
		}
		p.fields = append(p.fields, fp)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	p.add(spec{b: p.label})
	for i := range p.fields {
		fp := &p.fields[i]
		fp.ci = len(p.specs)
		if fp.kind == reader.KindDense {
			p.dense = append(p.dense, i)
		}
		p.grouped = p.grouped || fp.user
		fp.valueID = reader.FeatureID(fp.ns, fp.col.name)
		for b := range len(fp.bounds) + 1 {
			fp.bucketIDs = append(fp.bucketIDs, reader.FeatureID(fp.ns, strconv.Itoa(b)))
		}
		p.add(spec{b: fp.col, tokens: fp.kind == reader.KindToken, ns: fp.ns, pairs: fp.weights != nil})
		if fp.weights != nil {
			p.add(spec{b: *fp.weights, pairs: true})
		}
	}
	p.sig = sig.String()
	return p, nil
}

// spec is how a cursor reads a leaf: its binding, whether its values are
// tokens (hashed in namespace ns) or numbers, and whether it keeps its
// list entries to pair them with another column's.
type spec struct {
	b      binding
	tokens bool
	pairs  bool // a weighted field's column or its weights
	ns     uint32
}

func (p *plan) add(sp spec) {
	p.leaves = append(p.leaves, sp.b.leaf)
	p.specs = append(p.specs, sp)
}

// defaultKind is the kind a field of column b takes when the map gives
// none: value for floating-point scalars, dense for floating-point lists,
// token otherwise.
func defaultKind(b binding) string {
	if b.phys == parquet.Float || b.phys == parquet.Double {
		if b.list {
			return reader.KindDense
		}
		return reader.KindValue
	}
	return reader.KindToken
}

// kindProblem says why kind does not fit column b, or "".
func kindProblem(kind string, b binding) string {
	switch kind {
	case reader.KindToken:
		if b.phys == parquet.Float || b.phys == parquet.Double {
			return fmt.Sprintf("a %s column is not a token: map it as value, dense or bucket", b.typ)
		}
	case reader.KindValue:
		if b.values != asNumber || b.list {
			return fmt.Sprintf("kind value takes a number scalar, not %s", b.typ)
		}
	case reader.KindDense, reader.KindBucket:
		if b.values != asNumber {
			return fmt.Sprintf("kind %s takes numbers, not %s", kind, b.typ)
		}
	}
	return ""
}

// leafOf finds the leaf column of the top-level column name: the column
// itself, or the one leaf under it (a list in the standard three-level
// encoding, or the older two-level one Spark and Hive write).
func leafOf(f *parquet.File, name string) (binding, error) {
	b := binding{name: name}
	col := f.Root().Column(name)
	if col == nil {
		return b, fmt.Errorf("no such column (the file has %s)", strings.Join(topNames(f), ", "))
	}
	for !col.Leaf() {
		kids := col.Columns()
		if len(kids) != 1 {
			return b, fmt.Errorf("a group of %d columns (a struct or map) is not supported", len(kids))
		}
		col = kids[0]
	}
	b.leaf, b.maxDef = col.Index(), col.MaxDefinitionLevel()
	switch col.MaxRepetitionLevel() {
	case 0:
	case 1:
		b.list, b.optElem = true, col.Optional()
	default:
		return b, fmt.Errorf("a list of lists (repetition level %d) is not supported", col.MaxRepetitionLevel())
	}
	t := col.Type()
	b.phys = t.Kind()
	b.typ = t.String()
	if b.list {
		b.typ = "list<" + b.typ + ">"
	}
	if lt := t.LogicalType(); lt != nil {
		switch v := lt.Value.(type) {
		case *format.DecimalType:
			return b, fmt.Errorf("decimal columns (%s) are not supported: cast them to double", b.typ)
		case *format.IntType:
			b.unsigned = !v.IsSigned
		}
	}
	switch b.phys {
	case parquet.Boolean, parquet.ByteArray, parquet.FixedLenByteArray:
		b.values = asToken
	case parquet.Int32, parquet.Int64, parquet.Float, parquet.Double:
		b.values = asNumber
	default:
		return b, fmt.Errorf("type %s is not supported", b.typ)
	}
	return b, nil
}

// topNames lists the top-level columns of f, for messages.
func topNames(f *parquet.File) []string {
	var names []string
	for _, c := range f.Root().Columns() {
		names = append(names, quote(c.Name()))
	}
	if len(names) > 12 {
		names = append(names[:12], fmt.Sprintf("... (%d in all)", len(names)))
	}
	return names
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
