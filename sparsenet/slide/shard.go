package slide

import (
	"fmt"
	"math"

	"github.com/xdlgo/xps/densenet"
)

// A sharded layer (D-SLIDE) splits the neurons of one softmax layer of
// Total neurons between owners: owner o holds the contiguous rows
// [FirstRow, FirstRow+Dim) as a Layer of its own, with its own hash
// tables over its rows. A training step is then two halves on every
// owner with one exchange of small per-sample numbers between them:
//
//  1. ShardForward: the owner selects each sample's active set among its
//     rows (the sample's labels that fall in its share first, then its
//     hashed candidates, then random fill, to round(Sparsity*Dim)),
//     computes the logits and keeps them, and writes per sample a
//     Partial: the largest logit m_o, Σ exp(z_j − m_o), and its labels'
//     count and logit sum.
//  2. Combine, anywhere, merges every owner's Partials into one Global
//     per sample: M = max_o m_o, S = Σ_o S_o·exp(m_o − M), the labels'
//     count and logit sum; the sample's loss is log S + M − (label logit
//     sum)/labels.
//  3. ShardBackward: with the Globals, each owner turns its kept logits
//     into p_j − y_j = exp(z_j − M)/S − y_j (y_j = 1/labels on a label),
//     writes its part of dLoss/dx (the sum of every owner's part is the
//     whole) and applies Adam to its active rows.
//
// With the active sets of the owners making up one layer's active set,
// the loss, the gradients and the updates are those of that one layer
// (up to float rounding): the softmax's denominator is a sum, and every
// other quantity belongs to one row. The owners' random choices differ
// from one layer's (they draw from their own Seed), so with Sparsity < 1
// the sets are not the same sets, only sets of the same kind.

// Partial is one owner's part of one sample's softmax over its active
// rows A (see ShardForward).
type Partial struct {
	// Max is max_{j∈A} z_j, or -Inf when A is empty.
	Max float32
	// Sum is Σ_{j∈A} exp(z_j − Max), 0 when A is empty.
	Sum float64
	// Labels is the number of the sample's distinct labels this owner
	// holds, and LabelLogits the sum of their logits.
	Labels      int32
	LabelLogits float64
}

// Global is one sample's softmax over every owner's active rows: the
// largest logit, Σ exp(z_j − Max) and the sample's distinct labels.
type Global struct {
	Max    float32
	Sum    float64
	Labels int32
}

// Combine merges the owners' Partials (parts[o][i]: owner o's of sample i)
// into glob (one per sample) and returns the mean loss over the samples
// with labels and their number. A sample without labels gets a zero
// Global and no loss.
func Combine(parts [][]Partial, glob []Global) (loss float64, withLabels int) {
	for i := range glob {
		g := Global{Max: float32(math.Inf(-1))}
		var ll float64
		for _, p := range parts {
			g.Max = max(g.Max, p[i].Max)
			g.Labels += p[i].Labels
			ll += p[i].LabelLogits
		}
		if g.Labels == 0 {
			glob[i] = Global{}
			continue
		}
		for _, p := range parts {
			if p[i].Sum > 0 {
				g.Sum += p[i].Sum * math.Exp(float64(p[i].Max-g.Max))
			}
		}
		glob[i] = g
		loss += math.Log(g.Sum) + float64(g.Max) - ll/float64(g.Labels)
		withLabels++
	}
	if withLabels > 0 {
		loss /= float64(withLabels)
	}
	return loss, withLabels
}

// shardKept is what ShardForward keeps of one goroutine's samples for
// ShardBackward: the active rows and logits of its samples, flat, and per
// sample its first entry and its labels' count in this share (the
// sample's first nl active rows).
type shardKept struct {
	act   []int32
	z     []float32
	start []int32 // per sample of the span, then the end
	nl    []int32
	local []int32 // scratch: one sample's labels in this share
}

// ShardForward is the first half of a training step of one owner of a
// sharded layer (see the package documentation's D-SLIDE part above
// Partial): labels[i] are sample i's labels as row numbers of the whole
// layer (those in [FirstRow, FirstRow+Dim) are this owner's). A sample
// with labels (anywhere) gets its active set among this owner's rows and
// its logits, kept for ShardBackward, and part[i]; a sample without gets
// an empty Partial. A negative label is an error (wrapping ErrBadLabel)
// and changes nothing; labels past this share are other owners'. It
// panics on wrong lengths.
func (l *Layer) ShardForward(x []float32, n int, labels [][]int32, part []Partial) error {
	if l.closed {
		return ErrClosed
	}
	if n < 0 || len(x) != n*l.din || len(labels) != n || len(part) != n {
		panic(fmt.Sprintf("slide: ShardForward: n %d, len(x) %d, len(labels) %d, len(part) %d for InputDim %d",
			n, len(x), len(labels), len(part), l.din))
	}
	for i, ls := range labels {
		for _, v := range ls {
			if v < 0 {
				return fmt.Errorf("%w: sample %d has label %d", ErrBadLabel, i, v)
			}
		}
	}
	if l.tables != nil {
		l.hashInputs(x, n)
	}
	l.pool.run(func(q int) { l.shardForward(q, x, n, labels, part) })
	return nil
}

// shardForward is ShardForward on goroutine q's samples.
func (l *Layer) shardForward(q int, x []float32, n int, labels [][]int32, part []Partial) {
	w := l.ws[q]
	if w.sel == nil {
		L := 0
		if l.tables != nil {
			L = l.par.L
		}
		w.sel = newSelector(l.d, L)
	}
	k := &w.kept
	k.act, k.z, k.start, k.nl = k.act[:0], k.z[:0], k.start[:0], k.nl[:0]
	w.moves, w.moveCodes = w.moves[:0], w.moveCodes[:0]
	din, first := l.din, int32(l.cfg.FirstRow)
	target := int(math.Round(l.cfg.Sparsity * float64(l.d)))
	lo, hi := span(q, len(l.ws), n)
	for i := lo; i < hi; i++ {
		k.start = append(k.start, int32(len(k.act)))
		part[i] = Partial{Max: float32(math.Inf(-1))}
		if len(labels[i]) == 0 {
			k.nl = append(k.nl, 0)
			continue
		}
		k.local = k.local[:0]
		for _, v := range labels[i] {
			if v >= first && v-first < int32(l.d) {
				k.local = append(k.local, v-first)
			}
		}
		act, nl := l.activeSet(w, i, k.local, target)
		k.nl = append(k.nl, int32(nl))
		xi := x[i*din : (i+1)*din]
		p := &part[i]
		for j, id := range act {
			if j+prefetchAhead < len(act) {
				l.prefetchForward(act[j+prefetchAhead])
			}
			o := int(id) * din
			z := densenet.Dot(l.w[o:o+din], xi) + l.b[id]
			k.act, k.z = append(k.act, id), append(k.z, z)
			p.Max = max(p.Max, z)
			if j < nl {
				p.LabelLogits += float64(z)
			}
		}
		p.Labels = int32(nl)
		for _, z := range k.z[k.start[len(k.start)-1]:] {
			p.Sum += float64(exp32(z - p.Max))
		}
	}
	k.start = append(k.start, int32(len(k.act)))
}

// ShardBackward is the second half of the training step that the last
// ShardForward began, on the same x and n: glob holds every sample's
// Global (Combine over every owner's Partials) and withLabels the number
// of samples with labels (Combine's second result). It writes to dx,
// unless it is nil, this owner's part of the gradient of the mean loss
// with respect to x (n x InputDim; the whole gradient is the sum of the
// owners' parts), computed with the weights before the update, and
// applies Adam to every row active for some sample, as TrainBatch does.
// It panics on wrong lengths.
func (l *Layer) ShardBackward(x []float32, n int, glob []Global, withLabels int, dx []float32) {
	l.checkOpen()
	if n < 0 || len(x) != n*l.din || len(glob) != n || (dx != nil && len(dx) != n*l.din) {
		panic(fmt.Sprintf("slide: ShardBackward: n %d, len(x) %d, len(glob) %d, len(dx) %d for InputDim %d",
			n, len(x), len(glob), len(dx), l.din))
	}
	if withLabels > 0 {
		scale := float32(1 / float64(withLabels))
		l.pool.run(func(q int) { l.shardBackward(q, x, n, glob, dx, scale) })
		l.pool.run(func(q int) { l.ownedGradients(q, x, l.adamRow) })
		if l.cfg.InsertLabels {
			l.pool.run(l.moveLabels)
		}
	} else {
		clear(dx)
	}
	l.batch++
}

// shardBackward is ShardBackward on goroutine q's samples: the gradient
// of each kept logit, dx and the (row, sample, delta) contributions for
// ownedGradients.
func (l *Layer) shardBackward(q int, x []float32, n int, glob []Global, dx []float32, scale float32) {
	w := l.ws[q]
	for o := range w.out {
		w.out[o] = w.out[o][:0]
	}
	k := &w.kept
	din, P := l.din, int32(len(l.ws))
	lo, hi := span(q, len(l.ws), n)
	for i := lo; i < hi; i++ {
		var dxi []float32
		if dx != nil {
			dxi = dx[i*din : (i+1)*din]
			clear(dxi)
		}
		s, e := k.start[i-lo], k.start[i-lo+1]
		g := glob[i]
		if s == e || g.Labels == 0 {
			continue
		}
		inv, y := float32(1/g.Sum), 1/float32(g.Labels)
		nl := k.nl[i-lo]
		for j, id := range k.act[s:e] {
			p := exp32(k.z[int(s)+j]-g.Max) * inv
			if int32(j) < nl {
				p -= y
			}
			delta := p * scale
			if dxi != nil {
				o := int(id) * din
				densenet.Axpy(dxi, delta, l.w[o:o+din])
			}
			w.out[id%P] = append(w.out[id%P], contrib{row: id, sample: int32(i), delta: delta})
		}
	}
}

// KeptActive returns the number of (sample, row) pairs the last
// ShardForward made active: this owner's share of the step's work, which
// a sharded layer keeps balanced between owners.
func (l *Layer) KeptActive() int {
	n := 0
	for _, w := range l.ws {
		n += len(w.kept.act)
	}
	return n
}

// KeptLogits writes to dst (n x Dim, n the samples of the last
// ShardForward) the logits it kept, each at its row; a row not active for
// a sample gets -Inf. It is what dense model parallelism sends from an
// owner for every sample (at Sparsity 1 every row is active).
func (l *Layer) KeptLogits(n int, dst []float32) {
	l.checkOpen()
	if len(dst) != n*l.d {
		panic(fmt.Sprintf("slide: KeptLogits: len(dst) %d for n %d, Dim %d", len(dst), n, l.d))
	}
	inf := float32(math.Inf(-1))
	for i := range dst {
		dst[i] = inf
	}
	for q, w := range l.ws {
		k := &w.kept
		lo, hi := span(q, len(l.ws), n)
		if len(k.start) != hi-lo+1 {
			continue // a goroutine with no samples of this forward
		}
		for i := lo; i < hi; i++ {
			s, e := k.start[i-lo], k.start[i-lo+1]
			row := dst[i*l.d : (i+1)*l.d]
			for j, id := range k.act[s:e] {
				row[id] = k.z[int(s)+j]
			}
		}
	}
}
