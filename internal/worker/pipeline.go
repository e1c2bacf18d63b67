package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/internal/metrics"
	"github.com/xdlgo/xps/reader"
)

// Queue bounds of the pipeline. Groups are small (one sample for flat
// formats), batches large.
const (
	groupQueue = 256
	batchQueue = 2
)

// Lagger is implemented by streaming sources that know how far behind the
// newest data they are (samples or messages not yet read).
type Lagger interface{ Lag() int64 }

// run is the state of one Trainer.Run, owned by Run's goroutine.
type run struct {
	t            *Trainer
	res          *Result
	epoch        int
	trainDur     time.Duration
	uniq         int64
	lossSum      float64
	lossN        int
	lastProgress time.Time
	progSamples  int64
	progDur      time.Duration
	window       *window
	bytesBefore  int64 // BytesRead of the epochs before this one
	// srcBytes and srcLag mirror the source's Stats().Bytes and Lag()
	// (when it is a Lagger), stored by the goroutine that reads it.
	srcBytes atomic.Int64
	srcLag   atomic.Int64
	hasLag   bool
	// stream is the progressive validation of the whole run.
	stream *metrics.Stream
	// positions holds the position after the last trained sample of each
	// stream; lastCommit is when they were last committed.
	positions  map[string]reader.Position
	lastCommit time.Time
	dirty      bool // positions changed since the last commit
	// applied counts the samples trained on over the job (Options.Start's
	// and this run's); epochDone is set once the epoch's data has ended.
	applied   int64
	digest    uint64 // the applied samples' digests, summed
	epochDone bool
	// syncIter is the round of the epoch this worker pushes next (sync
	// mode).
	syncIter uint32
}

// positionList returns the positions sorted by stream.
func (r *run) positionList() []reader.Position { return sortedPositions(r.positions) }

// commit waits until every push has been applied, then hands the
// positions to Options.Commit.
func (r *run) commit(ctx context.Context) error {
	t := r.t
	r.lastCommit = time.Now()
	if t.opts.Commit == nil || !r.dirty || t.opts.Sync != nil { // sync mode: checkpoints go with the rounds
		return nil
	}
	r.dirty = false
	t.pushWG.Wait()
	if err := t.takePushErr(); err != nil {
		return err
	}
	c := Checkpoint{Epoch: r.epoch, EpochDone: r.epochDone, Positions: r.positionList(), Applied: r.applied, Digest: r.digest}
	if err := t.opts.Commit(ctx, c); err != nil {
		return fmt.Errorf("worker: commit reader positions: %w", err)
	}
	return nil
}

// pause stops at this batch boundary for a snapshot: every push applied,
// positions committed, then Options.Pause until the resume. Pulls already
// in flight (read-ahead) may still run: they change no row's values.
func (r *run) pause(ctx context.Context) error {
	t := r.t
	t.pushWG.Wait()
	if err := t.takePushErr(); err != nil {
		return err
	}
	r.dirty = r.dirty || len(r.positions) > 0
	if err := r.commit(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := t.opts.Pause(ctx); err != nil {
		return fmt.Errorf("worker: pause: %w", err)
	}
	r.lastProgress = r.lastProgress.Add(time.Since(start)) // the pause is not training time
	return nil
}

// noteSource records the source's progress after a Next (called by the
// goroutine that owns src).
func (r *run) noteSource(src reader.Source) {
	r.srcBytes.Store(src.Stats().Bytes)
	if l, ok := src.(Lagger); ok {
		r.srcLag.Store(l.Lag())
	}
}

// runEpoch trains one pass over the epoch's source.
func (r *run) runEpoch(ctx context.Context) error {
	t := r.t
	src, err := t.opts.Train(r.epoch)
	if err != nil {
		return fmt.Errorf("worker: open training data: %w", err)
	}
	r.bytesBefore = r.res.BytesRead
	r.srcBytes.Store(0)
	_, r.hasLag = src.(Lagger)
	defer func() {
		st := src.Stats()
		r.res.Skipped += st.Skipped
		r.res.BytesRead = r.bytesBefore + st.Bytes
		src.Close()
	}()
	builder, err := compress.NewBuilder(compress.Options{BatchSize: t.cfg.Train.BatchSize, Layout: t.layout})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if !*t.cfg.Train.Pipeline || t.opts.Sync != nil {
		err := r.sequential(ctx, src, builder)
		if err != nil && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	return r.pipelined(ctx, src, builder)
}

// sequential runs the stages one after another for every batch: read until
// a batch is full, pull, train, push and wait for the push.
func (r *run) sequential(ctx context.Context, src reader.Source, builder *compress.Builder) error {
	s := r.t.newState()
	g := new(reader.Group)
	drain := func() error {
		for b := builder.Take(); b != nil; b = builder.Take() {
			start := time.Now()
			s.cb = b
			if err := r.pullStep(ctx, s); err != nil {
				return err
			}
			if err := r.train(ctx, s, true, start); err != nil {
				return err
			}
			builder.Recycle(b)
		}
		return nil
	}
	for {
		start := time.Now()
		err := src.Next(ctx, g)
		r.noteSource(src)
		r.trainDur += time.Since(start) // reading is part of the sequential loop
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, reader.ErrIdle) { // a quiet stream: train on the partial batch
			builder.Flush()
			if err := drain(); err != nil {
				return err
			}
			if err := r.commit(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		start = time.Now()
		if err := builder.Add(g); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		r.trainDur += time.Since(start)
		if err := drain(); err != nil {
			return err
		}
	}
	builder.Flush()
	return drain()
}

// pipelined runs read/parse, batch/compress and pull as goroutines joined by
// bounded queues, and trains on this goroutine. Every stage returns when ctx
// ends or a stage fails; all are joined before pipelined returns.
func (r *run) pipelined(parent context.Context, src reader.Source, builder *compress.Builder) error {
	t := r.t
	depth := max(*t.cfg.Train.PrefetchBatches, 1)
	ctx, stop := context.WithCancel(parent)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error // the first stage failure; written once, read after wg.Wait
	cancel := func(err error) {
		errOnce.Do(func() { firstErr = err })
		stop()
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	freeGroups := make(chan *reader.Group, groupQueue)
	for i := 0; i < groupQueue; i++ {
		freeGroups <- new(reader.Group)
	}
	groups := make(chan *reader.Group, groupQueue)
	batches := make(chan *compress.Batch, batchQueue)
	recycle := make(chan *compress.Batch, batchQueue+depth+4)
	freeStates := make(chan *state, depth+1)
	for i := 0; i < depth+1; i++ {
		freeStates <- t.newState()
	}
	ready := make(chan *state, depth-1) // + the one the pull stage holds = depth ahead

	wg.Add(3)
	go func() { // read/parse
		defer wg.Done()
		defer close(groups)
		for {
			var g *reader.Group
			select {
			case g = <-freeGroups:
			case <-ctx.Done():
				return
			}
			err := src.Next(ctx, g)
			r.noteSource(src)
			if errors.Is(err, reader.ErrIdle) {
				g.Reset(0) // a group without levels: the batch stage flushes
			} else if err != nil {
				if !errors.Is(err, io.EOF) {
					cancel(err)
				}
				return
			}
			select {
			case groups <- g:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { // batch/compress
		defer wg.Done()
		defer close(batches)
		emit := func() bool {
			for b := builder.Take(); b != nil; b = builder.Take() {
				select {
				case batches <- b:
				case <-ctx.Done():
					return false
				}
			}
			return true
		}
		for g := range groups {
			for done := false; !done; {
				select {
				case b := <-recycle:
					builder.Recycle(b)
				default:
					done = true
				}
			}
			var err error
			if len(g.Levels) == 0 { // the source was idle: close the partial batch
				builder.Flush()
			} else {
				err = builder.Add(g)
			}
			freeGroups <- g // capacity holds every group: never blocks
			if err != nil {
				cancel(fmt.Errorf("worker: %w", err))
				return
			}
			if !emit() {
				return
			}
		}
		if ctx.Err() == nil {
			builder.Flush()
			emit()
		}
	}()
	go func() { // pull (prefetch)
		defer wg.Done()
		defer close(ready)
		for b := range batches {
			var s *state
			select {
			case s = <-freeStates:
			case <-ctx.Done():
				return
			}
			s.cb = b
			if err := t.pull(ctx, s, true); err != nil {
				cancel(err)
				return
			}
			select {
			case ready <- s:
			case <-ctx.Done():
				return
			}
		}
	}()

	var commitTick <-chan time.Time // commits positions while no batch comes
	if t.opts.Commit != nil && t.opts.CommitEvery > 0 {
		tk := time.NewTicker(t.opts.CommitEvery)
		defer tk.Stop()
		commitTick = tk.C
	}
	for {
		start := time.Now()
		var s *state
		var ok bool
	wait:
		select {
		case s, ok = <-ready:
		case <-ctx.Done():
		case <-commitTick:
			if r.dirty && time.Since(r.lastCommit) >= t.opts.CommitEvery {
				if err := r.commit(parent); err != nil {
					cancel(err)
					break
				}
			}
			goto wait
		}
		r.res.FetchWaitSeconds += time.Since(start).Seconds()
		if !ok {
			break
		}
		if err := r.train(parent, s, false, start); err != nil {
			cancel(err)
			break
		}
		select {
		case recycle <- s.cb:
		default: // the builder allocates anew
		}
		s.cb = nil
		freeStates <- s // capacity holds every state: never blocks
	}
	stop()
	wg.Wait()
	if parent.Err() != nil {
		return context.Cause(parent)
	}
	return firstErr
}

// train runs one step on s (pulled) and accounts for it; start is when the
// batch was first waited for.
func (r *run) train(ctx context.Context, s *state, wait bool, start time.Time) error {
	t, res := r.t, r.res
	if err := r.joinRound(s); err != nil {
		return err
	}
	loss, err := t.step(ctx, s, wait)
	if err != nil {
		return err
	}
	if s.round != nil {
		r.syncIter++
	}
	b := s.cb
	d := time.Since(start)
	r.trainDur += d
	r.progDur += d
	res.Samples += int64(b.N)
	r.applied += int64(b.N)
	r.digest += b.Digest
	r.progSamples += int64(b.N)
	res.Batches++
	for k := range res.Nodes {
		res.Nodes[k] += int64(b.Sparse.Nodes(k))
	}
	res.Position = b.End
	for _, p := range b.Ends {
		r.positions[p.File] = p
	}
	r.dirty = r.dirty || len(b.Ends) > 0
	r.stream.Add(b.Labels[:b.N], s.probs[:b.N])
	r.uniq += int64(b.Sparse.Unique())
	r.lossSum += loss
	r.lossN++
	r.window.add(b.Labels[:b.N], s.probs[:b.N])
	res.BytesRead = r.bytesBefore + r.srcBytes.Load()
	cfg := t.cfg.Train
	if t.opts.Progress != nil && time.Since(r.lastProgress) >= cfg.ProgressEvery {
		r.progress()
	}
	if t.opts.Commit != nil && t.opts.CommitEvery > 0 && time.Since(r.lastCommit) >= t.opts.CommitEvery {
		if err := r.commit(ctx); err != nil {
			return err
		}
	}
	if t.opts.PauseRequested != nil && t.opts.PauseRequested() {
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
	if cfg.EvalEvery > 0 && res.Batches%int64(cfg.EvalEvery) == 0 {
		if _, err := t.evalAndReport(ctx, res, fmt.Sprintf("batch %d", res.Batches)); err != nil {
			return err
		}
	}
	return nil
}

// progress prints one progress line: samples/s since the last line, the
// running loss of the epoch, the AUC of the training batches' predictions
// (made before each batch was trained on) since the last line, the
// compression ratio, and the source's lag when it has one.
func (r *run) progress() {
	t, res := r.t, r.res
	var b strings.Builder
	fmt.Fprintf(&b, "%s: epoch %d/%d batch %d samples %d loss %.4f", t.opts.Name, r.epoch, t.cfg.Train.Epochs,
		res.Batches, res.Samples, r.lossSum/float64(max(r.lossN, 1)))
	if auc, ok := r.window.auc(); ok {
		fmt.Fprintf(&b, " auc %.4f", auc)
	}
	if r.stream.N() > 0 {
		fmt.Fprintf(&b, " (running auc %.4f logloss %.4f)", r.stream.AUC(), r.stream.LogLoss())
	}
	fmt.Fprintf(&b, " %.0f samples/s", float64(r.progSamples)/r.progDur.Seconds())
	if len(res.Nodes) > 1 && res.Nodes[1] > 0 {
		fmt.Fprintf(&b, " compression %.1fx", float64(res.Nodes[0])/float64(res.Nodes[1]))
	}
	if r.hasLag {
		fmt.Fprintf(&b, " lag %d", r.srcLag.Load())
	}
	fmt.Fprintln(t.opts.Progress, b.String())
	r.lastProgress, r.progSamples, r.progDur = time.Now(), 0, 0
	r.window.reset()
}

// window collects the training predictions since the last progress line
// (progressive validation: each prediction was made before its batch was
// trained on).
type window struct{ labels, probs []float32 }

func newWindow() *window { return &window{} }

const maxWindow = 1 << 20

func (w *window) add(labels, probs []float32) {
	if len(w.labels)+len(labels) > maxWindow {
		return
	}
	w.labels = append(w.labels, labels...)
	w.probs = append(w.probs, probs...)
}

func (w *window) reset() { w.labels, w.probs = w.labels[:0], w.probs[:0] }

func (w *window) auc() (float64, bool) {
	var pos, neg bool
	for _, y := range w.labels {
		pos, neg = pos || y > 0.5, neg || y <= 0.5
	}
	if !pos || !neg {
		return 0, false
	}
	return metrics.AUC(w.labels, w.probs), true
}
