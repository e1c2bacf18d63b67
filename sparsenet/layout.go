package sparsenet

import (
	"errors"
	"fmt"
)

// Pooling combines a field's bag of weighted rows into one vector.
type Pooling uint8

const (
	// Sum pools as Σ value·row.
	Sum Pooling = iota
	// Mean pools as Σ value·row / (number of features in the bag).
	Mean
)

// ErrBadLayout and ErrUnknownField are returned (wrapped) for bad layouts
// and for features of fields outside the layout.
var (
	ErrBadLayout    = errors.New("sparsenet: bad layout")
	ErrUnknownField = errors.New("sparsenet: field outside the model's layout")
)

// Layout maps fields to tables and to their slice of the dense input.
// It is immutable after NewLayout and safe to share.
type Layout struct {
	fieldTable []int // field -> table index
	dims       []int // table -> dim
	offsets    []int // field -> offset in the dense input
	width      int
	pooling    Pooling
}

// NewLayout builds a layout: fieldTable[f] is the table index of field f,
// dims[t] the dim of table t.
func NewLayout(fieldTable []int, dims []int, pooling Pooling) (*Layout, error) {
	if len(fieldTable) == 0 || len(dims) == 0 {
		return nil, fmt.Errorf("%w: %d fields, %d tables", ErrBadLayout, len(fieldTable), len(dims))
	}
	for t, d := range dims {
		if d <= 0 {
			return nil, fmt.Errorf("%w: table %d has dim %d", ErrBadLayout, t, d)
		}
	}
	l := &Layout{fieldTable: append([]int(nil), fieldTable...), dims: append([]int(nil), dims...),
		offsets: make([]int, len(fieldTable)), pooling: pooling}
	for f, t := range fieldTable {
		if t < 0 || t >= len(dims) {
			return nil, fmt.Errorf("%w: field %d maps to table %d of %d", ErrBadLayout, f, t, len(dims))
		}
		l.offsets[f] = l.width
		l.width += dims[t]
	}
	return l, nil
}

// Width is the width of the dense input (Σ over fields of the table dim).
func (l *Layout) Width() int { return l.width }

// Fields is the number of fields.
func (l *Layout) Fields() int { return len(l.fieldTable) }

// Tables is the number of tables.
func (l *Layout) Tables() int { return len(l.dims) }

// Dim returns the dim of table t.
func (l *Layout) Dim(t int) int { return l.dims[t] }

// Batch is the sparse part of one mini-batch under a layout.
type Batch struct {
	l *Layout
	// N is the number of samples added.
	N int
	// dedup per table; dedup[t].Keys are the unique ids of table t.
	dedup []Dedup
	// per feature, flat over the batch
	featSample []int32
	featField  []int32
	featRow    []int32 // index of the unique row within its table
	featValue  []float32
	featX      []int32   // offset of the feature's pooled vector in x: sample*Width + field offset
	bagSize    []float32 // per (sample, field): number of features, for Mean
}

// NewBatch returns an empty batch for the layout.
func (l *Layout) NewBatch() *Batch {
	return &Batch{l: l, dedup: make([]Dedup, len(l.dims))}
}

// Reset empties the batch, keeping its buffers.
func (b *Batch) Reset() {
	b.N = 0
	for t := range b.dedup {
		b.dedup[t].Reset()
	}
	b.featSample = b.featSample[:0]
	b.featField = b.featField[:0]
	b.featRow = b.featRow[:0]
	b.featValue = b.featValue[:0]
	b.featX = b.featX[:0]
	b.bagSize = b.bagSize[:0]
}

// Add appends one sample given as parallel slices of its features. It fails,
// adding nothing, when a field is outside the layout.
func (b *Batch) Add(fields []uint32, ids []uint64, values []float32) error {
	nf := len(b.l.fieldTable)
	for _, f := range fields {
		if int(f) >= nf {
			return fmt.Errorf("%w: field %d, the model has %d", ErrUnknownField, f, nf)
		}
	}
	s := int32(b.N)
	base := int32(b.N * b.l.width)
	for k, f := range fields {
		t := b.l.fieldTable[f]
		b.featSample = append(b.featSample, s)
		b.featField = append(b.featField, int32(f))
		b.featRow = append(b.featRow, b.dedup[t].Index(ids[k]))
		b.featValue = append(b.featValue, values[k])
		b.featX = append(b.featX, base+int32(b.l.offsets[f]))
	}
	if b.l.pooling == Mean {
		base := len(b.bagSize)
		for i := 0; i < nf; i++ {
			b.bagSize = append(b.bagSize, 0)
		}
		for _, f := range fields {
			b.bagSize[base+int(f)]++
		}
	}
	b.N++
	return nil
}

// IDs returns the unique ids of table t in first-seen order; row k of the
// table's pulled buffer belongs to IDs(t)[k]. The slice is owned by the
// batch and valid until Reset.
func (b *Batch) IDs(t int) []uint64 { return b.dedup[t].Keys }

// Unique returns the total number of unique ids over all tables.
func (b *Batch) Unique() int {
	n := 0
	for t := range b.dedup {
		n += b.dedup[t].Len()
	}
	return n
}

// Features returns the number of features added.
func (b *Batch) Features() int { return len(b.featRow) }

func (b *Batch) scale(k int) float32 {
	v := b.featValue[k]
	if b.l.pooling == Mean {
		v /= b.bagSize[int(b.featSample[k])*len(b.l.fieldTable)+int(b.featField[k])]
	}
	return v
}

// Pool writes the dense input x (N x Width, row-major; overwritten) from the
// pulled rows: rows[t] holds len(IDs(t))*Dim(t) values.
//
// Reference: x[s, off(f):off(f)+dim] = Σ_{features k of s in field f} v_k · rows[t][row_k].
func (b *Batch) Pool(rows [][]float32, x []float32) {
	w := b.l.width
	if len(x) < b.N*w {
		panic(fmt.Sprintf("sparsenet: Pool: x has %d values, need %d", len(x), b.N*w))
	}
	clear(x[:b.N*w])
	if len(b.l.dims) == 1 && b.l.pooling == Sum { // the common case, without per-feature lookups
		dim, src := b.l.dims[0], rows[0]
		for k, r := range b.featRow {
			axpy(x[b.featX[k]:int(b.featX[k])+dim], b.featValue[k], src[int(r)*dim:int(r+1)*dim])
		}
		return
	}
	for k, r := range b.featRow {
		t := b.l.fieldTable[b.featField[k]]
		dim := b.l.dims[t]
		axpy(x[b.featX[k]:int(b.featX[k])+dim], b.scale(k), rows[t][int(r)*dim:int(r+1)*dim])
	}
}

// axpy is dst += a*src over len(dst) == len(src) values.
func axpy(dst []float32, a float32, src []float32) {
	src = src[:len(dst)]
	for j, e := range src {
		dst[j] += a * e
	}
}

// Scatter writes the gradient of each unique row (grads[t], len(IDs(t))*Dim(t),
// overwritten) from the gradient dx of the dense input (N x Width), summing
// over every feature that used the row.
//
// Reference: grads[t][row_k] += v_k · dx[s_k, off(f_k):off(f_k)+dim].
func (b *Batch) Scatter(dx []float32, grads [][]float32) {
	for t := range grads {
		clear(grads[t])
	}
	if len(b.l.dims) == 1 && b.l.pooling == Sum {
		dim, dst := b.l.dims[0], grads[0]
		for k, r := range b.featRow {
			axpy(dst[int(r)*dim:int(r+1)*dim], b.featValue[k], dx[b.featX[k]:int(b.featX[k])+dim])
		}
		return
	}
	for k, r := range b.featRow {
		t := b.l.fieldTable[b.featField[k]]
		dim := b.l.dims[t]
		axpy(grads[t][int(r)*dim:int(r+1)*dim], b.scale(k), dx[b.featX[k]:int(b.featX[k])+dim])
	}
}
