package reader

import "slices"

// Feature is one sparse feature of a sample.
type Feature struct {
	// Field is the field (embedding group) the feature belongs to.
	Field uint32
	// ID is the hashed feature id, see FeatureID.
	ID uint64
	// Value scales the feature's embedding; 1 for one-hot features.
	Value float32
}

// Dataset is a columnar (CSR) store of samples. Its invariants are listed in
// the package documentation. Create one with NewDataset (Append also accepts a
// zero Dataset). A Dataset is not safe for concurrent mutation.
type Dataset struct {
	// Labels holds one label per sample, 0 or 1 when produced by a parser.
	Labels []float32
	// Offsets has Len()+1 entries; the features of sample i are the index
	// range [Offsets[i], Offsets[i+1]) of Fields, IDs and Values.
	Offsets []int64
	// Fields, IDs and Values are the parallel feature columns.
	Fields []uint32
	IDs    []uint64
	Values []float32
	// NumFields is 1 + the largest field seen (0 for no features).
	NumFields int
}

// NewDataset returns an empty Dataset.
func NewDataset() *Dataset {
	return &Dataset{Offsets: []int64{0}}
}

// Len returns the number of samples.
func (d *Dataset) Len() int { return len(d.Labels) }

// NumFeatures returns the total number of features of all samples.
func (d *Dataset) NumFeatures() int { return len(d.IDs) }

// Append adds one sample. The label is stored as given; feats is copied.
func (d *Dataset) Append(label float32, feats []Feature) {
	if len(d.Offsets) == 0 {
		d.Offsets = append(d.Offsets, 0)
	}
	d.Labels = append(d.Labels, label)
	d.Fields = slices.Grow(d.Fields, len(feats))
	d.IDs = slices.Grow(d.IDs, len(feats))
	d.Values = slices.Grow(d.Values, len(feats))
	for _, f := range feats {
		d.Fields = append(d.Fields, f.Field)
		d.IDs = append(d.IDs, f.ID)
		d.Values = append(d.Values, f.Value)
		if int(f.Field) >= d.NumFields {
			d.NumFields = int(f.Field) + 1
		}
	}
	d.Offsets = append(d.Offsets, int64(len(d.IDs)))
}

// Sample returns the label and the feature columns of sample i. The slices
// are views into d (no copy) with their capacity clipped to their length; they
// stay valid until d is next modified. Sample panics if i is out of range.
func (d *Dataset) Sample(i int) (label float32, fields []uint32, ids []uint64, values []float32) {
	lo, hi := d.Offsets[i], d.Offsets[i+1]
	return d.Labels[i], d.Fields[lo:hi:hi], d.IDs[lo:hi:hi], d.Values[lo:hi:hi]
}
