package parquetsrc

import (
	"fmt"
	"math"
	"slices"
)

// line is the features one row gives one level of a group.
type line struct {
	fields []uint32
	ids    []uint64
	vals   []float32
	dense  []dense
	dvals  []float32
}

type dense struct {
	field  uint32
	lo, hi int
}

// equal reports whether l and o hold the same features (the user key of
// two rows).
func (l *line) equal(o *line) bool {
	if !slices.Equal(l.ids, o.ids) || !slices.Equal(l.fields, o.fields) || !slices.Equal(l.vals, o.vals) ||
		len(l.dense) != len(o.dense) || !slices.Equal(l.dvals, o.dvals) {
		return false
	}
	for i := range l.dense {
		if l.dense[i] != o.dense[i] {
			return false
		}
	}
	return true
}

// row is one row read: its label and its features, the sample's (lines
// [0]) and the user-level ones (lines[1]).
type row struct {
	label    float32
	hasLabel bool
	lines    [2]line
}

// build makes r row i of the cursors' batch, assembled in a: its label,
// its features, and its dense fields (read here, a row at a time); it
// returns the row's problem as a reason, or "".
func (p *plan) build(a *assembly, curs []cursor, i int, r *row) string {
	lab := &curs[0]
	lo, hi := lab.span(i)
	r.hasLabel = hi-lo == 1 && !math.IsNaN(lab.bNums[lo])
	if r.hasLabel {
		r.label = 0
		if lab.bNums[lo] > 0 {
			r.label = 1
		}
	}
	levels := 1
	if p.grouped {
		levels = 2
	}
	for k := range levels {
		l, lb := &r.lines[k], &a.lv[k]
		lo, hi := lb.off[i], lb.off[i+1]
		l.fields = append(l.fields[:0], lb.fields[lo:hi]...)
		l.ids = append(l.ids[:0], lb.ids[lo:hi]...)
		l.vals = append(l.vals[:0], lb.vals[lo:hi]...)
		l.dense, l.dvals = l.dense[:0], l.dvals[:0]
	}
	why := a.why[i]
	for _, fi := range p.dense {
		fp := &p.fields[fi]
		l := &r.lines[0]
		if fp.user {
			l = &r.lines[1]
		}
		c := &curs[fp.ci]
		lo, hi := c.span(i)
		if w := fp.addDense(c.bNums[lo:hi], l); w != "" && why == "" {
			why = fmt.Sprintf("column %q: %s", fp.col.name, w)
		}
	}
	return why
}

// addDense adds a dense field's values to l: NaN is a missing value, a
// value that is not a finite float32 a problem.
func (fp *fieldPlan) addDense(nums []float64, l *line) string {
	lo := len(l.dvals)
	for _, v := range nums {
		if math.IsNaN(v) {
			continue
		}
		if !finite(v) {
			return fmt.Sprintf("value %v is not a finite float32", v)
		}
		l.dvals = append(l.dvals, float32(v))
	}
	if len(l.dvals) > lo {
		l.dense = append(l.dense, dense{fp.field, lo, len(l.dvals)})
	}
	return ""
}
