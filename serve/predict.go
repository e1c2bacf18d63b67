package serve

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

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
// request it cannot parse.
func (s *Server) Predict(req *Request) (*Response, error) {
	lim := &s.opts.Limits
	if err := lim.checkCounts(req); err != nil {
		return nil, err
	}
	g := groupPool.Get().(*reader.Group)
	defer groupPool.Put(g)
	resp := &Response{Scores: make([]float32, len(req.Candidates))}
	for {
		// The features are hashed in the namespaces of the replica that
		// scores them: a new model may have others.
		r := s.cur.Load()
		if r == nil {
			return nil, ErrNotReady
		}
		if err := buildGroup(g, req, r.ns, lim); err != nil {
			return nil, err
		}
		seq, ok, err := r.scoreLocked(g, resp.Scores)
		if ok {
			resp.Version = seq
			return resp, err
		}
		// r was replaced and released meanwhile: take the one serving.
	}
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
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return 0, false, nil
	}
	if r.seq == 0 {
		return 0, true, ErrNotReady
	}
	sc, _ := r.scratch.Get().(*scorer)
	if sc == nil {
		if sc, err = r.newScorer(); err != nil {
			return 0, true, err
		}
	}
	defer r.scratch.Put(sc)
	if err := r.score(sc, g, out); err != nil {
		return 0, true, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return r.seq, true, nil
}

// buildGroup makes g the sample group of req: the user line at level 1,
// each candidate a sample at level 0 under it (label 0: unused). The
// features are counted against lim as they are parsed: a request over a
// limit is refused before it costs more.
func buildGroup(g *reader.Group, req *Request, ns []uint32, lim *Limits) error {
	g.Reset(2)
	var f []uint32
	var ids []uint64
	var vals []float32
	var err error
	if f, ids, vals, err = parseFeatures(req.User, ns, f, ids, vals, min(lim.MaxUserFeatures, lim.MaxFeatures)); err != nil {
		return fmt.Errorf("%w: user: %w", ErrBadRequest, err)
	}
	g.AddLine(1, -1, f, ids, vals)
	left := lim.MaxFeatures - len(ids)
	for i, c := range req.Candidates {
		if f, ids, vals, err = parseFeatures(c, ns, f[:0], ids[:0], vals[:0], min(lim.MaxCandidateFeatures, left)); err != nil {
			if errors.Is(err, errTooMany) && left < lim.MaxCandidateFeatures {
				err = fmt.Errorf("%w: the request's features are over MaxFeatures, %d", err, lim.MaxFeatures)
			}
			return fmt.Errorf("%w: candidate %d: %w", ErrBadRequest, i, err)
		}
		left -= len(ids)
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
