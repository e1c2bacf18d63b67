package sparsenet

import (
	"errors"
	"testing"
)

// TestMirrorFields: a mirror field pools the features of its field into
// its own table (a wide model's dim-1 weights), in its own columns at
// the end of its level's block, with the field's values (and mean
// scaling); its gradient goes to its table's rows. A batch refuses
// features of a mirror field, and a layout refuses a bad mirror.
func TestMirrorFields(t *testing.T) {
	fields := []FieldSpec{{Table: 0}, {Table: 0, Level: 1}, {Table: 1, From: 1}, {Table: 1, Level: 1, From: 2}}
	for _, pooling := range []Pooling{Sum, Mean} {
		l, err := NewLayoutFields(fields, []int{2, 1}, pooling)
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := l.LevelCols(0); lo != 0 || hi != 3 || l.Mirror(0) != 2 || l.MirrorOf(3) != 1 || l.MirrorOf(0) != -1 {
			t.Fatalf("level 0 cols [%d, %d), mirror of 0: %d, 3 mirrors %d", lo, hi, l.Mirror(0), l.MirrorOf(3))
		}
		b := l.NewBatch()
		if _, err := b.AddNode(1, []uint32{1}, []uint64{7}, []float32{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddNode(0, []uint32{0, 0}, []uint64{5, 6}, []float32{1, 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddNode(0, []uint32{2}, []uint64{5}, []float32{1}); !errors.Is(err, ErrUnknownField) {
			t.Fatalf("a feature of a mirror field: %v", err)
		}
		// Table 0 rows: id 5 -> (1, 2), 6 -> (10, 20), 7 -> (100, 200);
		// table 1 (dim 1): 5 -> 0.5, 6 -> 0.25, 7 -> 4.
		emb := map[uint64][]float32{5: {1, 2}, 6: {10, 20}, 7: {100, 200}}
		wide := map[uint64]float32{5: 0.5, 6: 0.25, 7: 4}
		rows := make([][]float32, 2)
		for _, id := range b.IDs(0) {
			rows[0] = append(rows[0], emb[id]...)
		}
		for _, id := range b.IDs(1) {
			rows[1] = append(rows[1], wide[id])
		}
		xs := [][]float32{make([]float32, 3), make([]float32, 3)}
		b.PoolTree(rows, xs)
		want0 := []float32{31, 62, 1.25} // 1*(1,2) + 3*(10,20); 1*0.5 + 3*0.25
		if pooling == Mean {
			want0 = []float32{31.0 / 2, 62.0 / 2, 1.25 / 2} // a weighted mean over the bag of 2
		}
		want1 := []float32{100, 200, 4}
		for j := range 3 {
			if xs[0][j] != want0[j] || xs[1][j] != want1[j] {
				t.Fatalf("%v: pooled %v %v, want %v %v", pooling, xs[0], xs[1], want0, want1)
			}
		}
		dxs := [][]float32{{0, 0, 2}, {0, 0, 5}}
		grads := [][]float32{make([]float32, 2*len(b.IDs(0))), make([]float32, len(b.IDs(1)))}
		b.ScatterTree(dxs, grads)
		scale := float32(1)
		if pooling == Mean {
			scale = 0.5
		}
		for i, id := range b.IDs(1) {
			want := map[uint64]float32{5: 2 * scale, 6: 6 * scale, 7: 5}[id]
			if grads[1][i] != want {
				t.Fatalf("%v: wide gradient of id %d: %v, want %v", pooling, id, grads[1][i], want)
			}
		}
	}
	for _, bad := range [][]FieldSpec{
		{{Table: 0}, {Table: 1, Level: 1, From: 1}},            // another level
		{{Table: -1, DenseWidth: 2}, {Table: 1, From: 1}},      // a dense field
		{{Table: 0}, {Table: 1, From: 1}, {Table: 1, From: 1}}, // two mirrors
		{{Table: 0}, {Table: 1, From: 1}, {Table: 1, From: 2}}, // a mirror's mirror
	} {
		if _, err := NewLayoutFields(bad, []int{2, 1}, Sum); !errors.Is(err, ErrBadLayout) {
			t.Errorf("layout %+v: %v, want ErrBadLayout", bad, err)
		}
	}
}
