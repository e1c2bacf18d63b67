package sparsenet

import "fmt"

// checkSeq reports why field f's SeqLen is not allowed, if it is not.
func checkSeq(fields []FieldSpec, f int) error {
	s := fields[f]
	switch {
	case s.SeqLen < 0 || s.SeqLen > MaxSeqLen:
		return fmt.Errorf("%w: field %d has sequence length %d, outside [0, %d]", ErrBadLayout, f, s.SeqLen, MaxSeqLen)
	case s.SeqLen == 0:
		return nil
	case s.Table < 0:
		return fmt.Errorf("%w: dense field %d cannot be a sequence field", ErrBadLayout, f)
	case s.From > 0:
		return fmt.Errorf("%w: mirror field %d cannot be a sequence field", ErrBadLayout, f)
	}
	for g, o := range fields {
		if o.From-1 == f {
			return fmt.Errorf("%w: field %d mirrors sequence field %d", ErrBadLayout, g, f)
		}
	}
	return nil
}

// addSeq places sequence field f of level k, seqLen positions of dim
// columns then its length column, at the layout's current width, and
// returns its width.
func (l *Layout) addSeq(f, k, seqLen, dim int) int {
	l.seqLen[f], l.seqLenOff[f] = seqLen, l.denseW[k]
	l.levelSeq[k] = append(l.levelSeq[k], f)
	l.levelDense[k] = append(l.levelDense[k], denseSlot{col: l.width + seqLen*dim - l.levelCols[k], off: l.denseW[k], width: 1})
	l.denseW[k]++
	return seqLen*dim + 1
}

// SeqLen returns the number of positions of sequence field f, or 0 for a
// bag field or a dense one.
func (l *Layout) SeqLen(f int) int { return l.seqLen[f] }

// Cols returns the columns [lo, hi) of field f within its level's block
// (a node's input row): its pooled row, its dense vector, or a sequence
// field's positions and length column.
func (l *Layout) Cols(f int) (lo, hi int) {
	lo = l.offsets[f] - l.levelCols[l.fieldLevel[f]]
	switch {
	case l.seqLen[f] > 0:
		return lo, lo + l.seqLen[f]*l.dims[l.fieldTable[f]] + 1
	case l.fieldTable[f] < 0:
		return lo, lo + l.denseWidth[f]
	}
	return lo, lo + l.dims[l.fieldTable[f]]
}

// seqPos returns the position of the next feature of sequence field f in
// the node being added (b.count[f] holds the node's number of features of
// f), and whether it is kept: only the last SeqLen are.
func (b *Batch) seqPos(f uint32) (int, bool) {
	j := int(b.seen[f])
	b.seen[f]++
	drop := int(b.count[f]) - b.l.seqLen[f]
	if j < drop {
		return 0, false
	}
	return j - max(drop, 0), true
}

// setSeqLens writes the kept length of every sequence field of level into
// the node's dense buffer dense, and resets the per-field counters of
// seqPos.
func (b *Batch) setSeqLens(level int, dense []float32) {
	for _, f := range b.l.levelSeq[level] {
		dense[b.l.seqLenOff[f]] = float32(min(int(b.count[f]), b.l.seqLen[f]))
		b.seen[f] = 0
	}
}
