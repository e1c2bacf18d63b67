package sparsenet

import (
	"fmt"
	"math"
)

// FieldSpec describes one field of a layout.
type FieldSpec struct {
	// Table is the index of the field's embedding table, or -1 for a dense
	// field.
	Table int
	// Level is the level of the field's features: 0 for per-sample fields,
	// 1 for the level above (a user), and so on, below MaxLevels.
	Level int
	// DenseWidth is the length of a dense field's vector (> 0); 0 for a
	// sparse field.
	DenseWidth int
	// From, when above 0, makes this a mirror field of field From-1, a
	// sparse field of the same level: every feature of that field is
	// pooled into this one too, with this field's table (a wide model's
	// dim-1 weights beside the embeddings). A batch takes no feature of a
	// mirror field directly. 0: an ordinary field.
	From int
	// SeqLen, when above 0, makes this a sequence field of that many
	// positions (a user's behaviour history): the features of a node's
	// field are an ordered list, oldest first, of which the last SeqLen
	// are kept, each in its own position's columns instead of pooled
	// together, followed by one column holding the list's kept length
	// (see the package documentation, Sequence fields). Only a sparse
	// field may be one; it is neither mirrored nor a mirror, and it is
	// at most MaxSeqLen. 0: a bag field.
	SeqLen int
}

// MaxSeqLen bounds FieldSpec.SeqLen.
const MaxSeqLen = 4096

// NewLayoutFields builds a layout from one spec per field; dims[t] is the dim
// of table t. The dense input is the concatenation of the level blocks, level
// 0 first; within a level, the fields in increasing field number, each as
// wide as its table's dim or its DenseWidth.
func NewLayoutFields(fields []FieldSpec, dims []int, pooling Pooling) (*Layout, error) {
	if len(fields) == 0 {
		return nil, fmt.Errorf("%w: no fields", ErrBadLayout)
	}
	for t, d := range dims {
		if d <= 0 {
			return nil, fmt.Errorf("%w: table %d has dim %d", ErrBadLayout, t, d)
		}
	}
	levels := 1
	for f, s := range fields {
		switch {
		case s.Level < 0 || s.Level >= MaxLevels:
			return nil, fmt.Errorf("%w: field %d has level %d, outside [0, %d)", ErrBadLayout, f, s.Level, MaxLevels)
		case s.Table == -1 && s.DenseWidth <= 0:
			return nil, fmt.Errorf("%w: dense field %d has width %d", ErrBadLayout, f, s.DenseWidth)
		case s.Table != -1 && s.DenseWidth != 0:
			return nil, fmt.Errorf("%w: sparse field %d (table %d) has a dense width %d", ErrBadLayout, f, s.Table, s.DenseWidth)
		case s.Table < -1 || s.Table >= len(dims):
			return nil, fmt.Errorf("%w: field %d maps to table %d of %d", ErrBadLayout, f, s.Table, len(dims))
		case s.From > 0 && (s.From > len(fields) || fields[s.From-1].Table < 0 || fields[s.From-1].From > 0 ||
			fields[s.From-1].Level != s.Level || s.Table < 0):
			return nil, fmt.Errorf("%w: field %d mirrors field %d, which is not a sparse, unmirrored field of its level", ErrBadLayout, f, s.From-1)
		}
		if err := checkSeq(fields, f); err != nil {
			return nil, err
		}
		levels = max(levels, s.Level+1)
	}
	nf := len(fields)
	l := &Layout{fieldTable: make([]int, nf), fieldLevel: make([]int, nf), denseWidth: make([]int, nf), mirror: make([]int, nf), from: make([]int, nf),
		denseOff: make([]int, nf), dims: append([]int(nil), dims...), offsets: make([]int, nf),
		levelCols: make([]int, levels+1), levelDense: make([][]denseSlot, levels), denseW: make([]int, levels),
		seqLen: make([]int, nf), seqLenOff: make([]int, nf), levelSeq: make([][]int, levels), pooling: pooling}
	for k := 0; k < levels; k++ {
		l.levelCols[k] = l.width
		for f, s := range fields {
			if s.Level != k {
				continue
			}
			l.fieldTable[f], l.fieldLevel[f], l.offsets[f] = s.Table, k, l.width
			w := s.DenseWidth
			switch {
			case s.SeqLen > 0:
				w = l.addSeq(f, k, s.SeqLen, dims[s.Table])
			case s.Table >= 0:
				w = dims[s.Table]
			default:
				l.denseWidth[f], l.denseOff[f] = w, l.denseW[k]
				l.levelDense[k] = append(l.levelDense[k], denseSlot{col: l.width - l.levelCols[k], off: l.denseW[k], width: w})
				l.denseW[k] += w
			}
			l.width += w
		}
	}
	l.levelCols[levels] = l.width
	for f := range l.mirror {
		l.mirror[f], l.from[f] = -1, fields[f].From-1
	}
	for f, s := range fields {
		if s.From > 0 {
			if l.mirror[s.From-1] >= 0 {
				return nil, fmt.Errorf("%w: fields %d and %d both mirror field %d", ErrBadLayout, l.mirror[s.From-1], f, s.From-1)
			}
			l.mirror[s.From-1] = f
		}
	}
	return l, nil
}

// Mirror returns the mirror field of field f (FieldSpec.From), or -1.
func (l *Layout) Mirror(f int) int { return l.mirror[f] }

// MirrorOf returns the field that field f mirrors, or -1 when f is not a
// mirror field.
func (l *Layout) MirrorOf(f int) int { return l.from[f] }

// Levels is the number of levels: 1 + the largest level of a field.
func (l *Layout) Levels() int { return len(l.levelCols) - 1 }

// Level returns the level of field f.
func (l *Layout) Level(f int) int { return l.fieldLevel[f] }

// Table returns the table index of field f, or -1 for a dense field.
func (l *Layout) Table(f int) int { return l.fieldTable[f] }

// DenseWidth returns the width of dense field f, or 0 for a sparse field.
func (l *Layout) DenseWidth(f int) int { return l.denseWidth[f] }

// LevelCols returns the columns [lo, hi) of level k's block in the dense
// input; a node of level k has hi-lo input values.
func (l *Layout) LevelCols(k int) (lo, hi int) { return l.levelCols[k], l.levelCols[k+1] }

// Nodes returns the number of nodes added at level k; Nodes(0) == N.
func (b *Batch) Nodes(level int) int { return b.levels[level].nodes }

// AddNode appends a node at level with the given sparse features (parallel
// slices) and returns its index within the level. Every field must be a
// sparse field of that level; otherwise it fails, adding nothing, with an
// error wrapping ErrUnknownField or ErrWrongLevel. The node's dense fields
// are zeros until SetDense.
func (b *Batch) AddNode(level int, fields []uint32, ids []uint64, values []float32) (int, error) {
	l := b.l
	if level < 0 || level >= len(b.levels) {
		return -1, fmt.Errorf("%w: level %d, the model has %d", ErrWrongLevel, level, len(b.levels))
	}
	if len(ids) != len(fields) || len(values) != len(fields) {
		panic(fmt.Sprintf("sparsenet: AddNode: %d fields, %d ids, %d values", len(fields), len(ids), len(values)))
	}
	nf := len(l.fieldTable)
	for _, f := range fields {
		switch {
		case int(f) >= nf:
			return -1, fmt.Errorf("%w: field %d, the model has %d", ErrUnknownField, f, nf)
		case l.fieldTable[f] < 0:
			return -1, fmt.Errorf("%w: field %d is dense, not sparse", ErrUnknownField, f)
		case l.from[f] >= 0:
			return -1, fmt.Errorf("%w: field %d mirrors field %d and takes no feature of its own", ErrUnknownField, f, l.from[f])
		case l.fieldLevel[f] != level:
			return -1, fmt.Errorf("%w: field %d is of level %d, not %d", ErrWrongLevel, f, l.fieldLevel[f], level)
		}
	}
	lb := &b.levels[level]
	node := lb.nodes
	cols := l.levelCols[level+1] - l.levelCols[level]
	if int64(node+1)*int64(cols) > math.MaxInt32 {
		panic(fmt.Sprintf("sparsenet: AddNode: level %d input of %d nodes x %d columns overflows int32", level, node+1, cols))
	}
	base := int32(node*cols - l.levelCols[level])
	for k, f := range fields {
		b.count[f]++
		b.dedup[l.fieldTable[f]].Prefetch(ids[k]) // the misses of the node's ids overlap
	}
	for k, f := range fields {
		x, scale := base+int32(l.offsets[f]), values[k]
		switch {
		case l.seqLen[f] > 0:
			p, keep := b.seqPos(f)
			if !keep {
				continue
			}
			x += int32(p * l.dims[l.fieldTable[f]])
		case l.pooling == Mean:
			scale /= b.count[f]
		}
		t := l.fieldTable[f]
		lb.feats = append(lb.feats, feat{row: b.dedup[t].Index(ids[k]), x: x, table: int32(t), scale: scale})
		if m := l.mirror[f]; m >= 0 { // the mirror field, pooled as its field is
			t := l.fieldTable[m]
			lb.feats = append(lb.feats, feat{row: b.dedup[t].Index(ids[k]), x: base + int32(l.offsets[m]), table: int32(t), scale: scale})
		}
	}
	if dw := l.denseW[level]; dw > 0 {
		lb.dense = growZero(lb.dense, dw)
		b.setSeqLens(level, lb.dense[node*dw:])
	}
	for _, f := range fields {
		b.count[f] = 0
	}
	lb.nodes++
	if level == 0 {
		b.N++
	}
	return node, nil
}

// SetDense copies the vector of dense field for node of level (overwriting
// an earlier one). The field must be a dense field of that level and values
// as long as its DenseWidth; otherwise it fails, changing nothing, with an
// error wrapping ErrUnknownField, ErrWrongLevel or ErrDenseWidth. A node out
// of range panics.
func (b *Batch) SetDense(level, node int, field uint32, values []float32) error {
	l := b.l
	switch {
	case int(field) >= len(l.fieldTable):
		return fmt.Errorf("%w: field %d, the model has %d", ErrUnknownField, field, len(l.fieldTable))
	case l.fieldTable[field] >= 0:
		return fmt.Errorf("%w: field %d is sparse, not dense", ErrUnknownField, field)
	case l.fieldLevel[field] != level:
		return fmt.Errorf("%w: field %d is of level %d, not %d", ErrWrongLevel, field, l.fieldLevel[field], level)
	case len(values) != l.denseWidth[field]:
		return fmt.Errorf("%w: field %d has width %d, got %d values", ErrDenseWidth, field, l.denseWidth[field], len(values))
	}
	lb := &b.levels[level]
	if node < 0 || node >= lb.nodes {
		panic(fmt.Sprintf("sparsenet: SetDense: node %d of level %d, which has %d", node, level, lb.nodes))
	}
	at := node*l.denseW[level] + l.denseOff[field]
	copy(lb.dense[at:at+len(values)], values)
	return nil
}

// PoolTree writes the input block of every level: xs[k] (Nodes(k) x
// (hi-lo) for LevelCols(k) = lo, hi, row-major; overwritten) from the pulled
// rows (rows[t] holds len(IDs(t))*Dim(t) values) and the dense vectors
// (zeros where a node has none). len(xs) must be Levels().
//
// Reference: xs[k][n, off(f)-lo:off(f)-lo+dim] = Σ_{features j of node n of level k in field f} v_j · rows[t][row_j].
func (b *Batch) PoolTree(rows [][]float32, xs [][]float32) {
	if len(xs) != len(b.levels) {
		panic(fmt.Sprintf("sparsenet: PoolTree: %d level inputs for %d levels", len(xs), len(b.levels)))
	}
	for k := range b.levels {
		b.poolLevel(k, rows, xs[k])
	}
}

// ScatterTree writes the gradient of each unique row (grads[t],
// len(IDs(t))*Dim(t), overwritten) from the gradients dxs[k] of the level
// inputs (shaped as in PoolTree), summing over the features of every node
// that used the row. Dense fields get no gradient.
//
// Reference: grads[t][row_j] += v_j · dxs[k][n_j, off(f_j)-lo:off(f_j)-lo+dim].
func (b *Batch) ScatterTree(dxs [][]float32, grads [][]float32) {
	if len(dxs) != len(b.levels) {
		panic(fmt.Sprintf("sparsenet: ScatterTree: %d level gradients for %d levels", len(dxs), len(b.levels)))
	}
	for t := range grads {
		clear(grads[t])
	}
	for k := range b.levels {
		b.scatterLevel(k, dxs[k], grads)
	}
}
