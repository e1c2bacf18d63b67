package slide

import (
	"fmt"
	"math"

	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/model/optim"
	"github.com/xdlgo/xps/model/prefetch"
)

// Stream tags of the per-sample random number generators.
const (
	tagInit  = 0x1417
	tagTrain = 0x7a41
	tagInfer = 0x1f3e
	tagHash  = 0x4a54
	tagTable = 0x7ab1
)

// Layer is a softmax output layer of Dim neurons over inputs of InputDim
// activations, trained with LSH-sampled active sets (see the package
// documentation). Its methods must not be called concurrently; each runs on
// the layer's Threads goroutines and returns when they are done.
type Layer struct {
	cfg    Config
	par    Params
	d, din int

	// Parameters and Adam state, all flat: row r of W is
	// w[r*din:(r+1)*din], its Adam state (m, v, t, see optim.Adam)
	// st[r*(2*din+1):(r+1)*(2*din+1)]; the bias moments are mb[r], vb[r];
	// steps[r] counts the updates of row r.
	w, b   []float32
	st     []float32
	mb, vb []float32
	steps  []uint32
	opt    optim.Adam
	lrT    []float32 // Adam's bias-corrected step for t = 1..len(lrT) (bias)

	// Hashing (nil without tables). hashedAt[r] is steps[r] when row r was
	// last inserted into tables.
	fam      Family
	tables   *Tables
	hashedAt []uint32
	sched    schedule
	gen      uint64
	// The redraw in progress: new functions and the tables being built.
	backFam Family
	back    *Tables
	backAt  []uint32
	mcodes  []uint32
	mrows   []int32
	mrowbuf []float32 // rows gathered for a BatchHasher
	center  []float32 // subtracted from rows before hashing (nil: NoCenter)
	icodes  []uint32  // the codes of a batch's inputs (n x L)

	// Sparse inference's own tables, when TuneInference built them, and
	// the shape it chose last.
	infer     *inferIndex
	lastInfer Params

	pool  *pool
	ws    []*worker
	batch uint64

	dense denseScratch
	top   topScratch

	closed bool
}

// worker is the per-goroutine state of a training or inference pass.
type worker struct {
	sel       *selector
	active    []int32
	missed    []int32
	z         []float32
	out       [][]contrib // phase 1: this worker's contributions, by owner
	moves     []int32     // labels to move into the buckets of their sample
	moveCodes []uint32
	hrow      []float32 // a centred row to hash
	loss      float64
	own       ownerScratch // phase 2: the rows this worker owns
	kept      shardKept    // ShardForward's active sets, for ShardBackward
}

// contrib is one active (row, sample) pair of a batch: the row's weight
// gradient gets delta*x_sample and its bias gradient delta.
type contrib struct {
	row, sample int32
	delta       float32
}

// ownerScratch groups the contributions to the rows of one owner by row
// (a counting sort: slot[row] is the row's index in rows, or -1).
type ownerScratch struct {
	slot []int32
	rows []int32
	end  []int32 // per row: count, then start, then end offset in flat
	flat []contrib
	g    []float32 // one row's weight gradient
}

// New returns a layer with normal random weights (standard deviation
// InitStd), zero biases and, when Sparsity or InferSparsity is below 1,
// hash tables over the initial weights. Close releases its goroutines.
func New(cfg Config) (*Layer, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d, din := cfg.Dim, cfg.InputDim
	l := &Layer{cfg: cfg, d: d, din: din,
		w: make([]float32, d*din), b: make([]float32, d),
		st: make([]float32, d*(2*din+1)),
		mb: make([]float32, d), vb: make([]float32, d),
		steps: make([]uint32, d),
		opt:   optim.Adam{LR: cfg.LearningRate, Beta1: cfg.Beta1, Beta2: cfg.Beta2, Eps: cfg.Epsilon},
	}
	l.lrT = adamSteps(cfg.LearningRate, cfg.Beta1, cfg.Beta2)
	if cfg.hasTables() {
		l.par = cfg.params()
		var err error
		if l.fam, err = l.newFamily(0); err != nil {
			return nil, err
		}
		if l.tables, err = NewTables(d, l.par.K, l.par.L, l.par.R, hash3(cfg.Seed, tagTable, 0)); err != nil {
			return nil, err
		}
		l.hashedAt = make([]uint32, d)
		l.sched = newSchedule(cfg.Schedule, d)
	}
	l.pool = newPool(cfg.Threads)
	l.ws = make([]*worker, cfg.Threads)
	for q := range l.ws {
		w := &worker{out: make([][]contrib, cfg.Threads)}
		w.own.slot = make([]int32, d)
		for i := range w.own.slot {
			w.own.slot[i] = -1
		}
		w.own.g = make([]float32, din)
		if l.tables != nil {
			w.sel = newSelector(d, l.par.L)
		}
		l.ws[q] = w
	}
	l.pool.run(func(q int) {
		lo, hi := span(q, cfg.Threads, d)
		for row := lo; row < hi; row++ {
			r := newRNG(cfg.Seed, tagInit, uint64(cfg.FirstRow+row))
			for i := row * din; i < (row+1)*din; i++ {
				l.w[i] = float32(r.normal()) * cfg.InitStd
			}
		}
	})
	if l.tables != nil {
		if !cfg.NoCenter {
			l.center = make([]float32, din)
			l.updateCenter()
		}
		l.forSlices(func(int) bool { return true }, func(rows []int32) {
			l.insertRows(l.tables, l.fam, l.hashedAt, rows)
		})
	}
	return l, nil
}

// newFamily draws the hash functions of generation gen.
func (l *Layer) newFamily(gen uint64) (Family, error) {
	c := &l.cfg
	return newFamily(c.Family, l.din, l.par.K, l.par.L, c.SimHashDensity, c.DWTABinSize, hash3(c.Seed, tagHash, gen))
}

// Close stops the layer's goroutines. Later calls of TrainBatch return
// ErrClosed and the other methods panic. Close is idempotent.
func (l *Layer) Close() error {
	if !l.closed {
		l.closed = true
		l.pool.close()
	}
	return nil
}

// Config returns the layer's config, defaults filled in.
func (l *Layer) Config() Config { return l.cfg }

// Params returns the table shape in use (zero without tables).
func (l *Layer) Params() Params { return l.par }

// Weights returns W, Dim x InputDim row-major (a view: the layer updates it).
func (l *Layer) Weights() []float32 { return l.w }

// Bias returns b (a view).
func (l *Layer) Bias() []float32 { return l.b }

// ParamBytes is the memory of the parameters and their optimizer state
// (weights, biases, Adam moments and step counts, hashed-at counts).
func (l *Layer) ParamBytes() int64 {
	return 4 * int64(len(l.w)+len(l.b)+len(l.st)+len(l.mb)+len(l.vb)+len(l.steps)+len(l.hashedAt))
}

// Steps returns how many times row r has been updated.
func (l *Layer) Steps(r int) int { return int(l.steps[r]) }

// Tables returns the hash tables in use, or nil (a view, valid until the
// next TrainBatch or Maintain).
func (l *Layer) Tables() *Tables { return l.tables }

// TablesBytes returns the bytes of the hash tables, 0 without tables.
func (l *Layer) TablesBytes() int64 {
	if l.tables == nil {
		return 0
	}
	b := l.tables.Bytes()
	if l.infer != nil {
		b += l.infer.bytes()
	}
	return b
}

// Family returns the hash functions in use, or nil.
func (l *Layer) Family() Family { return l.fam }

func (l *Layer) checkOpen() {
	if l.closed {
		panic("slide: Layer used after Close")
	}
}

// TrainBatch trains on one batch: x holds n input rows of InputDim
// activations, labels[i] the true labels of sample i (each in [0, Dim);
// repeats count once). For each sample with labels it computes the softmax
// over its active set, the cross-entropy against the uniform distribution on
// its labels, and the gradients; then it applies Adam to every row that was
// active. It returns the mean loss over the samples with labels and, when
// dx is not nil, writes to dx (n x InputDim) the gradient of that mean loss
// with respect to x, computed with the weights before the update. Samples
// without labels contribute nothing (their dx rows are 0). A label out of
// range is an error (wrapping ErrBadLabel) and changes nothing. It panics
// when len(x) != n*InputDim, len(labels) != n or dx has the wrong length.
func (l *Layer) TrainBatch(x []float32, n int, labels [][]int32, dx []float32) (float64, error) {
	if l.closed {
		return 0, ErrClosed
	}
	if n < 0 || len(x) != n*l.din || len(labels) != n || (dx != nil && len(dx) != n*l.din) {
		panic(fmt.Sprintf("slide: TrainBatch: n %d, len(x) %d, len(labels) %d, len(dx) %d for InputDim %d",
			n, len(x), len(labels), len(dx), l.din))
	}
	neff := 0
	for i, ls := range labels {
		for _, v := range ls {
			if v < 0 || int(v) >= l.d {
				return 0, fmt.Errorf("%w: sample %d has label %d, want [0, %d)", ErrBadLabel, i, v, l.d)
			}
		}
		if len(ls) > 0 {
			neff++
		}
	}
	if neff == 0 {
		clear(dx)
		return 0, nil
	}
	scale := float32(1 / float64(neff))
	var loss float64
	if l.cfg.Sparsity >= 1 {
		loss = l.trainDense(x, n, labels, dx, scale)
	} else {
		l.hashInputs(x, n)
		l.pool.run(func(q int) { l.forwardBackward(q, x, n, labels, dx, scale) })
		l.pool.run(func(q int) { l.ownedGradients(q, x, l.adamRow) })
		if l.cfg.InsertLabels {
			l.pool.run(l.moveLabels)
		}
		for _, w := range l.ws {
			loss += w.loss
		}
	}
	l.batch++
	return loss / float64(neff), nil
}

// hashInputs writes the codes of the n input rows of x to l.icodes (n x L),
// with one HashBatch call when the family has it, else in parallel.
func (l *Layer) hashInputs(x []float32, n int) []uint32 {
	return l.hashWith(l.fam, l.par.L, x, n)
}

// hashWith is hashInputs with the family fam of L codes (x is n x
// fam.Dim()).
func (l *Layer) hashWith(fam Family, L int, x []float32, n int) []uint32 {
	din := fam.Dim()
	if cap(l.icodes) < n*L {
		l.icodes = make([]uint32, n*L)
	}
	codes := l.icodes[:n*L]
	if bh, ok := fam.(BatchHasher); ok {
		bh.HashBatch(x, n, codes)
		return codes
	}
	l.pool.run(func(q int) {
		lo, hi := span(q, len(l.ws), n)
		for i := lo; i < hi; i++ {
			fam.Hash(x[i*din:(i+1)*din], codes[i*L:(i+1)*L])
		}
	})
	return codes
}

// forwardBackward is phase 1 of a sparse batch on worker q: for its samples,
// active sets (from the codes hashInputs computed), softmax, loss, dx, and
// the (row, sample, delta) contributions for phase 2, in the worker's own
// lists. It only reads shared state.
func (l *Layer) forwardBackward(q int, x []float32, n int, labels [][]int32, dx []float32, scale float32) {
	w := l.ws[q]
	for o := range w.out {
		w.out[o] = w.out[o][:0]
	}
	w.moves, w.moveCodes, w.loss = w.moves[:0], w.moveCodes[:0], 0
	din := l.din
	target := int(math.Round(l.cfg.Sparsity * float64(l.d)))
	lo, hi := span(q, len(l.ws), n)
	for i := lo; i < hi; i++ {
		xi := x[i*din : (i+1)*din]
		var dxi []float32
		if dx != nil {
			dxi = dx[i*din : (i+1)*din]
			clear(dxi)
		}
		labs := labels[i]
		if len(labs) == 0 {
			continue
		}
		act, nl := l.activeSet(w, i, labs, target)
		if cap(w.z) < len(act) {
			w.z = make([]float32, len(act), 2*len(act))
		}
		z := w.z[:len(act)]
		for j, id := range act {
			if j+prefetchAhead < len(act) {
				l.prefetchForward(act[j+prefetchAhead])
			}
			o := int(id) * din
			z[j] = densenet.Dot(l.w[o:o+din], xi) + l.b[id]
		}
		w.loss += softmaxGrad(z, nl, scale)
		P := int32(len(l.ws))
		for j, id := range act {
			g := z[j]
			if dxi != nil {
				o := int(id) * din
				densenet.Axpy(dxi, g, l.w[o:o+din])
			}
			w.out[id%P] = append(w.out[id%P], contrib{row: id, sample: int32(i), delta: g})
		}
	}
}

// activeSet selects, on worker w, the active set of sample i of the batch
// (labs: its labels as rows of this layer; target: round(Sparsity*Dim))
// into w.active, with the sample's own random stream, and with
// InsertLabels queues its missed labels for moveLabels. It returns the
// set and the number of distinct labels at its front. Training
// (forwardBackward) and a sharded owner's first half (shardForward) both
// select through it, so their sets are the same for the same sample.
func (l *Layer) activeSet(w *worker, i int, labs []int32, target int) ([]int32, int) {
	r := newRNG(l.cfg.Seed^tagTrain, l.batch, uint64(i))
	var codes []uint32
	if l.tables != nil {
		codes = l.icodes[i*l.par.L : (i+1)*l.par.L]
	}
	var nl int
	w.active, nl, w.missed = w.sel.selectActive(l.tables, query{codes: codes, labels: labs,
		target: target, fill: !l.cfg.NoFill, sel: l.cfg.TrainSelection}, &r, w.active, w.missed)
	if l.cfg.InsertLabels {
		for _, id := range w.missed {
			w.moves = append(w.moves, id)
			w.moveCodes = append(w.moveCodes, codes...)
		}
	}
	return w.active, nl
}

// prefetchAhead is how many rows ahead the loops over random rows of W
// (the forward pass over an active set, the owners' Adam updates) hint the
// CPU to load (see package prefetch): each row is a cache miss the hardware
// prefetcher cannot predict, and Adam's state row is 1 KB at 128 inputs.
const prefetchAhead = 4

// prefetchForward hints that row r of W and its bias will be read.
func (l *Layer) prefetchForward(r int32) {
	o := int(r) * l.din
	prefetch.Float32s(l.w[o : o+l.din])
	prefetch.Float32(&l.b[r])
}

// prefetchUpdate hints that adamRow will update row r: its weights, Adam
// state, bias, bias moments and step count.
func (l *Layer) prefetchUpdate(r int32) {
	l.prefetchForward(r)
	sw := 2*l.din + 1
	prefetch.Float32s(l.st[int(r)*sw : (int(r)+1)*sw])
	prefetch.Float32(&l.mb[r])
	prefetch.Float32(&l.vb[r])
	prefetch.Uint32(&l.steps[r])
}

// softmaxGrad turns logits z, whose first nl entries are the targets (each
// with probability 1/nl), into scale*(softmax(z) - y) in place and returns
// the cross-entropy -sum_j y_j log softmax(z)_j.
func softmaxGrad(z []float32, nl int, scale float32) float64 {
	mx := z[0]
	for _, v := range z {
		mx = max(mx, v)
	}
	var lz float64
	for _, v := range z[:nl] {
		lz += float64(v - mx)
	}
	var sum float64
	for j, v := range z {
		e := exp32(v - mx)
		z[j] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	y := 1 / float32(nl)
	for j := range z {
		p := z[j] * inv
		if j < nl {
			p -= y
		}
		z[j] = p * scale
	}
	return math.Log(sum) - lz/float64(nl)
}

// ownedGradients is phase 2 on worker q: it gathers the contributions to
// the rows it owns (row % Threads == q) from all workers, groups them by row
// and calls apply with each row's weight and bias gradients, summed over the
// batch's samples in increasing sample order (so the sums do not depend on
// Threads). Owners write disjoint rows; g is reused after apply returns.
func (l *Layer) ownedGradients(q int, x []float32, apply func(row int32, g []float32, gb float32)) {
	o := &l.ws[q].own
	o.rows, o.end = o.rows[:0], o.end[:0]
	for _, w := range l.ws {
		for _, c := range w.out[q] {
			s := o.slot[c.row]
			if s < 0 {
				s = int32(len(o.rows))
				o.slot[c.row] = s
				o.rows = append(o.rows, c.row)
				o.end = append(o.end, 0)
			}
			o.end[s]++
		}
	}
	var total int32
	for s, c := range o.end {
		o.end[s] = total
		total += c
	}
	if cap(o.flat) < int(total) {
		o.flat = make([]contrib, total, 2*total)
	}
	o.flat = o.flat[:total]
	for _, w := range l.ws { // workers hold increasing sample ranges
		for _, c := range w.out[q] {
			s := o.slot[c.row]
			o.flat[o.end[s]] = c
			o.end[s]++
		}
	}
	din := l.din
	var start int32
	for s, row := range o.rows {
		if s+prefetchAhead < len(o.rows) {
			l.prefetchUpdate(o.rows[s+prefetchAhead])
		}
		g := o.g
		clear(g)
		var gb float32
		for _, c := range o.flat[start:o.end[s]] {
			densenet.Axpy(g, c.delta, x[int(c.sample)*din:(int(c.sample)+1)*din])
			gb += c.delta
		}
		apply(row, g, gb)
		start = o.end[s]
		o.slot[row] = -1
	}
}

// moveLabels is phase 3 on worker q: in the tables it owns (t % Threads ==
// q), it moves each missed label into the bucket its sample hashed to, in
// sample order.
func (l *Layer) moveLabels(q int) {
	L := l.par.L
	for _, w := range l.ws {
		for mi, id := range w.moves {
			codes := w.moveCodes[mi*L : (mi+1)*L]
			for tb := q; tb < L; tb += len(l.ws) {
				l.tables.ForceTable(tb, id, codes[tb])
			}
		}
	}
}

// Rehash re-inserts every row into the tables in use, now: for weights set
// through Weights, or to refresh the tables outside the schedule. It stalls
// for the hashing of all Dim rows, and drops the inference tables of
// TuneInference. It does nothing without tables.
func (l *Layer) Rehash() {
	l.checkOpen()
	if l.tables == nil {
		return
	}
	l.infer = nil
	l.updateCenter()
	l.forSlices(func(int) bool { return true }, func(rows []int32) {
		l.insertRows(l.tables, l.fam, l.hashedAt, rows)
	})
}

// updateCenter sets center to the mean of the rows of W (meanRow). It
// does nothing with NoCenter.
func (l *Layer) updateCenter() {
	if l.center != nil {
		l.meanRow(l.center)
	}
}

// meanRow sets center to the mean of the rows of W (in parallel, summed in
// float64 per goroutine, then in goroutine order, so the result does not
// depend on timing).
func (l *Layer) meanRow(center []float32) {
	din, P := l.din, len(l.ws)
	sums := make([][]float64, P)
	l.pool.run(func(q int) {
		acc := make([]float64, din)
		lo, hi := span(q, P, l.d)
		for r := lo; r < hi; r++ {
			for i, v := range l.w[r*din : (r+1)*din] {
				acc[i] += float64(v)
			}
		}
		sums[q] = acc
	})
	for i := range center {
		var t float64
		for q := range sums {
			t += sums[q][i]
		}
		center[i] = float32(t / float64(l.d))
	}
}

// hashRow is the vector row r is hashed as: its weights minus the center
// (see Config.NoCenter), written to buf, or the weights themselves.
func (l *Layer) hashRow(r int32, buf []float32) []float32 {
	w := l.w[int(r)*l.din : (int(r)+1)*l.din]
	if l.center == nil {
		return w
	}
	buf = buf[:l.din]
	for i, v := range w {
		buf[i] = v - l.center[i]
	}
	return buf
}
