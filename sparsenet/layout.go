package sparsenet

import (
	"errors"
	"fmt"
	"slices"
)

// Pooling combines a field's bag of weighted rows into one vector.
type Pooling uint8

const (
	// Sum pools as Σ value·row.
	Sum Pooling = iota
	// Mean pools as Σ value·row / (number of features in the bag).
	Mean
)

// ErrBadLayout, ErrUnknownField, ErrWrongLevel and ErrDenseWidth are returned
// (wrapped) for bad layouts, for features of fields outside the layout (or of
// the wrong kind: ids for a dense field, a vector for a sparse one), for
// features given to a node of another level than their field's, and for dense
// vectors whose length is not the field's DenseWidth.
var (
	ErrBadLayout    = errors.New("sparsenet: bad layout")
	ErrUnknownField = errors.New("sparsenet: field outside the model's layout")
	ErrWrongLevel   = errors.New("sparsenet: field of another level")
	ErrDenseWidth   = errors.New("sparsenet: dense vector of the wrong width")
)

// MaxLevels bounds the number of levels of a layout.
const MaxLevels = 64

// Layout maps fields to tables (or to dense vectors), to levels and to their
// slice of the dense input. It is immutable after NewLayout or
// NewLayoutFields and safe to share.
type Layout struct {
	fieldTable []int // field -> table index, -1 for a dense field
	fieldLevel []int // field -> level
	denseWidth []int // field -> width of a dense field, 0 for a sparse one
	denseOff   []int // field -> offset of a dense field in its level's per-node dense buffer
	dims       []int // table -> dim
	offsets    []int // field -> offset in the dense input (levels concatenated)
	levelCols  []int // level k has the columns [levelCols[k], levelCols[k+1])
	levelDense [][]denseSlot
	denseW     []int   // level -> Σ dense widths of its dense fields
	mirror     []int   // field -> its mirror field (FieldSpec.From), -1 for none
	from       []int   // field -> the field it mirrors, -1 for an ordinary field
	seqLen     []int   // field -> SeqLen of a sequence field, 0 for a bag
	seqLenOff  []int   // field -> offset of a sequence field's length in its level's per-node dense buffer
	levelSeq   [][]int // level -> its sequence fields
	width      int
	pooling    Pooling
}

// denseSlot places a dense field in its level: col is the offset of its
// columns within the level's block, off the offset of its values within a
// node's dense buffer.
type denseSlot struct {
	col, off, width int
}

// NewLayout builds a layout of sparse fields at level 0: fieldTable[f] is the
// table index of field f, dims[t] the dim of table t. It is
// NewLayoutFields with FieldSpec{Table: fieldTable[f]} for every field.
func NewLayout(fieldTable []int, dims []int, pooling Pooling) (*Layout, error) {
	if len(fieldTable) == 0 || len(dims) == 0 {
		return nil, fmt.Errorf("%w: %d fields, %d tables", ErrBadLayout, len(fieldTable), len(dims))
	}
	fields := make([]FieldSpec, len(fieldTable))
	for f, t := range fieldTable {
		fields[f] = FieldSpec{Table: t}
	}
	return NewLayoutFields(fields, dims, pooling)
}

// Width is the width of the dense input (Σ over fields of the table dim or
// the dense width), all levels together.
func (l *Layout) Width() int { return l.width }

// Fields is the number of fields.
func (l *Layout) Fields() int { return len(l.fieldTable) }

// Tables is the number of tables.
func (l *Layout) Tables() int { return len(l.dims) }

// Dim returns the dim of table t.
func (l *Layout) Dim(t int) int { return l.dims[t] }

// Batch is the sparse part of one mini-batch under a layout: its nodes per
// level, their features and dense vectors, and the unique ids per table.
type Batch struct {
	l *Layout
	// N is the number of samples (level-0 nodes) added.
	N int
	// dedup per table; dedup[t].Keys are the unique ids of table t.
	dedup  []Dedup
	levels []levelBatch
	count  []float32 // per field, the bag size of the node being added; zero between calls
	seen   []int32   // per sequence field, its features placed so far in the node being added; zero between calls
}

// levelBatch holds the nodes of one level.
type levelBatch struct {
	nodes int
	feats []feat
	dense []float32 // nodes x Layout.denseW[level]
}

// feat is one sparse feature of a node, ready for pooling.
type feat struct {
	row   int32   // index of the unique row within its table
	x     int32   // offset of its pooled vector in the level's input: node*cols + column of the field
	table int32   // table index
	scale float32 // value, divided by the bag size under Mean
}

// NewBatch returns an empty batch for the layout.
func (l *Layout) NewBatch() *Batch {
	return &Batch{l: l, dedup: make([]Dedup, len(l.dims)), levels: make([]levelBatch, len(l.levelCols)-1),
		count: make([]float32, len(l.fieldTable)), seen: make([]int32, len(l.fieldTable))}
}

// Reset empties the batch, keeping its buffers.
func (b *Batch) Reset() {
	b.N = 0
	for t := range b.dedup {
		b.dedup[t].Reset()
	}
	for k := range b.levels {
		lb := &b.levels[k]
		lb.nodes = 0
		lb.feats = lb.feats[:0]
		lb.dense = lb.dense[:0]
	}
}

// Add appends one sample given as parallel slices of its features: it is
// AddNode(0, ...). It fails, adding nothing, when a field is outside the
// layout or not a sparse field of level 0.
func (b *Batch) Add(fields []uint32, ids []uint64, values []float32) error {
	_, err := b.AddNode(0, fields, ids, values)
	return err
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

// Features returns the number of sparse features added, over all levels.
func (b *Batch) Features() int {
	n := 0
	for k := range b.levels {
		n += len(b.levels[k].feats)
	}
	return n
}

// Pool writes the dense input x (N x Width, row-major; overwritten) from the
// pulled rows: rows[t] holds len(IDs(t))*Dim(t) values. Dense fields are
// copied in (zeros where a sample has none). The layout must have one level;
// use PoolTree otherwise.
//
// Reference: x[s, off(f):off(f)+dim] = Σ_{features k of s in field f} v_k · rows[t][row_k].
func (b *Batch) Pool(rows [][]float32, x []float32) {
	if len(b.levels) != 1 {
		panic(fmt.Sprintf("sparsenet: Pool on a layout of %d levels; use PoolTree", len(b.levels)))
	}
	b.poolLevel(0, rows, x)
}

// Scatter writes the gradient of each unique row (grads[t], len(IDs(t))*Dim(t),
// overwritten) from the gradient dx of the dense input (N x Width), summing
// over every feature that used the row. The layout must have one level; use
// ScatterTree otherwise.
//
// Reference: grads[t][row_k] += v_k · dx[s_k, off(f_k):off(f_k)+dim].
func (b *Batch) Scatter(dx []float32, grads [][]float32) {
	if len(b.levels) != 1 {
		panic(fmt.Sprintf("sparsenet: Scatter on a layout of %d levels; use ScatterTree", len(b.levels)))
	}
	for t := range grads {
		clear(grads[t])
	}
	b.scatterLevel(0, dx, grads)
}

// poolLevel writes level k's input block x (Nodes(k) x cols, overwritten).
func (b *Batch) poolLevel(k int, rows [][]float32, x []float32) {
	lb := &b.levels[k]
	cols := b.l.levelCols[k+1] - b.l.levelCols[k]
	need := lb.nodes * cols
	if len(x) < need {
		panic(fmt.Sprintf("sparsenet: Pool: level %d input has %d values, need %d", k, len(x), need))
	}
	x = x[:need]
	clear(x)
	if len(b.l.dims) == 1 { // the common case, without per-feature lookups
		dim, src := b.l.dims[0], rows[0]
		for _, e := range lb.feats {
			axpy(x[e.x:int(e.x)+dim], e.scale, src[int(e.row)*dim:int(e.row+1)*dim])
		}
	} else {
		for _, e := range lb.feats {
			dim := b.l.dims[e.table]
			axpy(x[e.x:int(e.x)+dim], e.scale, rows[e.table][int(e.row)*dim:int(e.row+1)*dim])
		}
	}
	if dw := b.l.denseW[k]; dw > 0 {
		slots := b.l.levelDense[k]
		for n := 0; n < lb.nodes; n++ {
			src, dst := lb.dense[n*dw:(n+1)*dw], x[n*cols:(n+1)*cols]
			for _, s := range slots {
				copy(dst[s.col:s.col+s.width], src[s.off:s.off+s.width])
			}
		}
	}
}

// scatterLevel adds level k's share of the row gradients from its input
// gradient dx (Nodes(k) x cols).
func (b *Batch) scatterLevel(k int, dx []float32, grads [][]float32) {
	lb := &b.levels[k]
	cols := b.l.levelCols[k+1] - b.l.levelCols[k]
	if need := lb.nodes * cols; len(dx) < need {
		panic(fmt.Sprintf("sparsenet: Scatter: level %d gradient has %d values, need %d", k, len(dx), need))
	}
	if len(b.l.dims) == 1 {
		dim, dst := b.l.dims[0], grads[0]
		for _, e := range lb.feats {
			axpy(dst[int(e.row)*dim:int(e.row+1)*dim], e.scale, dx[e.x:int(e.x)+dim])
		}
		return
	}
	for _, e := range lb.feats {
		dim := b.l.dims[e.table]
		axpy(grads[e.table][int(e.row)*dim:int(e.row+1)*dim], e.scale, dx[e.x:int(e.x)+dim])
	}
}

// axpy is dst += a*src over len(dst) == len(src) values.
func axpy(dst []float32, a float32, src []float32) {
	src = src[:len(dst)]
	for j, e := range src {
		dst[j] += a * e
	}
}

// growZero extends s by n zeros.
func growZero(s []float32, n int) []float32 {
	m := len(s)
	s = slices.Grow(s, n)[:m+n]
	clear(s[m:])
	return s
}
