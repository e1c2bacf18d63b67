package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/snapshot"
)

// Options configure a Server.
type Options struct {
	// Store is the export store's location: a directory or
	// hdfs://HOST:PORT/PATH. Required.
	Store string
	// Poll is how often Run looks for new exports. The default value is
	// 1s.
	Poll time.Duration
	// Logger receives the server's logs. The default value is
	// slog.Default().
	Logger *slog.Logger
	// Metrics, when set, receives the server's metrics: requests by API
	// and outcome, their latency, and the model served (xps_serve_*). The
	// default value (nil) registers none.
	Metrics prometheus.Registerer
	// Limits bound a request's work and the requests served at once;
	// zero fields take their defaults (Limits.EnsureDefaults).
	Limits Limits
	// MaxBytes bounds the memory of the model's tables (Memory.Tables),
	// counting, while a new full export loads, the model that serves and
	// the one being built: an export that would pass it is refused
	// (ErrMemoryLimit), the last good version keeps serving, and the
	// error is logged and in Status. The default value (0) sets no bound.
	MaxBytes int64
	// SplitCandidates is the fewest candidates worth a core of their own:
	// a request of at least twice as many that finds cores idle (fewer
	// requests in flight than GOMAXPROCS) is parsed and scored in blocks
	// of at least SplitCandidates, one on each idle core and one on its
	// own, the blocks at once (the user's features pooled once per
	// block). Each candidate's score is the same either way. The default
	// value is 32; negative never splits.
	SplitCandidates int
}

// ErrMemoryLimit is wrapped by Update's error for an export refused
// because the model would pass Options.MaxBytes.
var ErrMemoryLimit = errors.New("serve: the model's memory limit")

// ErrNotReady is returned by Predict before a model is loaded.
var ErrNotReady = errors.New("serve: no model loaded yet")

// Server serves the newest model of an export store: it loads the chain
// (the newest intact full export and its deltas), applies each new delta
// as it appears, and scores requests (Predict) with the version it holds,
// switching versions atomically.
type Server struct {
	opts  Options
	store snapshot.Store
	cur   atomic.Pointer[replica]
	// metrics is nil without Options.Metrics.
	metrics *metrics
	// inFlight holds a token per request being read or scored
	// (Limits.MaxInFlight places), small one per small request beyond
	// them (smallPlaces).
	inFlight, small chan struct{}

	// Owned by the updating goroutine (Update's caller), under upd.
	upd    sync.Mutex
	chain  []*export.Manifest // the exports cur holds, full first
	closed bool               // Close was called
	// lastErr is the last Update's error ("" when it succeeded), for
	// Status; set under upd.
	lastErr atomic.Pointer[string]
	// refused are the reasons logged for exports that could not be used
	// (each names its export), so that each is logged once (at most
	// maxRefusals kept: beyond, they are forgotten and may be said again).
	refused map[string]bool
}

// New opens the store and loads its newest model; an empty store is not
// an error (Predict answers ErrNotReady until an export appears), a store
// that cannot be opened is.
func New(opts Options) (*Server, error) {
	if opts.Store == "" {
		return nil, errors.New("serve: no export store")
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Limits.EnsureDefaults()
	if opts.SplitCandidates == 0 {
		opts.SplitCandidates = defaultSplit
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	store, err := snapshot.OpenStore(opts.Store, "")
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s := &Server{opts: opts, store: store, inFlight: make(chan struct{}, opts.Limits.MaxInFlight),
		small: make(chan struct{}, smallPlaces(opts.Limits.MaxInFlight))}
	if opts.MaxBytes < 0 {
		store.Close()
		return nil, fmt.Errorf("serve: MaxBytes %d is negative", opts.MaxBytes)
	}
	if s.metrics, err = newMetrics(s, opts.Metrics); err != nil {
		store.Close()
		return nil, err
	}
	if _, err := s.Update(); err != nil && !errors.Is(err, export.ErrNoExport) {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the store, gives the model's memory back once its
// requests end (Predict answers ErrNotReady from then on), and withdraws
// the server's metrics from Options.Metrics. An Update after it does
// nothing.
func (s *Server) Close() error {
	s.upd.Lock()
	defer s.upd.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.metrics.unregister()
	if r := s.cur.Swap(nil); r != nil {
		r.release()
	}
	return s.store.Close()
}

// errClosed is Update's error after Close.
var errClosed = errors.New("serve: the server is closed")

// Version returns the export the server serves (0: none) and the trained
// samples at its cut.
func (s *Server) Version() (seq uint64, samples int64) {
	r := s.cur.Load()
	if r == nil {
		return 0, 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.seq, r.samples
}

// Run applies new exports every Poll until ctx ends.
func (s *Server) Run(ctx context.Context) {
	every(ctx, s.opts.Poll, func() {
		if _, err := s.Update(); err != nil && !errors.Is(err, export.ErrNoExport) && !errors.Is(err, errClosed) {
			s.opts.Logger.Warn("reading the export store", "store", s.opts.Store, "err", err)
		}
	})
}

// every calls fn every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// Update applies what the store holds beyond the served version: a newer
// full export and its deltas (a new model), or the deltas after the
// served export. Requests keep being served meanwhile, each by one whole
// version. A link that is refused (missing, half-written, corrupt) is
// logged once and the server stays on the last good version. It reports
// whether the served version changed.
func (s *Server) Update() (bool, error) {
	s.upd.Lock()
	defer s.upd.Unlock()
	if s.closed {
		return false, errClosed
	}
	changed, err := s.update()
	msg := ""
	if err != nil && !errors.Is(err, export.ErrNoExport) {
		msg = err.Error()
	}
	s.lastErr.Store(&msg)
	return changed, err
}

// update is Update under upd.
func (s *Server) update() (bool, error) {
	var cur *export.Manifest
	if len(s.chain) > 0 {
		cur = s.chain[len(s.chain)-1]
	}
	next, skipped, err := export.Next(s.store, cur)
	for _, e := range skipped {
		s.logRefusal(e)
	}
	if errors.Is(err, export.ErrNoExport) && len(skipped) > 0 {
		s.logRefusal(fmt.Errorf("nothing to serve from %s yet: no usable full export (each refusal is logged once)", s.opts.Store))
	}
	if err != nil {
		return false, err
	}
	if len(next) == 0 {
		return false, nil
	}
	start := time.Now()
	if next[0].Kind == export.KindFull {
		err = s.load(next)
	} else {
		err = s.advance(next)
	}
	if err != nil {
		s.opts.Logger.Error("applying exports failed: serving the last good version", "exports", seqs(next), "err", err)
		return false, err
	}
	seq, samples := s.Version()
	s.opts.Logger.Info("serving", "export", seq, "samples", samples, "applied", seqs(next),
		"seconds", time.Since(start).Seconds())
	return true, nil
}

// load builds a replica of a new chain (a full export and its deltas) and
// serves it; the old one is dropped once its requests end. The new one is
// built within what Options.MaxBytes leaves beside the old.
func (s *Server) load(chain []*export.Manifest) error {
	budget := int64(-1) // no bound
	if s.opts.MaxBytes > 0 {
		budget = s.opts.MaxBytes
		if old := s.cur.Load(); old != nil {
			budget -= old.mem.Load().tables
		}
	}
	r, err := s.build(chain, budget)
	if err != nil {
		return err
	}
	old := s.cur.Swap(r)
	s.chain = chain
	if old != nil {
		old.release() // once its requests end: its memory now, not at a GC
	}
	return nil
}

// build returns a new replica holding chain, whose tables may take at
// most budget bytes (-1: any).
func (s *Server) build(chain []*export.Manifest, budget int64) (_ *replica, err error) {
	r, err := newReplica(chain[0])
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.release() // its memory now, not at a GC
		}
	}()
	if err := r.applyFull(s.store, chain[0], budget); err != nil {
		return nil, err
	}
	for i := 1; i < len(chain); i++ { // one delta at a time: memory for one
		ds, err := r.readDeltas(s.store, chain[i:i+1])
		if err != nil {
			return nil, err
		}
		if err := r.fits(ds, budget); err != nil {
			return nil, err
		}
		r.applyDeltas(ds)
	}
	return r, nil
}

// advance applies deltas in place to the replica that serves: each is
// read into memory first, while requests go on, then all are applied
// under the replica's write lock, so that a request is scored by the
// version before them or the one after, never by part of one. A delta
// that cannot be read changes nothing. The memory a delta costs is its
// rows' (held until applied), not another copy of the model.
func (s *Server) advance(deltas []*export.Manifest) error {
	r := s.cur.Load()
	ds, err := r.readDeltas(s.store, deltas)
	if err != nil {
		return err
	}
	if s.opts.MaxBytes > 0 {
		if err := r.fits(ds, s.opts.MaxBytes); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.applyDeltas(ds)
	r.mu.Unlock()
	s.chain = append(s.chain, deltas...)
	return nil
}

// logRefusal logs why an export was refused, once per reason (a reason
// names its export): one being written (no manifest yet) at Info level,
// as news of what comes, not as damage; any other at Warn. The caller
// holds upd.
func (s *Server) logRefusal(err error) {
	msg := err.Error()
	if s.refused[msg] {
		return
	}
	if s.refused == nil || len(s.refused) >= maxRefusals {
		s.refused = map[string]bool{}
	}
	s.refused[msg] = true
	what := "serving the last good version"
	if s.cur.Load() == nil {
		what = "no model loaded yet"
	}
	if errors.Is(err, export.ErrIncomplete) {
		s.opts.Logger.Info("export not usable yet: "+what, "err", err)
		return
	}
	s.opts.Logger.Warn("export refused: "+what, "err", err)
}

// maxRefusals bounds the refusals remembered (Server.refused).
const maxRefusals = 1024

func seqs(ms []*export.Manifest) []uint64 {
	out := make([]uint64, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Seq)
	}
	return slices.Clip(out)
}
