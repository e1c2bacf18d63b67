package parquetsrc

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/xdlgo/xps/reader"
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

func (l *line) reset() {
	l.fields, l.ids, l.vals = l.fields[:0], l.ids[:0], l.vals[:0]
	l.dense, l.dvals = l.dense[:0], l.dvals[:0]
}

func (l *line) add(field uint32, id uint64, v float32) {
	l.fields = append(l.fields, field)
	l.ids = append(l.ids, id)
	l.vals = append(l.vals, v)
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

func (l *line) copyFrom(o *line) {
	l.fields = append(l.fields[:0], o.fields...)
	l.ids = append(l.ids[:0], o.ids...)
	l.vals = append(l.vals[:0], o.vals...)
	l.dense = append(l.dense[:0], o.dense...)
	l.dvals = append(l.dvals[:0], o.dvals...)
}

// row is one row read: its label and its features, the sample's (lines
// [0]) and the user-level ones (lines[1]).
type row struct {
	label    float32
	hasLabel bool
	lines    [2]line
}

func (r *row) copyFrom(o *row) {
	r.label, r.hasLabel = o.label, o.hasLabel
	r.lines[0].copyFrom(&o.lines[0])
	r.lines[1].copyFrom(&o.lines[1])
}

// build turns the cursors' current row into r; a problem with the row's
// values is returned as a reason (the caller names the row), an error of
// the data as err.
func (p *plan) build(curs []cursor, r *row) (reason string) {
	r.lines[0].reset()
	r.lines[1].reset()
	lab := &curs[0]
	r.hasLabel = len(lab.rowNums) == 1 && !math.IsNaN(lab.rowNums[0])
	if r.hasLabel {
		r.label = 0
		if lab.rowNums[0] > 0 {
			r.label = 1
		}
	}
	ci := 1
	for i := range p.fields {
		fp := &p.fields[i]
		c := &curs[ci]
		ci++
		var w *cursor
		if fp.weights != nil {
			w = &curs[ci]
			ci++
		}
		l := &r.lines[0]
		if fp.user {
			l = &r.lines[1]
		}
		if why := fp.add(c, w, l); why != "" {
			return fmt.Sprintf("column %q: %s", fp.col.name, why)
		}
	}
	return ""
}

// add adds the features of field fp from its cursor c (and weights w) to l.
func (fp *fieldPlan) add(c, w *cursor, l *line) string {
	switch fp.kind {
	case reader.KindToken:
		return fp.addTokens(c, w, l)
	case reader.KindValue:
		for _, v := range c.rowNums {
			if math.IsNaN(v) {
				continue // NaN is a missing value
			}
			if !finite(v) {
				return fmt.Sprintf("value %v is not a finite float32", v)
			}
			l.add(fp.field, reader.FeatureID(fp.ns, fp.col.name), float32(v))
		}
	case reader.KindDense:
		lo := len(l.dvals)
		for _, v := range c.rowNums {
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
	case reader.KindBucket:
		var buf [20]byte
		for _, v := range c.rowNums {
			if math.IsNaN(v) {
				continue
			}
			b := sort.Search(len(fp.bounds), func(i int) bool { return fp.bounds[i] > v })
			l.add(fp.field, reader.FeatureID(fp.ns, strconv.AppendInt(buf[:0], int64(b), 10)), 1)
		}
	}
	return ""
}

// addTokens adds a token field's ids, each weighted by its element of w
// when the field has weights (a null weight counts as 1).
func (fp *fieldPlan) addTokens(c, w *cursor, l *line) string {
	if w == nil {
		l.ids = append(l.ids, c.rowIDs...)
		for range c.rowIDs {
			l.fields = append(l.fields, fp.field)
			l.vals = append(l.vals, 1)
		}
		return ""
	}
	if len(w.present) != len(c.present) {
		return fmt.Sprintf("%d elements, but its weights column %q has %d", len(c.present), fp.weights.name, len(w.present))
	}
	vi, wi := 0, 0
	for j, ok := range c.present {
		wv := float32(1)
		if w.present[j] {
			x := w.rowNums[wi]
			wi++
			if !finite(x) {
				return fmt.Sprintf("weight %v is not a finite float32", x)
			}
			wv = float32(x)
		}
		if ok {
			l.add(fp.field, c.rowIDs[vi], wv)
			vi++
		}
	}
	return ""
}
