package dslide

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/xdlgo/xps/sparsenet/slide"
)

// Save writes every owner's layer (slide.Layer.Save) in owner order, each
// after its length (8 bytes, little endian), so that Load can hand each
// owner exactly its part.
func (l *Layer) Save(w io.Writer) error {
	for o, ow := range l.owners {
		if err := binary.Write(w, binary.LittleEndian, ow.SaveSize()); err != nil {
			return fmt.Errorf("dslide: save owner %d: %w", o, err)
		}
		if err := ow.Save(w); err != nil {
			return fmt.Errorf("dslide: save owner %d: %w", o, err)
		}
	}
	return nil
}

// Load reads what Save wrote into the owners, each its part; a stream of
// another number or shape of owners, or cut short, is an error wrapping
// slide.ErrBadSave. After an error the owners' parameters are undefined.
func (l *Layer) Load(r io.Reader) error {
	for o, ow := range l.owners {
		var n int64
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return fmt.Errorf("%w: dslide: owner %d of %d: %w", slide.ErrBadSave, o, len(l.owners), err)
		}
		if n != ow.SaveSize() {
			return fmt.Errorf("%w: dslide: owner %d's part holds %d bytes, its layer saves %d (another partition?)",
				slide.ErrBadSave, o, n, ow.SaveSize())
		}
		if err := ow.Load(io.LimitReader(r, n)); err != nil {
			return fmt.Errorf("dslide: owner %d: %w", o, err)
		}
	}
	var b [1]byte
	if k, _ := r.Read(b[:]); k > 0 {
		return fmt.Errorf("%w: dslide: bytes after the last of %d owners (another partition?)", slide.ErrBadSave, len(l.owners))
	}
	return nil
}

// Rehash rebuilds every owner's tables from its weights.
func (l *Layer) Rehash() {
	for _, o := range l.owners {
		o.Rehash()
	}
}

// TuneInference tunes every owner's sparse inference on its own rows
// (slide.Layer.TuneInference), with each input's labels among those rows,
// in the owner's numbering (none when labels is nil). An input whose sparse top-1 is its dense
// top-1 at every owner has the merged sparse top-1 of the dense one, so
// the layer's agreement is at least 1 - Σ(1 - a_o) over the owners'
// agreements a_o: that bound is the result's Agreement (and
// TrainingAgreement); Met says every owner met its target, Params is owner
// 0's shape, Tried and Bytes are sums; the P@1 fields stay 0 (an owner's
// are over its own labels only).
func (l *Layer) TuneInference(x []float32, n int, labels [][]int32, o slide.InferTuneOptions) (slide.InferTune, error) {
	res := slide.InferTune{Inputs: n, Met: true, Agreement: 1, TrainingAgreement: 1}
	for i, ow := range l.owners {
		r, err := ow.TuneInference(x, n, l.ownLabels(i, labels), o)
		if err != nil {
			return slide.InferTune{}, fmt.Errorf("dslide: owner %d: %w", i, err)
		}
		if i == 0 {
			res.Params = r.Params
		}
		res.Agreement -= 1 - r.Agreement
		res.TrainingAgreement -= 1 - r.TrainingAgreement
		res.Met = res.Met && r.Met
		res.Separate = res.Separate || r.Separate
		res.Tried += r.Tried
		res.Bytes += r.Bytes
	}
	return res, nil
}

// ownLabels returns labels restricted to owner o's rows, numbered from its
// first row, or nil for nil.
func (l *Layer) ownLabels(o int, labels [][]int32) [][]int32 {
	if labels == nil {
		return nil
	}
	lo, hi := int32(l.part.Bounds[o]), int32(l.part.Bounds[o+1])
	out := make([][]int32, len(labels))
	for i, ls := range labels {
		for _, id := range ls {
			if id >= lo && id < hi {
				out[i] = append(out[i], id-lo)
			}
		}
	}
	return out
}

// Candidates appends to dst[:0] the rows (of the whole layer) that
// PredictSparse scores for input v: every owner's candidates; nil
// without tables.
func (l *Layer) Candidates(v []float32, dst []int32) []int32 {
	if !l.HasTables() {
		return nil
	}
	dst = dst[:0]
	var own []int32
	for o, ow := range l.owners {
		own = ow.Candidates(v, own)
		for _, id := range own {
			dst = append(dst, id+int32(l.part.Bounds[o]))
		}
	}
	return dst
}

// HasTables reports whether the owners hash (Sparsity or InferSparsity
// below 1).
func (l *Layer) HasTables() bool { return l.owners[0].Tables() != nil }

// ParamBytes returns the bytes of every owner's parameters and Adam
// state, TablesBytes of their hash tables.
func (l *Layer) ParamBytes() int64 {
	var b int64
	for _, o := range l.owners {
		b += o.ParamBytes()
	}
	return b
}

// TablesBytes: see ParamBytes.
func (l *Layer) TablesBytes() int64 {
	var b int64
	for _, o := range l.owners {
		b += o.TablesBytes()
	}
	return b
}
