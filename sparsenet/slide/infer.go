package slide

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Seeds of the inference tables (see TuneInference).
const (
	tagInferHash  = 0x1b4a
	tagInferTable = 0x1b7b
)

// InferTuneOptions are the constants of TuneInference. Zero fields take
// their defaults.
type InferTuneOptions struct {
	// Agreement is the fraction of the calibration inputs whose sparse
	// top-1 must be their dense top-1. Since a sparse prediction that
	// agrees is right exactly when the dense one is, sparse P@1 on the
	// calibration inputs is then within 1-Agreement of dense P@1. 0 <
	// Agreement <= 1. The default value is 0.99.
	Agreement float64 `yaml:"agreement" zero:"refused"`
	// MaxL is the most inference tables. The default value is 4096.
	MaxL int `yaml:"max_l"`
	// MaxBytes bounds the memory of the inference tables. The default
	// value is the larger of 64 MiB and a quarter of the parameters'
	// bytes (Layer.ParamBytes).
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxCost bounds the work of one sparse prediction with the inference
	// tables, in multiply-adds (hashing, bucket visits, scoring). The
	// default value is the larger of 2^21 (about 1 ms on one slow core)
	// and a quarter of dense inference's Dim*InputDim.
	MaxCost int64 `yaml:"max_cost"`
	// MaxTries is the most table shapes built and measured per call. The
	// default value is 40.
	MaxTries int `yaml:"max_tries"`
	// MaxSeconds ends the search once it has taken this long (the shape
	// being measured is finished). The default value is 60.
	MaxSeconds float64 `yaml:"max_seconds"`
	// Samples is how many training inputs a trainer calibrates on
	// (package xctrain; TuneInference takes the inputs it is given). The
	// default value is 1024.
	Samples int `yaml:"samples" zero:"refused"`
	// Off turns the tuning off: PredictSparse keeps the training tables.
	Off bool `yaml:"off"`
}

// Default values of InferTuneOptions.
const (
	DefaultInferAgreement = 0.99
	DefaultInferMaxTries  = 40
	DefaultInferMaxL      = maxL
	DefaultInferMaxSecs   = 60
	minInferMaxCost       = 1 << 21
	DefaultInferSamples   = 1024
	minInferMaxBytes      = 64 << 20
)

// EnsureDefaults fills the zero fields with their defaults, except
// MaxBytes and MaxCost, which depend on the layer (see TuneInference).
func (o *InferTuneOptions) EnsureDefaults() {
	if o.Agreement == 0 {
		o.Agreement = DefaultInferAgreement
	}
	if o.MaxL == 0 {
		o.MaxL = DefaultInferMaxL
	}
	if o.MaxTries == 0 {
		o.MaxTries = DefaultInferMaxTries
	}
	if o.Samples == 0 {
		o.Samples = DefaultInferSamples
	}
	if o.MaxSeconds == 0 {
		o.MaxSeconds = DefaultInferMaxSecs
	}
}

// Validate reports every out-of-range field (after EnsureDefaults).
func (o *InferTuneOptions) Validate() error {
	var errs []error
	if !(o.Agreement > 0 && o.Agreement <= 1) {
		errs = append(errs, fmt.Errorf("agreement %v not in (0, 1]", o.Agreement))
	}
	if o.MaxL < 1 || o.MaxL > maxL {
		errs = append(errs, fmt.Errorf("max_l %d not in [1, %d]", o.MaxL, maxL))
	}
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("max_bytes %d < 0", o.MaxBytes))
	}
	if o.MaxCost < 0 {
		errs = append(errs, fmt.Errorf("max_cost %d < 0", o.MaxCost))
	}
	if o.MaxTries < 1 {
		errs = append(errs, fmt.Errorf("max_tries %d < 1", o.MaxTries))
	}
	if !(o.MaxSeconds > 0) || math.IsInf(o.MaxSeconds, 0) {
		errs = append(errs, fmt.Errorf("max_seconds %v not positive and finite", o.MaxSeconds))
	}
	if o.Samples < 1 {
		errs = append(errs, fmt.Errorf("samples %d < 1", o.Samples))
	}
	return errors.Join(errs...)
}

// InferTune reports what TuneInference chose.
type InferTune struct {
	// Params is the shape of the tables PredictSparse uses now.
	Params Params
	// Separate is true when they are inference tables apart from the
	// training tables.
	Separate bool
	// Agreement is the fraction of the calibration inputs whose sparse
	// top-1 is their dense top-1 with those tables, TrainingAgreement the
	// same with the training tables.
	Agreement, TrainingAgreement float64
	// With labels: DenseP1, TrainingP1 and P1 are the calibration inputs'
	// P@1 with dense inference, with the training tables and with the
	// tables chosen.
	DenseP1, TrainingP1, P1 float64
	// Met is Agreement >= the option's Agreement, or with labels the
	// training tables' P1 above DenseP1 by two standard errors.
	Met bool
	// Tried is the number of table sets measured (the training tables
	// included), Inputs the number of calibration inputs.
	Tried, Inputs int
	// Bytes is the memory of the inference tables (0 without).
	Bytes int64
}

// inferIndex is a set of hash tables that PredictSparse and Candidates use
// instead of the training tables (see TuneInference). Its rows are brought
// up to date before a prediction when the layer trained since (refresh).
//
// It hashes for the inner product, not the angle (Neyshabur and Srebro's
// simple LSH, with the bias folded in): row j is hashed as
// u_j = [w_j - c, b_j, sqrt(M^2 - |w_j - c|^2 - b_j^2)] and an input x as
// [x, 1, 0], where c is the mean row and M the largest |[w_j - c, b_j]|
// when the tables were built. Every u_j has length M, so the angle between
// u_j and the input's vector falls as the score w_j·x + b_j rises (the
// constant c·x aside), and with sign projections (hadamard) a row shares
// a table's bucket with an input with a probability that rises with its
// score: the rows found in the most tables (SelectByCount) are those
// likeliest to score highest.
//
// With K = 1 the L tables are kept as one L-bit signature per row
// (sketches) and a query scans them: a row is in the input's bucket of
// table t when bit t of both signatures agree, so its count is L minus
// the Hamming distance, the same candidates and counts as L one-bit
// tables at d*L/64 words read instead of about L*d/2 ids.
type inferIndex struct {
	par    Params
	fam    Family      // hadamard over InputDim+2 values
	tables *Tables     // K >= 2
	sk     *sketches   // K = 1
	center []float32   // c (zeros with NoCenter)
	m2     float64     // M^2
	at     []uint32    // steps[r] when row r was last inserted
	batch  uint64      // Layer.batch when the rows were brought up to date
	sels   []*selector // one per worker
	xs     []float32   // inputs as [x, 1, 0]
}

// row writes row r's vector u_r to buf (len InputDim+2).
func (idx *inferIndex) row(l *Layer, r int32, buf []float32) []float32 {
	n2 := idx.centred(l, r, buf)
	buf[l.din+1] = float32(math.Sqrt(max(0, idx.m2-n2))) // 0 for a row grown past M since
	return buf
}

// centred writes [w_r - c, b_r] to buf[:InputDim+1] and returns its
// squared length.
func (idx *inferIndex) centred(l *Layer, r int32, buf []float32) float64 {
	din := l.din
	var n2 float64
	for i, v := range l.w[int(r)*din : (int(r)+1)*din] {
		v -= idx.center[i]
		buf[i] = v
		n2 += float64(v) * float64(v)
	}
	b := l.b[r]
	buf[din] = b
	return n2 + float64(b)*float64(b)
}

// inputs returns the n inputs of x as [x, 1, 0].
func (idx *inferIndex) inputs(x []float32, n, din int) []float32 {
	w := din + 2
	if cap(idx.xs) < n*w {
		idx.xs = make([]float32, n*w)
	}
	xs := idx.xs[:n*w]
	for i := 0; i < n; i++ {
		copy(xs[i*w:i*w+din], x[i*din:(i+1)*din])
		xs[i*w+din], xs[i*w+din+1] = 1, 0
	}
	return xs
}

// TuneInference chooses the hash tables PredictSparse uses so that sparse
// inference does not trade away accuracy: on the n calibration inputs x (n
// x InputDim; training or held-out inputs, never the test set's), it counts
// how often the sparse top-1 is the dense top-1 (the agreement). When the
// training tables reach o.Agreement they are kept; so are they when labels
// (nil, or the inputs' labels) are given and their P@1 on the inputs beats
// dense inference's by two standard errors (morePrecise). Otherwise it
// builds
// inference tables for the inner product (see inferIndex) of other
// shapes, in order of cost (inferShapes), skipping shapes over
// o.MaxBytes or o.MaxCost, and keeps the first that reaches o.Agreement,
// or the best one when none does (the training tables when nothing beats
// them), after at most o.MaxTries shapes or o.MaxSeconds; the shape chosen
// by the last call is tried first. The candidate budget never changes.
//
// Inference tables are hashed from the current weights; rows trained since
// are re-inserted before the next prediction. Rehash and Load drop them
// (call TuneInference again). A layer without tables has nothing to tune
// and returns the zero InferTune.
func (l *Layer) TuneInference(x []float32, n int, labels [][]int32, o InferTuneOptions) (InferTune, error) {
	l.checkOpen()
	if l.tables == nil {
		return InferTune{}, nil
	}
	o.EnsureDefaults()
	if o.MaxBytes == 0 {
		o.MaxBytes = max(minInferMaxBytes, l.ParamBytes()/4)
	}
	if o.MaxCost == 0 {
		o.MaxCost = max(minInferMaxCost, int64(l.d)*int64(l.din)/4)
	}
	if err := o.Validate(); err != nil {
		return InferTune{}, fmt.Errorf("%w: infer_tune: %w", ErrBadConfig, err)
	}
	if n < 1 || len(x) != n*l.din || labels != nil && len(labels) != n {
		return InferTune{}, fmt.Errorf("%w: TuneInference: %d inputs of %d values and %d label sets for InputDim %d", ErrBadConfig, n, len(x), len(labels), l.din)
	}
	ref, got := make([]int32, n), make([]int32, n)
	l.PredictDense(x, n, 1, ref)
	agreement := func() float64 {
		l.PredictSparse(x, n, 1, got)
		same := 0
		for i, id := range ref {
			if got[i] == id {
				same++
			}
		}
		return float64(same) / float64(n)
	}
	l.infer = nil
	res := InferTune{Params: l.par, Inputs: n, Tried: 1}
	res.TrainingAgreement = agreement()
	res.Agreement = res.TrainingAgreement
	if labels != nil {
		res.DenseP1 = PrecisionAtK(ref, 1, labels, 1)
		res.TrainingP1 = PrecisionAtK(got, 1, labels, 1)
		res.P1 = res.TrainingP1
	}
	// Tables clearly more precise than dense inference on labelled inputs
	// (a layer trained sparsely can rank better with its own tables than
	// densely, over labels its steps never trained) are kept too.
	precise := labels != nil && morePrecise(got, ref, labels)
	if o.Off || res.Agreement >= o.Agreement || precise {
		res.Met = res.Agreement >= o.Agreement || precise
		return res, nil
	}
	var best *inferIndex
	start := time.Now()
	for _, p := range l.inferShapes(o) {
		if res.Tried > o.MaxTries || time.Since(start).Seconds() > o.MaxSeconds {
			break
		}
		idx, err := l.buildInfer(p)
		if err != nil {
			return InferTune{}, err
		}
		l.infer = idx
		a := agreement()
		res.Tried++
		if a > res.Agreement {
			best, res.Agreement, res.Params = idx, a, p
			if labels != nil {
				res.P1 = PrecisionAtK(got, 1, labels, 1)
			}
		}
		if a >= o.Agreement {
			break
		}
	}
	l.infer = best
	if best != nil {
		l.lastInfer = best.par
		res.Separate, res.Bytes = true, best.bytes()
	}
	res.Met = res.Agreement >= o.Agreement
	return res, nil
}

// morePrecise reports whether the top-1 predictions a are more precise
// than b on the inputs with these labels by at least two standard errors
// of the paired difference: P@1(a) - P@1(b) >= 2*sqrt(m/n), where m of the
// n inputs have exactly one of the two right (each such input moves the
// difference by 1/n either way). A margin of noise is not enough to keep
// tables that disagree with dense inference: on 1,024 inputs, tables
// within a point of dense inference's P@1 there came 4 points below it on
// a test set.
func morePrecise(a, b []int32, labels [][]int32) bool {
	n := len(labels)
	diff, m := 0, 0
	for i, ls := range labels {
		ra, rb := slices.Contains(ls, a[i]), slices.Contains(ls, b[i])
		if ra != rb {
			m++
			if ra {
				diff++
			} else {
				diff--
			}
		}
	}
	return diff > 0 && float64(diff)/float64(n) >= 2*math.Sqrt(float64(m))/float64(n)
}

// inferShapes lists the shapes TuneInference tries, in order: the last
// one chosen, then for L = 16, 32, ..., o.MaxL tables the fewest bits
// K0 whose cost (inferCost) fits o.MaxCost, K0+1 and K0+2; none over
// o.MaxBytes or o.MaxCost, none repeated. Few bits and many tables: a
// row's count of tables shared with the input then estimates its collision
// probability, which rises with its score, closely (with K = 1 it is the
// agreement of two L-bit sign sketches); more bits keep the buckets of a
// wide layer small.
func (l *Layer) inferShapes(o InferTuneOptions) []Params {
	d := l.d
	seen := map[Params]bool{}
	var out []Params
	add := func(k, L int) bool {
		r := max(l.cfg.Tune.MinR, int(math.Ceil(l.cfg.Tune.RFactor*float64(d)/float64(int(1)<<k))))
		p := Params{K: k, L: L, R: min(r, 1<<16)}
		if seen[p] || l.inferCost(p) > float64(o.MaxCost) || inferBytes(p, d) > o.MaxBytes {
			return false
		}
		seen[p] = true
		out = append(out, p)
		return true
	}
	if p := l.lastInfer; p.L > 0 {
		add(p.K, p.L)
	}
	kMax := min(l.cfg.Tune.MaxK, maxK)
	for L := 16; L <= o.MaxL; L *= 2 {
		for k, n := 1, 0; k <= kMax && n < 3; k++ {
			if l.inferCost(Params{K: k, L: L}) > float64(o.MaxCost) {
				continue
			}
			add(k, L)
			n++
		}
	}
	return out
}

// inferCost is the work of one sparse prediction with inference tables of
// shape p, in multiply-adds: hashing (hadamardCost), finding the
// candidates (K = 1: a scan of d signatures of L bits, 2 per word; else
// visiting the L buckets, about L*d/2^K ids, 4 each) and scoring them
// (round(InferSparsity*d) dot products).
func (l *Layer) inferCost(p Params) float64 {
	c := max(1, math.Round(l.cfg.InferSparsity*float64(l.d)))
	find := 4 * float64(p.L) * float64(l.d) / float64(int(1)<<p.K)
	if p.K == 1 {
		find = 2 * float64(l.d) * float64((p.L+63)/64)
	}
	return hadamardCost(l.din+2, p.K, p.L) + find + c*float64(l.din)
}

// inferBytes is the memory of inference tables of shape p over d rows.
func inferBytes(p Params, d int) int64 {
	if p.K == 1 {
		return 8 * int64(d) * int64((p.L+63)/64)
	}
	return 4 * (int64(p.L)<<p.K*int64(p.R) + 2*int64(p.L)<<p.K + int64(p.L)*int64(d))
}

// buildInfer hashes every row into new inference tables of shape p.
func (l *Layer) buildInfer(p Params) (*inferIndex, error) {
	c := &l.cfg
	fam, err := newHadamard(l.din+2, p.K, p.L, hash3(c.Seed, tagInferHash, uint64(p.K)<<32|uint64(p.L)))
	if err != nil {
		return nil, err
	}
	idx := &inferIndex{par: p, fam: fam, at: make([]uint32, l.d), batch: l.batch,
		sels: make([]*selector, len(l.ws))}
	if p.K == 1 {
		idx.sk = newSketches(l.d, p.L, len(l.ws))
	} else if idx.tables, err = NewTables(l.d, p.K, p.L, p.R, hash3(c.Seed, tagInferTable, uint64(p.K)<<32|uint64(p.L))); err != nil {
		return nil, err
	}
	for q := range idx.sels {
		idx.sels[q] = newSelector(l.d, p.L)
	}
	idx.center = make([]float32, l.din)
	if !c.NoCenter {
		l.meanRow(idx.center)
	}
	buf := make([]float32, l.din+1)
	for r := range int32(l.d) {
		idx.m2 = max(idx.m2, idx.centred(l, r, buf))
	}
	l.forSlices(func(int) bool { return true }, idx.insert(l))
	return idx, nil
}

// bytes is the memory of the tables or signatures.
func (idx *inferIndex) bytes() int64 {
	if idx.sk != nil {
		return 8 * int64(len(idx.sk.sig))
	}
	return idx.tables.Bytes()
}

// insert returns the function that hashes rows into idx.
func (idx *inferIndex) insert(l *Layer) func(rows []int32) {
	return func(rows []int32) {
		codes := l.rowCodes(idx.fam, rows, func(r int32, buf []float32) []float32 { return idx.row(l, r, buf) })
		if idx.sk == nil {
			l.insertCodes(idx.tables, idx.at, rows, codes)
			return
		}
		for j, r := range rows {
			idx.sk.set(r, codes[j*idx.par.L:(j+1)*idx.par.L])
			idx.at[r] = l.steps[r]
		}
	}
}

// refreshInfer re-inserts into the inference tables, if any, the rows
// trained since they were last inserted.
func (l *Layer) refreshInfer() {
	idx := l.infer
	if idx == nil || idx.batch == l.batch {
		return
	}
	l.forSlices(func(r int) bool { return l.steps[r] != idx.at[r] }, idx.insert(l))
	idx.batch = l.batch
}

// forSlices calls fn with the rows for which keep is true, in row order,
// at most Schedule.SliceNeurons at a time (fn must not keep the slice).
func (l *Layer) forSlices(keep func(r int) bool, fn func(rows []int32)) {
	slice := l.cfg.Schedule.SliceNeurons
	rows := l.mrows[:0]
	for r := 0; r < l.d; r++ {
		if !keep(r) {
			continue
		}
		rows = append(rows, int32(r))
		if len(rows) == slice {
			fn(rows)
			rows = rows[:0]
		}
	}
	if len(rows) > 0 {
		fn(rows)
	}
	l.mrows = rows[:0]
}

// finder appends to dst[:0] the candidates of one input from its codes,
// on worker q's scratch.
type finder func(q int, codes []uint32, target int, r *rng, dst []int32) []int32

// lookup hashes the n inputs of x for sparse inference and returns their
// codes (n x L), L and how to find an input's candidates: with the
// inference tables when TuneInference built them, else with the training
// tables.
func (l *Layer) lookup(x []float32, n int) ([]uint32, int, finder) {
	l.refreshInfer()
	sel := l.cfg.InferSelection
	idx := l.infer
	if idx == nil {
		return l.hashInputs(x, n), l.par.L, func(q int, codes []uint32, target int, r *rng, dst []int32) []int32 {
			w := l.ws[q]
			dst, _, w.missed = w.sel.selectActive(l.tables, query{codes: codes, target: target, sel: sel}, r, dst, w.missed)
			return dst
		}
	}
	codes := l.hashWith(idx.fam, idx.par.L, idx.inputs(x, n, l.din), n)
	if idx.sk != nil {
		return codes, idx.par.L, func(q int, codes []uint32, target int, r *rng, dst []int32) []int32 {
			sig := idx.sk.query(q, codes)
			return idx.sels[q].selectSketch(idx.sk, sig, target, sel, r, dst)
		}
	}
	return codes, idx.par.L, func(q int, codes []uint32, target int, r *rng, dst []int32) []int32 {
		w := l.ws[q]
		dst, _, w.missed = idx.sels[q].selectActive(idx.tables, query{codes: codes, target: target, sel: sel}, r, dst, w.missed)
		return dst
	}
}

// sketches holds an L-bit signature per row: bit t is row's code in table
// t of L one-bit tables. qsig holds one query signature per worker.
type sketches struct {
	l, words int
	sig      []uint64 // d x words
	qsig     [][]uint64
}

func newSketches(d, l, workers int) *sketches {
	w := (l + 63) / 64
	sk := &sketches{l: l, words: w, sig: make([]uint64, d*w), qsig: make([][]uint64, workers)}
	for q := range sk.qsig {
		sk.qsig[q] = make([]uint64, w)
	}
	return sk
}

// pack writes the one-bit codes to sig.
func pack(codes []uint32, sig []uint64) {
	clear(sig)
	for t, c := range codes {
		sig[t/64] |= uint64(c&1) << (t % 64)
	}
}

// set makes codes row r's signature.
func (sk *sketches) set(r int32, codes []uint32) {
	pack(codes, sk.sig[int(r)*sk.words:(int(r)+1)*sk.words])
}

// query packs an input's codes into worker q's query signature.
func (sk *sketches) query(q int, codes []uint32) []uint64 {
	pack(codes, sk.qsig[q])
	return sk.qsig[q]
}
