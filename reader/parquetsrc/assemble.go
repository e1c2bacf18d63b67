package parquetsrc

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/xdlgo/xps/reader"
)

// assembly turns a batch of decoded columns into rows: each field's
// features over the batch column by column (a tight loop per field), then
// moved into row order (a counting pass, then each field's features
// scattered to their rows). Row i's features on level k (0 the sample's,
// 1 the user-level ones) are lv[k]'s fields, ids and vals [off[i]:
// off[i+1]], in the map's field order; why[i] is a malformed row's reason
// or "". Dense fields are left to build, a row at a time.
type assembly struct {
	lv   [2]featBatch
	why  []string
	outs []fieldOut // a field each
	pos  []int32
}

type featBatch struct {
	off    []int32
	fields []uint32
	ids    []uint64
	vals   []float32
}

// fieldOut is one field's features over the batch: row i's are ids and
// vals [off[i]:off[i+1]]; off nil means value i alone is row i's, vals
// nil that every value is 1. dense marks a field build takes.
type fieldOut struct {
	off   []int32
	ids   []uint64
	vals  []float32
	dense bool
}

func (o *fieldOut) span(i int) (int32, int32) {
	if o.off == nil {
		return int32(i), int32(i + 1)
	}
	return o.off[i], o.off[i+1]
}

// span is the range of cursor c's batch values that are row i's.
func (c *cursor) span(i int) (int32, int32) {
	if !c.b.list && c.b.maxDef == 0 {
		return int32(i), int32(i + 1)
	}
	return c.off[i], c.off[i+1]
}

// assemble turns the cursors' batch of n rows into rows.
func (a *assembly) assemble(p *plan, curs []cursor, n int) {
	a.why = slices.Grow(a.why[:0], n)[:n]
	clear(a.why)
	if len(a.outs) < len(p.fields) {
		a.outs = make([]fieldOut, len(p.fields))
	}
	for fi := range p.fields {
		fp := &p.fields[fi]
		var w *cursor
		if fp.weights != nil {
			w = &curs[fp.ci+1]
		}
		fp.column(&curs[fp.ci], w, n, &a.outs[fi], a.why)
	}
	a.transpose(p, 0, n)
	if p.grouped {
		a.transpose(p, 1, n)
	}
}

// column computes field fp's features over the batch into o, a row's
// problem into why.
func (fp *fieldPlan) column(c, w *cursor, n int, o *fieldOut, why []string) {
	o.dense = fp.kind == reader.KindDense
	switch {
	case o.dense:
	case fp.kind == reader.KindToken && w == nil: // the cursor's ids as they are
		o.ids, o.vals, o.off = c.bIDs, nil, nil
		if c.b.list || c.b.maxDef > 0 {
			o.off = c.off
		}
	case fp.kind == reader.KindToken:
		fp.weighted(c, w, n, o, why)
	default:
		fp.numbers(c, n, o, why)
	}
}

// numbers computes a value or bucket field's features: NaN is a missing
// value; a value that is not a finite float32 makes the row malformed.
func (fp *fieldPlan) numbers(c *cursor, n int, o *fieldOut, why []string) {
	o.off, o.ids, o.vals = append(o.off[:0], 0), o.ids[:0], o.vals[:0]
	bucket := fp.kind == reader.KindBucket
	for i := range n {
		lo, hi := c.span(i)
		for _, v := range c.bNums[lo:hi] {
			switch {
			case math.IsNaN(v):
			case bucket:
				b := sort.Search(len(fp.bounds), func(j int) bool { return fp.bounds[j] > v })
				o.ids, o.vals = append(o.ids, fp.bucketIDs[b]), append(o.vals, 1)
			case !finite(v):
				if why[i] == "" {
					why[i] = fmt.Sprintf("column %q: value %v is not a finite float32", fp.col.name, v)
				}
			default:
				o.ids, o.vals = append(o.ids, fp.valueID), append(o.vals, float32(v))
			}
		}
		o.off = append(o.off, int32(len(o.ids)))
	}
}

// weighted computes a token list's features, each weighted by its
// element of the weights list (a null weight counts as 1).
func (fp *fieldPlan) weighted(c, w *cursor, n int, o *fieldOut, why []string) {
	o.off, o.ids, o.vals = append(o.off[:0], 0), o.ids[:0], o.vals[:0]
	for i := range n {
		el, eh, wl, wh := c.eoff[i], c.eoff[i+1], w.eoff[i], w.eoff[i+1]
		if eh-el != wh-wl {
			why[i] = fmt.Sprintf("column %q: %d elements, but its weights column %q has %d", fp.col.name, eh-el, fp.weights.name, wh-wl)
			o.off = append(o.off, int32(len(o.ids)))
			continue
		}
		vi, wi := c.off[i], w.off[i]
		for j := range eh - el {
			wv := float32(1)
			if w.pres[wl+j] {
				x := w.bNums[wi]
				wi++
				if !finite(x) && why[i] == "" {
					why[i] = fmt.Sprintf("column %q: weight %v is not a finite float32", fp.col.name, x)
				}
				wv = float32(x)
			}
			if c.pres[el+j] {
				o.ids, o.vals = append(o.ids, c.bIDs[vi]), append(o.vals, wv)
				vi++
			}
		}
		o.off = append(o.off, int32(len(o.ids)))
	}
}

// transpose moves level k's fields' features into row order.
func (a *assembly) transpose(p *plan, k, n int) {
	lb := &a.lv[k]
	lb.off = slices.Grow(lb.off[:0], n+1)[:n+1]
	clear(lb.off)
	for fi := range p.fields {
		o := &a.outs[fi]
		if p.fields[fi].user != (k == 1) || o.dense {
			continue
		}
		for i := range n {
			lo, hi := o.span(i)
			lb.off[i+1] += hi - lo
		}
	}
	for i := range n {
		lb.off[i+1] += lb.off[i]
	}
	total := int(lb.off[n])
	lb.fields = slices.Grow(lb.fields[:0], total)[:total]
	lb.ids = slices.Grow(lb.ids[:0], total)[:total]
	lb.vals = slices.Grow(lb.vals[:0], total)[:total]
	a.pos = append(a.pos[:0], lb.off[:n]...)
	for fi := range p.fields {
		fp, o := &p.fields[fi], &a.outs[fi]
		if fp.user != (k == 1) || o.dense {
			continue
		}
		a.scatter(lb, fp.field, o, n)
	}
}

// scatter moves field's features o to their rows' places in lb, a.pos[i]
// being row i's next place.
func (a *assembly) scatter(lb *featBatch, field uint32, o *fieldOut, n int) {
	pos := a.pos[:n]
	if o.off == nil { // a value a row
		ids := o.ids[:n]
		for i, at := range pos {
			lb.fields[at], lb.ids[at] = field, ids[i]
			if o.vals == nil {
				lb.vals[at] = 1
			} else {
				lb.vals[at] = o.vals[i]
			}
			pos[i] = at + 1
		}
		return
	}
	off := o.off[:n+1]
	for i, at := range pos {
		for j := off[i]; j < off[i+1]; j++ {
			lb.fields[at], lb.ids[at] = field, o.ids[j]
			if o.vals == nil {
				lb.vals[at] = 1
			} else {
				lb.vals[at] = o.vals[j]
			}
			at++
		}
		pos[i] = at
	}
}
