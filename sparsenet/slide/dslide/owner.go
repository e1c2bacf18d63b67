package dslide

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/xdlgo/xps/sparsenet/slide"
)

// Rounds: the shares on separate workers. With W workers each owning one
// share, every worker trains its own batches (data parallelism below the
// layer) and the layer's step is a round: each worker contributes its
// batch to every owner (Forward), the owners each run one ShardForward
// over the round's batches in worker order, every worker combines its
// samples' Partials into Globals and sends them to every owner
// (Backward), and the owners each run one ShardBackward and hand every
// worker its part of dx. The round is then one step of the layer over the
// W batches together: its weights see the mean gradient over the round's
// samples with labels, and each worker's dx is the gradient of its own
// batch's mean loss (the owner rescales the worker's rows), as a worker
// alone would compute it.
//
// An Owner is one share's side of the rounds; Peer is how a worker reaches
// an owner (an *Owner in the same process, or a transport); Worker is the
// batch's side. Requests carry the attempt's cluster Version and the
// Round: an owner answers only requests of its own version (a newer one is
// pending: that owner's worker has not started the attempt yet; an older
// one is an error, ErrStale) and keeps one round at a time.

// ErrStale reports a request of an older attempt or round than the owner's.
var ErrStale = errors.New("dslide: stale round")

// ErrRound reports a request out of the round protocol: a worker or shape
// the owner does not know, a second contribution, or a backward before
// the forward.
var ErrRound = errors.New("dslide: bad round request")

// ForwardRequest is a worker's contribution of its batch to a round: n
// samples, X (n x InputDim) and each sample's labels (rows of the whole
// layer). Poll asks again for a contribution already made (X and Labels
// empty). Pause is the latest pause request the worker was asked to
// serve (the control plane's sequence number; 0: none): every worker's
// reply to the round carries the largest of the round (RoundInfo.Pause),
// so that all stop after the same round. Wait is how long the owner may
// wait for the other workers before replying Pending.
type ForwardRequest struct {
	Version, Round uint64
	Worker, N      int
	X              []float32
	Labels         [][]int32
	Pause          uint64
	Poll           bool
	Wait           time.Duration
	// Dense asks for the owner's logits of the worker's samples (n x its
	// rows, -Inf where a row was not active) instead of its Partials: the
	// exchange of dense model parallelism, which the benchmarks compare
	// D-SLIDE against (Worker.Dense).
	Dense bool
}

// RoundInfo is what every worker learns of a round from each owner.
type RoundInfo struct {
	// Pause is the latest pause request some worker was asked to serve
	// when it contributed (0: none).
	Pause uint64
	// Samples and WithLabels count the round's samples, and those with
	// labels, over every worker.
	Samples, WithLabels int
}

// ForwardReply holds the worker's samples' Partials from this owner, or
// Pending when not every worker has contributed yet. Resend (with
// Pending) says the request was not taken (no owner of its version yet,
// or one whose attempt is over): the next one must carry its data again,
// not poll.
type ForwardReply struct {
	Pending bool
	Resend  bool
	Parts   []slide.Partial
	// Logits are the worker's samples' logits (Dense requests), instead
	// of Parts.
	Logits []float32
	Info   RoundInfo
	// Active is the (sample, row) pairs this owner made active in the
	// round: its share of the work (balance).
	Active int
}

// BackwardRequest sends the worker's samples' Globals (Poll: already
// sent, asks again).
type BackwardRequest struct {
	Version, Round uint64
	Worker         int
	Globals        []slide.Global
	Poll           bool
	Wait           time.Duration
}

// BackwardReply holds this owner's part of the worker's dx (n x
// InputDim), or Pending until every worker's Globals have come (Resend:
// see ForwardReply).
type BackwardReply struct {
	Pending bool
	Resend  bool
	Dx      []float32
}

// PredictRequest asks an owner for its top K rows (of its share, from 0)
// and their scores for each of N inputs X, over its LSH candidates
// (Sparse) or all its rows; Rehash re-inserts its rows into its tables
// first.
type PredictRequest struct {
	Version        uint64
	N, K           int
	X              []float32
	Sparse, Rehash bool
}

// PredictReply holds N x K rows (-1 past the owner's candidates) and
// their scores, or Pending when the owner of the request's version is not
// there yet (a transport's answer before its worker starts the attempt).
type PredictReply struct {
	Pending bool
	IDs     []int32
	Scores  []float32
}

// Peer is a worker's way to an owner.
type Peer interface {
	Forward(ctx context.Context, req ForwardRequest) (ForwardReply, error)
	Backward(ctx context.Context, req BackwardRequest) (BackwardReply, error)
	Predict(ctx context.Context, req PredictRequest) (PredictReply, error)
}

// Owner is share Index of a partition of the layer, serving the rounds of
// Workers workers for one attempt (Version). Its methods are safe for
// concurrent use; it runs the layer's halves when a round's last request
// arrives, on that request's goroutine.
//
// Invariants:
//
//  1. Rounds go one at a time: round r's forward runs once every worker
//     contributed to r, its backward once every worker sent r's Globals;
//     contributions to r+1 are taken once r's backward ran, and r's dx
//     parts are kept until r+1's forward (by which time every worker has
//     fetched them: it contributed to r+1 after), even while r+1
//     collects.
//  2. The layer changes only in a round's backward (weights, tables) and
//     in Predict's Rehash; a worker between two rounds of its own sees
//     every owner between rounds.
type Owner struct {
	index, workers int
	version        uint64
	din, total     int // input width; rows of the whole layer

	mu      sync.Mutex
	layer   *slide.Layer
	round   uint64
	phase   phase
	in      []contribution // per worker: its contribution to round (collect)
	off     []int          // per worker: its first sample in the round; then the total
	wl      []int          // per worker: its samples with labels
	x       []float32      // the round's inputs, worker by worker
	labels  [][]int32
	parts   []slide.Partial
	glob    []slide.Global
	hasGlob []bool
	dx      []float32
	logits  []float32 // the round's kept logits, when a worker asked for them
	dense   []bool    // per worker: it asked for logits
	info    RoundInfo
	active  int
	changed chan struct{} // closed and replaced when the round moves on
	closed  bool
	// prevDone: the round before round's dx parts are still there
	// (collecting round, its forward not run yet).
	prevDone bool
}

type phase int

const (
	collecting phase = iota // taking contributions to round
	forwarded               // round's Partials ready; taking Globals
	done                    // round's dx parts ready; taking contributions to round+1
)

// contribution is one worker's batch for a round.
type contribution struct {
	has    bool
	x      []float32
	labels [][]int32
	pause  uint64
	dense  bool
}

// NewOwner returns share index of part for workers workers at version,
// its layer configured by part.Config(base, index). Close releases it.
func NewOwner(base slide.Config, part Partition, index, workers int, version uint64) (*Owner, error) {
	if index < 0 || index >= part.Owners() || workers < 1 {
		return nil, fmt.Errorf("dslide: owner %d of %d for %d workers", index, part.Owners(), workers)
	}
	l, err := slide.New(part.Config(base, index))
	if err != nil {
		return nil, fmt.Errorf("dslide: owner %d: %w", index, err)
	}
	return &Owner{index: index, workers: workers, version: version, din: base.InputDim, total: part.Total(), layer: l,
		in: make([]contribution, workers), off: make([]int, workers+1), wl: make([]int, workers),
		hasGlob: make([]bool, workers), dense: make([]bool, workers), changed: make(chan struct{})}, nil
}

// Layer returns the owner's share. It may be used (Save, Load) only while
// no round is in progress: before the first request, or while every
// worker is paused between rounds.
func (o *Owner) Layer() *slide.Layer { return o.layer }

// Version returns the attempt's version.
func (o *Owner) Version() uint64 { return o.version }

// Close ends the owner: requests waiting and later ones are answered
// Pending (the attempt is over: their callers wait for the cluster's
// restore meanwhile).
func (o *Owner) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	close(o.changed)
	return o.layer.Close()
}

// check validates a request's version and worker; the caller holds mu.
// pending reports a request of a newer version, or one to a closed owner
// (its attempt is over, as the caller's will be).
func (o *Owner) check(version uint64, worker int) (pending bool, err error) {
	switch {
	case o.closed:
		return true, nil
	case worker < 0 || worker >= o.workers:
		return false, fmt.Errorf("%w: worker %d of %d", ErrRound, worker, o.workers)
	case version > o.version:
		return true, nil
	case version < o.version:
		return false, fmt.Errorf("%w: version %d, owner %d is at version %d", ErrStale, version, o.index, o.version)
	}
	return false, nil
}

// dxReady reports whether round r's dx parts are there: its backward ran,
// and the next round's forward has not (a worker may still be waiting for
// its part when another contributes to the next round). The caller holds
// mu.
func (o *Owner) dxReady(r uint64) bool {
	return o.round == r && o.phase == done || o.round == r+1 && o.phase == collecting && o.prevDone
}

// Forward takes worker's contribution to a round (or polls for one made)
// and replies its Partials once every worker has contributed.
func (o *Owner) Forward(ctx context.Context, req ForwardRequest) (ForwardReply, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if pending, err := o.check(req.Version, req.Worker); err != nil || pending {
		return ForwardReply{Pending: pending, Resend: pending}, err
	}
	if req.Round < o.round {
		return ForwardReply{}, fmt.Errorf("%w: round %d, owner %d is at round %d", ErrStale, req.Round, o.index, o.round)
	}
	if req.Round == o.round+1 && o.phase == done && !req.Poll { // this worker is past the round; others may still fetch its dx
		o.round++
		o.phase, o.prevDone = collecting, true
	}
	if req.Round != o.round {
		return ForwardReply{}, fmt.Errorf("%w: round %d from worker %d, owner %d is at round %d", ErrRound, req.Round, req.Worker, o.index, o.round)
	}
	c := &o.in[req.Worker]
	switch {
	case !req.Poll && o.phase != collecting:
		return ForwardReply{}, fmt.Errorf("%w: worker %d contributed twice to round %d", ErrRound, req.Worker, req.Round)
	case !req.Poll:
		if err := o.take(c, req); err != nil {
			return ForwardReply{}, err
		}
		if o.complete() {
			o.forward()
		}
	case o.phase == collecting && !c.has:
		return ForwardReply{}, fmt.Errorf("%w: worker %d polls round %d without contributing", ErrRound, req.Worker, req.Round)
	}
	if !o.await(ctx, req.Wait, func() bool { return o.round != req.Round || o.phase != collecting }) || o.closed {
		// Closed while waiting: its attempt ended, as the caller's will
		// (the cluster is restored); the caller waits for that meanwhile.
		return ForwardReply{Pending: true}, nil
	}
	if o.round != req.Round {
		return ForwardReply{}, fmt.Errorf("%w: round %d ended while worker %d waited", ErrStale, req.Round, req.Worker)
	}
	lo, hi := o.off[req.Worker], o.off[req.Worker+1]
	if o.dense[req.Worker] {
		rows := o.layer.Config().Dim
		return ForwardReply{Logits: o.logits[lo*rows : hi*rows], Info: o.info, Active: o.active}, nil
	}
	return ForwardReply{Parts: o.parts[lo:hi], Info: o.info, Active: o.active}, nil
}

// take copies req's batch into c; the caller holds mu.
func (o *Owner) take(c *contribution, req ForwardRequest) error {
	if c.has {
		return fmt.Errorf("%w: worker %d contributed twice to round %d", ErrRound, req.Worker, req.Round)
	}
	if req.N < 0 || len(req.X) != req.N*o.din || len(req.Labels) != req.N {
		return fmt.Errorf("%w: worker %d's batch: %d samples, %d inputs, %d label lists for input dim %d",
			ErrRound, req.Worker, req.N, len(req.X), len(req.Labels), o.din)
	}
	if err := checkLabels(req.Labels, o.total); err != nil {
		return fmt.Errorf("%w: worker %d's batch: %w", ErrRound, req.Worker, err)
	}
	c.has, c.pause, c.dense = true, req.Pause, req.Dense
	c.x = append(c.x[:0], req.X...)
	c.labels = c.labels[:0]
	for _, ls := range req.Labels {
		c.labels = append(c.labels, append([]int32(nil), ls...))
	}
	return nil
}

// complete reports whether every worker has contributed; the caller
// holds mu.
func (o *Owner) complete() bool {
	for i := range o.in {
		if !o.in[i].has {
			return false
		}
	}
	return true
}

// forward runs the round's first half over every contribution, in worker
// order; the caller holds mu.
func (o *Owner) forward() {
	o.info = RoundInfo{}
	o.prevDone = false // every worker contributed: each has its last round's dx
	o.x, o.labels = o.x[:0], o.labels[:0]
	for w := range o.in {
		c := &o.in[w]
		o.off[w] = len(o.labels)
		o.wl[w] = 0
		for _, ls := range c.labels {
			if len(ls) > 0 {
				o.wl[w]++
			}
		}
		o.x = append(o.x, c.x...)
		o.labels = append(o.labels, c.labels...)
		o.info.Pause = max(o.info.Pause, c.pause)
		o.dense[w] = c.dense
		o.info.WithLabels += o.wl[w]
		c.has = false
	}
	n := len(o.labels)
	o.off[o.workers], o.info.Samples = n, n
	o.parts = grow(o.parts, n)
	if err := o.layer.ShardForward(o.x, n, o.labels, o.parts); err != nil {
		// take checked every label: unreachable.
		panic(fmt.Sprintf("dslide: owner %d: %v", o.index, err))
	}
	o.active = o.layer.KeptActive()
	if slices.Contains(o.dense, true) {
		rows := o.layer.Config().Dim
		o.logits = grow(o.logits, n*rows)
		o.layer.KeptLogits(n, o.logits)
	}
	o.glob = grow(o.glob, n)
	clear(o.hasGlob)
	o.phase = forwarded
	o.broadcast()
}

// Backward takes worker's Globals for the round (or polls for them) and
// replies its part of the worker's dx once every worker's have come.
func (o *Owner) Backward(ctx context.Context, req BackwardRequest) (BackwardReply, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if pending, err := o.check(req.Version, req.Worker); err != nil || pending {
		return BackwardReply{Pending: pending, Resend: pending}, err
	}
	w := req.Worker
	waiting := func() bool { return req.Round == o.round && o.phase == forwarded }
	switch {
	case !req.Poll && !waiting():
		return BackwardReply{}, fmt.Errorf("%w: backward of round %d from worker %d, owner %d is at round %d (phase %d)",
			ErrRound, req.Round, w, o.index, o.round, o.phase)
	case !req.Poll:
		lo, hi := o.off[w], o.off[w+1]
		if o.hasGlob[w] || len(req.Globals) != hi-lo {
			return BackwardReply{}, fmt.Errorf("%w: worker %d sent %d Globals for its %d samples (twice: %v)", ErrRound, w, len(req.Globals), hi-lo, o.hasGlob[w])
		}
		for i, g := range req.Globals {
			if g.Labels < 0 || g.Labels > 0 && !(g.Sum > 0 && g.Sum <= math.MaxFloat64) || math.IsNaN(float64(g.Max)) {
				return BackwardReply{}, fmt.Errorf("%w: worker %d's Global %d is %+v", ErrRound, w, i, g)
			}
		}
		copy(o.glob[lo:hi], req.Globals)
		o.hasGlob[w] = true
		if o.allGlobals() {
			o.backward()
		}
	case waiting() && !o.hasGlob[w]:
		return BackwardReply{}, fmt.Errorf("%w: worker %d polls round %d's backward without its Globals", ErrRound, w, req.Round)
	}
	if !o.await(ctx, req.Wait, func() bool { return !waiting() }) || o.closed {
		return BackwardReply{Pending: true}, nil // closed: see Forward
	}
	if !o.dxReady(req.Round) {
		return BackwardReply{}, fmt.Errorf("%w: round %d's dx, owner %d is at round %d", ErrStale, req.Round, o.index, o.round)
	}
	lo, hi := o.off[w], o.off[w+1]
	// The layer's gradient is of the round's mean loss; the worker's dx is
	// of its own batch's: scaled by the round's samples with labels over
	// the worker's.
	dx := make([]float32, (hi-lo)*o.din)
	if o.wl[w] > 0 {
		s := float32(float64(o.info.WithLabels) / float64(o.wl[w]))
		for i, v := range o.dx[lo*o.din : hi*o.din] {
			dx[i] = v * s
		}
	}
	return BackwardReply{Dx: dx}, nil
}

func (o *Owner) allGlobals() bool {
	for _, h := range o.hasGlob {
		if !h {
			return false
		}
	}
	return true
}

// backward runs the round's second half and the tables' upkeep; the
// caller holds mu.
func (o *Owner) backward() {
	n := o.off[o.workers]
	o.dx = grow(o.dx, n*o.din)
	o.layer.ShardBackward(o.x, n, o.glob[:n], o.info.WithLabels, o.dx)
	o.layer.Maintain()
	o.phase = done
	o.broadcast()
}

// Predict scores the inputs against this owner's rows (see
// PredictRequest).
func (o *Owner) Predict(ctx context.Context, req PredictRequest) (PredictReply, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return PredictReply{Pending: true}, nil // see check
	}
	if req.Version != o.version {
		return PredictReply{}, fmt.Errorf("%w: predict at version %d, owner %d is at %d", ErrStale, req.Version, o.index, o.version)
	}
	if req.N < 0 || req.K < 1 || req.K > o.total || len(req.X) != req.N*o.din {
		return PredictReply{}, fmt.Errorf("%w: predict %d inputs of %d values, k %d, for input dim %d", ErrRound, req.N, len(req.X), req.K, o.din)
	}
	if o.phase == forwarded {
		return PredictReply{}, fmt.Errorf("%w: predict during round %d", ErrRound, o.round)
	}
	if req.Rehash {
		o.layer.Rehash()
	}
	if req.N == 0 {
		return PredictReply{}, nil
	}
	out := PredictReply{IDs: make([]int32, req.N*req.K), Scores: make([]float32, req.N*req.K)}
	if req.Sparse {
		o.layer.PredictSparse(req.X, req.N, req.K, out.IDs)
	} else {
		o.layer.PredictDense(req.X, req.N, req.K, out.IDs)
	}
	o.layer.TopScores(req.N, req.K, out.Scores)
	return out, nil
}

// await waits, releasing mu, until done() holds, the owner closes, ctx
// ends or wait passes; it reports whether done() (or closed) holds. The
// caller holds mu.
func (o *Owner) await(ctx context.Context, wait time.Duration, done func() bool) bool {
	if done() || o.closed {
		return true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for !done() && !o.closed {
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			o.mu.Lock()
			return done() || o.closed
		case <-ctx.Done():
			o.mu.Lock()
			return done() || o.closed
		}
		o.mu.Lock()
	}
	return true
}

// broadcast wakes the waiting requests; the caller holds mu.
func (o *Owner) broadcast() {
	close(o.changed)
	o.changed = make(chan struct{})
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
