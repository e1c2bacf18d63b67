package reader

import (
	"slices"
	"testing"
)

func TestDatasetAppendSample(t *testing.T) {
	d := NewDataset()
	if d.Len() != 0 || len(d.Offsets) != 1 || d.NumFields != 0 {
		t.Fatalf("new dataset: %+v", d)
	}
	d.Append(1, []Feature{{0, 10, 1}, {4, 11, 0.5}})
	d.Append(0, nil)
	d.Append(1, []Feature{{2, 12, 2}})
	if d.Len() != 3 || d.NumFeatures() != 3 || d.NumFields != 5 {
		t.Fatalf("Len %d NumFeatures %d NumFields %d", d.Len(), d.NumFeatures(), d.NumFields)
	}
	if !slices.Equal(d.Offsets, []int64{0, 2, 2, 3}) {
		t.Fatalf("Offsets = %v", d.Offsets)
	}
	label, fields, ids, values := d.Sample(0)
	if label != 1 || !slices.Equal(fields, []uint32{0, 4}) || !slices.Equal(ids, []uint64{10, 11}) || !slices.Equal(values, []float32{1, 0.5}) {
		t.Errorf("Sample(0) = %v %v %v %v", label, fields, ids, values)
	}
	label, fields, ids, values = d.Sample(1)
	if label != 0 || len(fields) != 0 || len(ids) != 0 || len(values) != 0 {
		t.Errorf("Sample(1) = %v %v %v %v", label, fields, ids, values)
	}
	// Views are clipped: appending to one must not touch sample 2.
	_, fields, ids, values = d.Sample(0)
	_ = append(fields, 77)
	_ = append(ids, 77)
	_ = append(values, 77)
	if _, f, i, v := d.Sample(2); f[0] != 2 || i[0] != 12 || v[0] != 2 {
		t.Errorf("appending to a view changed sample 2: %v %v %v", f, i, v)
	}
}

func TestDatasetZeroValueAppend(t *testing.T) {
	var d Dataset
	d.Append(1, []Feature{{1, 2, 3}})
	if d.Len() != 1 || !slices.Equal(d.Offsets, []int64{0, 1}) {
		t.Fatalf("zero Dataset after Append: %+v", d)
	}
}
