package serve

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xdlgo/xps/reader"
)

// ErrBadRequest is wrapped by the errors of a request that cannot be
// scored as given.
var ErrBadRequest = errors.New("serve: bad request")

// Request is one prediction request: one user's features, shared by
// every candidate, and each candidate's features. A feature list is
// space-separated tokens FIELD:TOKEN or FIELD:TOKEN:VALUE, as in the
// libFFM and sample-group training formats: the feature's id is
// reader.FeatureID(FIELD, TOKEN), or with a behaviour history (config
// model.sequence) FeatureID(the field's namespace, TOKEN) as the trainer
// read it, and its value VALUE (default 1). A history field's tokens, in
// order, oldest first, are the user's history. The
// user's features are pooled and pushed through the network's first
// layer once per request where the model's layout puts their fields at
// the user level (the multi-prefix tree of training, applied to
// serving); the ids of all candidates are deduplicated and looked up in
// one batch.
type Request struct {
	User       string   `json:"user"`
	Candidates []string `json:"candidates"`
}

// Response is a request's answer: one score (the predicted probability)
// per candidate, in order, and the export the model came from.
type Response struct {
	Version uint64    `json:"version"`
	Scores  []float32 `json:"scores"`
}

// Predict scores req with the served model. It fails with ErrNotReady
// before a model is loaded and with an error wrapping ErrBadRequest for a
// request it cannot parse. A request of many candidates that finds cores
// idle is scored in blocks on them at once (Options.SplitCandidates).
func (s *Server) Predict(req *Request) (*Response, error) {
	lim := &s.opts.Limits
	if err := lim.checkCounts(req); err != nil {
		return nil, err
	}
	n := len(req.Candidates)
	blocks := s.blocks(n)
	var gs [maxBlocks]*reader.Group
	for k := range blocks {
		gs[k] = groupPool.Get().(*reader.Group)
		defer groupPool.Put(gs[k])
	}
	resp := &Response{Scores: make([]float32, n)}
	for {
		// The features are hashed in the namespaces of the replica that
		// scores them: a new model may have others.
		r := s.cur.Load()
		if r == nil {
			return nil, ErrNotReady
		}
		b, err := newBuild(req, r.ns, lim)
		if err != nil {
			return nil, err
		}
		seq, ok, err := r.scoreBlocks(gs[:blocks], resp.Scores, b.block)
		if ok {
			resp.Version = seq
			return resp, err
		}
		// r was replaced and released meanwhile: take the one serving.
	}
}

// maxBlocks bounds the blocks a request is split into.
const maxBlocks = 16

// defaultSplit is Options.SplitCandidates' default value.
const defaultSplit = 32

// blocks returns how many blocks a request of n candidates is scored in
// at once: as many as the candidates make of at least SplitCandidates
// (none with SplitCandidates < 1), and at most one more than the cores
// left idle by the requests in flight over HTTP and gRPC (a request
// called directly counts as one). Splitting pays when a core would
// otherwise wait; when every core has a request of its own it only
// costs (each block's fixed work, a goroutine), and a request split while
// another is being read takes the cores that one is about to need
// (measured: BENCHMARKS.md, issue 52's request path).
func (s *Server) blocks(n int) int {
	if s.opts.SplitCandidates < 1 {
		return 1
	}
	idle := runtime.GOMAXPROCS(0) - max(1, len(s.inFlight)+len(s.small))
	return max(1, min(n/s.opts.SplitCandidates, idle+1, maxBlocks))
}

var groupPool = sync.Pool{New: func() any { return new(reader.Group) }}

// Score scores the samples of sample group g (as the training formats
// decode them: samples at level 0, shared lines above) into out, one
// probability per sample in order, with the served model, and returns
// the export it came from. It fails with ErrNotReady before a model is
// loaded and with an error wrapping ErrBadRequest for a group it cannot
// score (len(out) must be g's sample count, at most 4096).
func (s *Server) Score(g *reader.Group, out []float32) (uint64, error) {
	if n := g.NumSamples(); n != len(out) || n > maxCandidates {
		return 0, fmt.Errorf("%w: %d samples for %d scores (at most %d)", ErrBadRequest, n, len(out), maxCandidates)
	}
	for {
		r := s.cur.Load()
		if r == nil {
			return 0, ErrNotReady
		}
		if seq, ok, err := r.scoreLocked(g, out); ok {
			return seq, err
		}
		// r was replaced and released meanwhile: take the one serving.
	}
}

// scoreLocked is Score with replica r under its read lock; ok is false
// when r was released (replica.release) before the lock was taken.
func (r *replica) scoreLocked(g *reader.Group, out []float32) (seq uint64, ok bool, err error) {
	return r.readLocked(func() error { return r.scoreOne(g, out) })
}

// readLocked calls score under r's read lock and returns r's export;
// ok is false when r was released (replica.release) before the lock was
// taken, and score is not called then, nor before a model is loaded.
func (r *replica) readLocked(score func() error) (seq uint64, ok bool, err error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return 0, false, nil
	}
	if r.seq == 0 {
		return 0, true, ErrNotReady
	}
	return r.seq, true, score()
}

// scoreBlocks scores the candidates of a request in len(gs) blocks of
// about equal size at once, the first on the calling goroutine and each
// other on one of its own (one block: no goroutine), under one read lock
// held until every block is scored: block k, the candidates [k*n/len(gs), (k+1)*n/len(gs)) of the
// n = len(out), is built into gs[k] by build, then scored into its part
// of out. The error is the first block's in order.
func (r *replica) scoreBlocks(gs []*reader.Group, out []float32, build func(g *reader.Group, lo, hi int) error) (seq uint64, ok bool, err error) {
	return r.readLocked(func() error {
		var errs [maxBlocks]error
		var wg sync.WaitGroup
		n, k := len(out), len(gs)
		one := func(i int) {
			lo, hi := i*n/k, (i+1)*n/k
			if errs[i] = build(gs[i], lo, hi); errs[i] == nil {
				errs[i] = r.scoreOne(gs[i], out[lo:hi])
			}
		}
		for i := 1; i < k; i++ {
			wg.Go(func() { one(i) })
		}
		one(0)
		wg.Wait()
		for _, err := range errs[:k] {
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// scoreOne scores g into out with a scorer of r's pool; the caller holds
// r.mu for reading.
func (r *replica) scoreOne(g *reader.Group, out []float32) error {
	sc, _ := r.scratch.Get().(*scorer)
	if sc == nil {
		var err error
		if sc, err = r.newScorer(); err != nil {
			return err
		}
	}
	defer r.scratch.Put(sc)
	if err := r.score(sc, g, out); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return nil
}

// requestBuild makes the sample groups of a request, block by block and
// the blocks at once (scoreBlocks): each group the user line at level 1
// (parsed once, by newBuild), each of its block's candidates a sample at
// level 0 under it (label 0: unused). The features are counted against
// the limits as they are parsed, across the blocks: a request over a
// limit is refused before it costs more (the blocks at once may parse at
// most a candidate's limit each past MaxFeatures before one sees it).
type requestBuild struct {
	req   *Request
	ns    []uint32
	lim   *Limits
	uf    []uint32
	uids  []uint64
	uvals []float32
	left  atomic.Int64 // MaxFeatures less the features parsed
}

// newBuild parses req's user features.
func newBuild(req *Request, ns []uint32, lim *Limits) (*requestBuild, error) {
	b := &requestBuild{req: req, ns: ns, lim: lim}
	var err error
	if b.uf, b.uids, b.uvals, err = parseFeatures(req.User, ns, nil, nil, nil, min(lim.MaxUserFeatures, lim.MaxFeatures)); err != nil {
		return nil, fmt.Errorf("%w: user: %w", ErrBadRequest, err)
	}
	b.left.Store(int64(lim.MaxFeatures - len(b.uids)))
	return b, nil
}

// block makes g the group of the candidates [lo, hi).
func (b *requestBuild) block(g *reader.Group, lo, hi int) error {
	g.Reset(2)
	g.AddLine(1, -1, b.uf, b.uids, b.uvals)
	var f []uint32
	var ids []uint64
	var vals []float32
	var err error
	for i := lo; i < hi; i++ {
		if f, ids, vals, err = parseFeatures(b.req.Candidates[i], b.ns, f[:0], ids[:0], vals[:0], b.lim.MaxCandidateFeatures); err != nil {
			return fmt.Errorf("%w: candidate %d: %w", ErrBadRequest, i, err)
		}
		if b.left.Add(-int64(len(ids))) < 0 {
			return fmt.Errorf("%w: candidate %d: %w: the request's features are over MaxFeatures, %d", ErrBadRequest, i, errTooMany, b.lim.MaxFeatures)
		}
		g.AddLine(0, 0, f, ids, vals)
		g.AddLabels(0)
	}
	return nil
}

// errTooMany is wrapped by parseFeatures' error for more features than
// its limit.
var errTooMany = errors.New("too many features")

// maxField bounds a request's field numbers (a model has at most
// ctr.MaxFields fields).
const maxField = 1 << 16

// parseFeatures appends the features of s (FIELD:TOKEN[:VALUE] ...) to
// the slices, hashing a field's tokens in its namespace ns[field] (its own
// beyond ns); more than limit features are an error wrapping errTooMany.
func parseFeatures(s string, ns []uint32, fields []uint32, ids []uint64, vals []float32, limit int) ([]uint32, []uint64, []float32, error) {
	n := 0
	// Blanks are spaces and tabs, as in the training formats: a token may
	// hold any other byte (bytes.Fields would split "a\vb", which the
	// trainer hashed whole, and score another feature).
	for tok := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ' ' || r == '\t' }) {
		if n++; n > limit {
			return nil, nil, nil, fmt.Errorf("%w: more than %d", errTooMany, limit)
		}
		fs, rest, ok := strings.Cut(tok, ":")
		if !ok {
			return nil, nil, nil, fmt.Errorf("feature %q: want FIELD:TOKEN[:VALUE]", tok)
		}
		field, err := strconv.ParseUint(fs, 10, 32)
		if err != nil || field >= maxField {
			return nil, nil, nil, fmt.Errorf("feature %q: field %q is not a number below %d", tok, fs, maxField)
		}
		v := float32(1)
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			x, err := strconv.ParseFloat(rest[i+1:], 32)
			if err != nil || x != x || x > 3.4e38 || x < -3.4e38 {
				return nil, nil, nil, fmt.Errorf("feature %q: value %q is not a finite number", tok, rest[i+1:])
			}
			v, rest = float32(x), rest[:i]
		}
		if len(rest) == 0 {
			return nil, nil, nil, fmt.Errorf("feature %q: empty token", tok)
		}
		space := uint32(field)
		if int(field) < len(ns) {
			space = ns[field]
		}
		fields, ids, vals = append(fields, uint32(field)), append(ids, reader.FeatureID(space, rest)), append(vals, v)
	}
	return fields, ids, vals, nil
}
