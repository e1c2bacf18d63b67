package sparsenet

import (
	"errors"
	"slices"
	"testing"
)

// seqLayout: field 0 a bag of level 0 (table 0, dim 2), field 1 a sequence
// of 3 positions at level 1 (table 0), field 2 a dense field of level 1
// (width 1), field 3 a bag of level 1 (table 1, dim 1).
func seqLayout(t *testing.T, pooling Pooling) *Layout {
	t.Helper()
	l, err := NewLayoutFields([]FieldSpec{
		{Table: 0}, {Table: 0, Level: 1, SeqLen: 3}, {Table: -1, Level: 1, DenseWidth: 1}, {Table: 1, Level: 1},
	}, []int{2, 1}, pooling)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestSequenceFieldLayout(t *testing.T) {
	l := seqLayout(t, Sum)
	if lo, hi := l.LevelCols(1); lo != 2 || hi != 2+3*2+1+1+1 {
		t.Fatalf("level 1 cols [%d, %d), want [2, 11)", lo, hi)
	}
	for f, want := range [][2]int{{0, 2}, {0, 7}, {7, 8}, {8, 9}} {
		if lo, hi := l.Cols(f); lo != want[0] || hi != want[1] {
			t.Errorf("Cols(%d) = [%d, %d), want %v", f, lo, hi, want)
		}
	}
	if l.SeqLen(1) != 3 || l.SeqLen(0) != 0 || l.SeqLen(2) != 0 {
		t.Errorf("SeqLen = %d %d %d, want 0 3 0", l.SeqLen(0), l.SeqLen(1), l.SeqLen(2))
	}
}

// TestSequenceFieldPool checks invariants 1-3 of sequence fields: the last
// SeqLen features in their positions, zeros after, the length column, no
// pooling under Mean, dropped ids never pulled, and the scatter's adjoint.
func TestSequenceFieldPool(t *testing.T) {
	for _, pooling := range []Pooling{Sum, Mean} {
		l := seqLayout(t, pooling)
		b := l.NewBatch()
		seq := []uint32{1, 1, 1, 3, 1, 1, 3}
		if _, err := b.AddNode(1, seq, []uint64{11, 12, 13, 50, 14, 15, 51}, []float32{1, 1, 1, 1, 2, 1, 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddNode(1, []uint32{1}, []uint64{13}, []float32{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddNode(1, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.SetDense(1, 0, 2, []float32{7}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := b.Add([]uint32{0}, []uint64{100}, []float32{1}); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := b.IDs(0), []uint64{13, 14, 15, 100}; !slices.Equal(got, want) {
			t.Fatalf("IDs(0) = %v, want %v (ids 11, 12 dropped, never pulled)", got, want)
		}
		rows := [][]float32{{1, 2, 3, 4, 5, 6, 9, 9}, {10, 20}} // 13, 14, 15, 100; 50, 51
		xs := [][]float32{make([]float32, 3*2), make([]float32, 3*9)}
		b.PoolTree(rows, xs)
		bag := float32(30)
		if pooling == Mean {
			bag = 15
		}
		want := []float32{
			1, 2, 6, 8, 5, 6, 3, 7, bag, // 13, 2x14, 15; length 3; dense 7; the bag 50+51
			1, 2, 0, 0, 0, 0, 1, 0, 0,
			0, 0, 0, 0, 0, 0, 0, 0, 0,
		}
		if !slices.Equal(xs[1], want) {
			t.Fatalf("%v: level 1 = %v, want %v", pooling, xs[1], want)
		}
		dx := [][]float32{make([]float32, 6), make([]float32, 27)}
		for i := range dx[1] {
			dx[1][i] = float32(i + 1)
		}
		grads := [][]float32{make([]float32, 8), make([]float32, 2)}
		b.ScatterTree(dx, grads)
		// 13: position 0 of node 0 (1, 2) + position 0 of node 1 (10, 11);
		// 14: 2 x position 1 (3, 4); 15: position 2 (5, 6).
		if want := []float32{11, 13, 6, 8, 5, 6, 0, 0}; !slices.Equal(grads[0], want) {
			t.Errorf("%v: grads = %v, want %v", pooling, grads[0], want)
		}
	}
}

func TestSequenceFieldRefused(t *testing.T) {
	for name, fields := range map[string][]FieldSpec{
		"dense":     {{Table: -1, DenseWidth: 2, SeqLen: 3}},
		"negative":  {{Table: 0, SeqLen: -1}},
		"too long":  {{Table: 0, SeqLen: MaxSeqLen + 1}},
		"mirror":    {{Table: 0}, {Table: 0, From: 1, SeqLen: 2}},
		"mirrored":  {{Table: 0, SeqLen: 2}, {Table: 0, From: 1}},
		"mirrored2": {{Table: 0, From: 2}, {Table: 0, SeqLen: 2}},
	} {
		if _, err := NewLayoutFields(fields, []int{2}, Sum); !errors.Is(err, ErrBadLayout) {
			t.Errorf("%s: err = %v, want ErrBadLayout", name, err)
		}
	}
}
