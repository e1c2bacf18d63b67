package dslide

import (
	"errors"
	"fmt"
	"math"

	"github.com/xdlgo/xps/sparsenet/slide"
)

// Partition is the owners' shares of Total rows: owner o holds rows
// [Bounds[o], Bounds[o+1]).
type Partition struct {
	Bounds []int
}

// Even splits total rows into owners contiguous shares whose sizes differ
// by at most one (the larger first). It fails unless 1 <= owners <= total.
func Even(total, owners int) (Partition, error) {
	if owners < 1 || owners > total {
		return Partition{}, fmt.Errorf("dslide: %d owners for %d rows: want 1 to %d", owners, total, max(total, 1))
	}
	b := make([]int, owners+1)
	for o := 1; o <= owners; o++ {
		b[o] = b[o-1] + total/owners
		if o <= total%owners {
			b[o]++
		}
	}
	return Partition{Bounds: b}, nil
}

// Owners returns the number of owners, Total the number of rows.
func (p Partition) Owners() int { return len(p.Bounds) - 1 }

// Total returns the number of rows of the whole layer.
func (p Partition) Total() int { return p.Bounds[len(p.Bounds)-1] }

// Rows returns the number of rows owner o holds.
func (p Partition) Rows(o int) int { return p.Bounds[o+1] - p.Bounds[o] }

// Config returns owner o's layer configuration: base (the whole layer's,
// Dim = Total) with Dim its rows and FirstRow its first.
func (p Partition) Config(base slide.Config, o int) slide.Config {
	base.Dim, base.FirstRow = p.Rows(o), p.Bounds[o]
	return base
}

// Layer is a sharded SLIDE layer whose owners live in this process. Its
// TrainBatch has slide.Layer's meaning; Close releases the owners.
type Layer struct {
	part   Partition
	owners []*slide.Layer
	parts  [][]slide.Partial
	glob   []slide.Global
	dxo    []float32
	top    []int32
	topS   []float32
	pos    []int // mergeTop's scratch
	active []int // balance's scratch
	stats  Stats
}

// Stats are the balance figures of the steps a Layer trained: per step,
// the largest owner's active (sample, row) pairs over the owners' mean.
type Stats struct {
	Steps int
	// MaxImbalance is the largest such ratio of any step, MeanImbalance
	// their mean (1 is perfect balance).
	MaxImbalance, MeanImbalance float64
}

// New builds a layer of base.Dim rows split evenly between owners, each
// owner's slide.Layer configured as Partition.Config says (tables tuned
// to its share: Tune sees its own rows).
func New(base slide.Config, owners int) (*Layer, error) {
	part, err := Even(base.Dim, owners)
	if err != nil {
		return nil, err
	}
	l := &Layer{part: part, owners: make([]*slide.Layer, owners), parts: make([][]slide.Partial, owners)}
	for o := range l.owners {
		if l.owners[o], err = slide.New(part.Config(base, o)); err != nil {
			l.Close()
			return nil, fmt.Errorf("dslide: owner %d: %w", o, err)
		}
	}
	return l, nil
}

// Close closes every owner.
func (l *Layer) Close() error {
	var errs []error
	for _, o := range l.owners {
		if o != nil {
			errs = append(errs, o.Close())
		}
	}
	return errors.Join(errs...)
}

// Partition returns the owners' shares.
func (l *Layer) Partition() Partition { return l.part }

// Owner returns owner o's layer.
func (l *Layer) Owner(o int) *slide.Layer { return l.owners[o] }

// Stats returns the balance figures of the steps so far.
func (l *Layer) Stats() Stats { return l.stats }

// TrainBatch trains one step on n samples (x: n x InputDim activations,
// labels[i] sample i's labels in [0, Total)), the package's step 1 to 5,
// and returns the mean loss over the samples with labels; dx, unless nil,
// gets the gradient of that loss with respect to x. A label out of range
// is an error (wrapping slide.ErrBadLabel) and changes nothing.
func (l *Layer) TrainBatch(x []float32, n int, labels [][]int32, dx []float32) (float64, error) {
	if err := checkLabels(labels, l.part.Total()); err != nil {
		return 0, err
	}
	for o, ow := range l.owners {
		if cap(l.parts[o]) < n {
			l.parts[o] = make([]slide.Partial, n)
		}
		l.parts[o] = l.parts[o][:n]
		if err := ow.ShardForward(x, n, labels, l.parts[o]); err != nil {
			return 0, fmt.Errorf("dslide: owner %d: %w", o, err)
		}
	}
	l.balance()
	if cap(l.glob) < n {
		l.glob = make([]slide.Global, n)
	}
	glob := l.glob[:n]
	loss, withLabels := slide.Combine(l.parts, glob)
	var part []float32
	if dx != nil {
		clear(dx)
		if cap(l.dxo) < len(dx) {
			l.dxo = make([]float32, len(dx))
		}
		part = l.dxo[:len(dx)]
	}
	for _, ow := range l.owners {
		ow.ShardBackward(x, n, glob, withLabels, part)
		for i, v := range part {
			dx[i] += v
		}
	}
	return loss, nil
}

// checkLabels returns an error wrapping slide.ErrBadLabel for the first
// label outside [0, total), nil when there is none.
func checkLabels(labels [][]int32, total int) error {
	for i, ls := range labels {
		for _, v := range ls {
			if v < 0 || int(v) >= total {
				return fmt.Errorf("%w: sample %d has label %d, want [0, %d)", slide.ErrBadLabel, i, v, total)
			}
		}
	}
	return nil
}

// balance records the step's active pairs per owner.
func (l *Layer) balance() {
	l.active = grow(l.active, len(l.owners))
	for o, ow := range l.owners {
		l.active[o] = ow.KeptActive()
	}
	l.stats.add(l.active)
}

// add records a step whose owners made active[o] (sample, row) pairs
// active.
func (s *Stats) add(active []int) {
	var sum, most int
	for _, a := range active {
		sum += a
		most = max(most, a)
	}
	if sum == 0 {
		return
	}
	r := float64(most) / (float64(sum) / float64(len(active)))
	s.MeanImbalance = (s.MeanImbalance*float64(s.Steps) + r) / float64(s.Steps+1)
	s.MaxImbalance = max(s.MaxImbalance, r)
	s.Steps++
}

// Maintain runs every owner's hash-table upkeep (once per batch, as
// slide.Layer.Maintain).
func (l *Layer) Maintain() {
	for _, o := range l.owners {
		o.Maintain()
	}
}

// PredictDense and PredictSparse write to out (n x k) the k best rows of
// the whole layer for each input, as slide.Layer's do: every owner
// predicts its own top k (all its rows, or its LSH candidates), and the
// lists are merged by score, ties to the lower row.
func (l *Layer) PredictDense(x []float32, n, k int, out []int32) {
	l.predict(x, n, k, out, (*slide.Layer).PredictDense)
}

// PredictSparse: see PredictDense.
func (l *Layer) PredictSparse(x []float32, n, k int, out []int32) {
	l.predict(x, n, k, out, (*slide.Layer).PredictSparse)
}

func (l *Layer) predict(x []float32, n, k int, out []int32, f func(*slide.Layer, []float32, int, int, []int32)) {
	W := len(l.owners)
	if len(out) != n*k {
		panic(fmt.Sprintf("dslide: predict: len(out) %d for n %d, k %d", len(out), n, k))
	}
	if cap(l.top) < W*n*k {
		l.top, l.topS = make([]int32, W*n*k), make([]float32, W*n*k)
	}
	ids, sc := l.top[:W*n*k], l.topS[:W*n*k]
	if len(l.pos) != W {
		l.pos = make([]int, W)
	}
	for o, ow := range l.owners {
		f(ow, x, n, k, ids[o*n*k:(o+1)*n*k])
		ow.TopScores(n, k, sc[o*n*k:(o+1)*n*k])
	}
	mergeAll(l.part, ids, sc, n, k, out, l.pos)
}

// mergeAll writes to out (n x k) every sample's merge of the owners'
// lists (mergeTop; ids and sc owner-major, pos scratch).
func mergeAll(p Partition, ids []int32, sc []float32, n, k int, out []int32, pos []int) {
	for i := 0; i < n; i++ {
		row := out[i*k : (i+1)*k]
		for j := range row {
			row[j] = -1
		}
		mergeTop(p, ids, sc, n, k, i, row, pos)
	}
}

// mergeTop writes to row the k best of the owners' lists for sample i:
// owner o's list is ids/sc[(o*n+i)*k:][:k], its rows local; pos (one
// per owner) is scratch.
func mergeTop(p Partition, ids []int32, sc []float32, n, k, i int, row []int32, pos []int) {
	W := p.Owners()
	clear(pos) // the next entry of each owner's list
	for j := range row {
		bo, bs, bid := -1, float32(math.Inf(-1)), int32(-1)
		for o := 0; o < W; o++ {
			if pos[o] >= k {
				continue
			}
			e := (o*n+i)*k + pos[o]
			if ids[e] < 0 {
				continue
			}
			g := ids[e] + int32(p.Bounds[o])
			if bo < 0 || sc[e] > bs || (sc[e] == bs && g < bid) {
				bo, bs, bid = o, sc[e], g
			}
		}
		if bo < 0 {
			return
		}
		row[j] = bid
		pos[bo]++
	}
}
