package ctrtrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/tracker"
	"github.com/xdlgo/xps/job/trainrun"
	"github.com/xdlgo/xps/model/metrics"
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

// run is the state of one Trainer.Run, owned by Run's goroutine. What
// the run decides (when to commit, pause, evaluate, open the next epoch)
// is its tracker's; run executes the tracker's actions.
type run struct {
	t            *Trainer
	res          *Result
	tk           *tracker.Tracker
	drv          trainrun.Driver // drives tk through run's Steps
	trainDur     time.Duration
	mallocs      uint64 // the process's heap allocations when Run started
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
	// syncIter is the round of the epoch this worker pushes next (sync
	// mode).
	syncIter uint32
	// groups and states are the pools of the passes' stages, made by the
	// first pass that needs them and reused by the next (every stage of a
	// pass is joined before it returns), so that a later epoch does not
	// grow new buffers.
	groups []*reader.Group
	states []*state
	// reread reads a pipelined batch's rows shared with the batch before
	// it again (nil when train.reread_shared is off).
	reread *reread
}

// pools returns the run's first n groups and m batch states, making the
// ones missing.
func (r *run) pools(n, m int) ([]*reader.Group, []*state) {
	for len(r.groups) < n {
		r.groups = append(r.groups, new(reader.Group))
	}
	for len(r.states) < m {
		r.states = append(r.states, r.t.newState())
	}
	return r.groups[:n], r.states[:m]
}

// step hands ev to the run's driver (trainrun.Driver: the tracker, and
// the actions it returns carried out by run's Steps).
func (r *run) step(ctx context.Context, ev tracker.Event) ([]tracker.Action, error) {
	return r.drv.Step(ctx, ev)
}

// Evaluate carries out the tracker's Evaluate (trainrun.Steps).
func (r *run) Evaluate(ctx context.Context, e tracker.Evaluate) error {
	_, err := r.t.evalAndReport(ctx, r.res, e.When)
	return err
}

// Rollback ends the run on the best model kept (trainrun.Steps).
func (r *run) Rollback(ctx context.Context, reason string) error {
	r.res.Ended, r.res.Epochs = reason, r.tk.Trained()
	return r.t.opts.Job.RollBack(ctx, reason)
}

// Barrier waits for the other workers at the end of the data
// (trainrun.Rounds).
func (r *run) Barrier(ctx context.Context) error {
	return r.t.opts.Job.Barrier(ctx)
}

// Reopen reopens the source on a new deal (trainrun.Rounds).
func (r *run) Reopen(ctx context.Context) error { return r.t.opts.Job.Reopen(ctx) }

// Commit waits until every push has been applied, then stores c
// (Job.Commit).
func (r *run) Commit(ctx context.Context, c Checkpoint) error {
	t := r.t
	if err := t.drain(); err != nil {
		return err
	}
	if err := t.opts.Job.Commit(ctx, c); err != nil {
		return fmt.Errorf("worker: commit reader positions: %w", err)
	}
	return nil
}

// Pause stops at this batch boundary for a snapshot: every push applied,
// the checkpoint committed (when given), then the job's pause until the
// resume. Pulls already in flight (read-ahead) may still run: they change
// no row's values.
func (r *run) Pause(ctx context.Context, c *Checkpoint) error {
	t := r.t
	if err := t.drain(); err != nil {
		return err
	}
	if c != nil {
		if err := r.Commit(ctx, *c); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := t.opts.Job.Pause(ctx); err != nil {
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

// epoch trains one epoch: passes over its source, reopened when its
// partitions are dealt anew, until the data ends. It returns the actions
// of the epoch's end that remain (the next Open).
func (r *run) epoch(ctx context.Context, epoch int) ([]tracker.Action, error) {
	t := r.t
	r.lossSum, r.lossN = 0, 0
	if epoch > r.tk.First() {
		r.syncIter = 0
	}
	for {
		err := r.pass(ctx, epoch)
		switch {
		case err == nil:
			acts, err := r.step(ctx, tracker.EpochEnded{Now: time.Now()})
			if err != nil && ctx.Err() != nil {
				// Stopped as the epoch ended (its commit, the barrier):
				// the commit may not have been carried out.
				return nil, r.stopped(ctx, err)
			}
			return acts, err
		case ctx.Err() != nil:
			return nil, r.stopped(ctx, err)
		case !errors.Is(err, ErrReopen) || t.opts.Job == nil:
			return nil, err
		}
		if t.opts.Progress != nil {
			fmt.Fprintf(t.opts.Progress, "%s: %v; committing positions, reopening\n", t.opts.Name, err)
		}
		if _, err := r.step(ctx, tracker.Redealt{Now: time.Now()}); err != nil {
			return nil, err
		}
	}
}

// stopped ends a run whose context ended (err is why it stopped): it
// stores what was trained on (and, for a stream, whose stop is its end,
// evaluates on the test set), with time of its own (trainrun's
// Driver.Stopped), so that the checkpoint in the model counts every push
// the shards applied (a lost lease then costs a pause, not a rollback); a
// second Ctrl-C ends the process.
func (r *run) stopped(ctx context.Context, err error) error {
	_, err = r.drv.Stopped(ctx, err, stopTimeout)
	return err
}

// stopTimeout bounds what a stopped run still does: the last commit and,
// for a stream, the evaluation on the test set.
const stopTimeout = 2 * time.Minute

// pass trains one pass over the epoch's source, until it ends or fails.
func (r *run) pass(ctx context.Context, epoch int) error {
	t := r.t
	src, err := t.opts.Train(epoch)
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
	groups, states := r.pools(1, 1)
	g, s := groups[0], states[0]
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
			if _, err := r.step(ctx, tracker.Idle{Now: time.Now()}); err != nil {
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

// pipeline is one pass of the pipelined stages: read/parse, batch/compress
// and pull run as goroutines joined by bounded queues; training runs on
// the pass's goroutine. Every stage returns when ctx ends or a stage
// fails; all are joined before the pass returns.
type pipeline struct {
	r       *run
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error // the first stage failure; written once, read after wg.Wait

	freeGroups, groups chan *reader.Group
	batches, recycle   chan *compress.Batch
	freeStates, ready  chan *state
	depth              int // pulls in flight at most (train.prefetch_batches, at least 1)
}

// fail records the pass's first stage failure and stops every stage.
func (p *pipeline) fail(err error) {
	p.errOnce.Do(func() { p.err = err })
	p.stop()
}

// pipelined runs one pass with the stages in parallel.
func (r *run) pipelined(parent context.Context, src reader.Source, builder *compress.Builder) error {
	depth := max(*r.t.cfg.Train.PrefetchBatches, 1)
	p := &pipeline{r: r, depth: depth, freeGroups: make(chan *reader.Group, groupQueue), groups: make(chan *reader.Group, groupQueue),
		batches: make(chan *compress.Batch, batchQueue), recycle: make(chan *compress.Batch, batchQueue+depth+4),
		freeStates: make(chan *state, depth+1), ready: make(chan *state, depth-1)} // the depth+1 states bound the batches ahead: depth, one training
	p.ctx, p.stop = context.WithCancel(parent)
	defer func() {
		p.stop()
		p.wg.Wait()
	}()
	groups, states := r.pools(groupQueue, depth+1)
	for _, g := range groups {
		p.freeGroups <- g
	}
	for _, s := range states {
		p.freeStates <- s
	}
	if r.reread != nil {
		r.reread.reset()
	}
	p.wg.Add(3)
	go p.read(src)
	go p.batch(builder)
	go p.pull()
	p.trainLoop(parent)
	p.stop()
	p.wg.Wait()
	if parent.Err() != nil {
		return context.Cause(parent)
	}
	return p.err
}

// read is the read/parse stage: it fills groups from the pool, an idle
// source giving a group without levels (the batch stage flushes on it).
func (p *pipeline) read(src reader.Source) {
	defer p.wg.Done()
	defer close(p.groups)
	for {
		var g *reader.Group
		select {
		case g = <-p.freeGroups:
		case <-p.ctx.Done():
			return
		}
		err := src.Next(p.ctx, g)
		p.r.noteSource(src)
		if errors.Is(err, reader.ErrIdle) {
			g.Reset(0)
		} else if err != nil {
			if !errors.Is(err, io.EOF) {
				p.fail(err)
			}
			return
		} else if g.Next == (reader.Position{}) {
			p.fail(fmt.Errorf("worker: the source gave the group at %v without the position after it (reader.Group.Next): the model could not store where to resume, and a resumed job would train it again", g.Pos))
			return
		}
		select {
		case p.groups <- g:
		case <-p.ctx.Done():
			return
		}
	}
}

// batch is the batch/compress stage: groups into batches, recycling the
// batches training is done with.
func (p *pipeline) batch(builder *compress.Builder) {
	defer p.wg.Done()
	defer close(p.batches)
	emit := func() bool {
		for b := builder.Take(); b != nil; b = builder.Take() {
			select {
			case p.batches <- b:
			case <-p.ctx.Done():
				return false
			}
		}
		return true
	}
	for g := range p.groups {
		for done := false; !done; {
			select {
			case b := <-p.recycle:
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
		p.freeGroups <- g // capacity holds every group: never blocks
		if err != nil {
			p.fail(fmt.Errorf("worker: %w", err))
			return
		}
		if !emit() {
			return
		}
	}
	if p.ctx.Err() == nil {
		builder.Flush()
		emit()
	}
}

// pull is the pull (prefetch) stage: each batch's rows and the dense
// parameters into a free state. Up to depth pulls are in flight at once,
// on depth pullers that take the batches in turn (batch i goes to puller
// i mod depth), and the stage hands the pulled states to training in the
// batches' order by collecting from the pullers in the same turn. A pull
// is a round trip to every shard the batch touches: with one at a time,
// its latency, not the shards' or the worker's work, bounds the job.
func (p *pipeline) pull() {
	defer p.wg.Done()
	defer close(p.ready)
	pullers := make([]puller, p.depth)
	var wg sync.WaitGroup
	for i := range pullers {
		pullers[i] = puller{in: make(chan *state, 1), out: make(chan *state, 1)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.puller(pullers[i])
		}()
	}
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.dispatch(pullers)
	}()
	for i := 0; ; i = (i + 1) % len(pullers) {
		var s *state
		var ok bool
		select {
		case s, ok = <-pullers[i].out:
		case <-p.ctx.Done():
			return
		}
		if !ok {
			return
		}
		select {
		case p.ready <- s:
		case <-p.ctx.Done():
			return
		}
	}
}

// puller is one of the pull stage's pullers: states with their batch in,
// pulled states out, in order.
type puller struct{ in, out chan *state }

// dispatch gives each batch a free state and hands it to the next puller
// in turn; it closes the pullers' inputs when the batches end.
func (p *pipeline) dispatch(pullers []puller) {
	defer func() {
		for _, q := range pullers {
			close(q.in)
		}
	}()
	i := 0
	for b := range p.batches {
		var s *state
		select {
		case s = <-p.freeStates:
		case <-p.ctx.Done():
			return
		}
		s.cb = b
		select {
		case pullers[i].in <- s:
		case <-p.ctx.Done():
			return
		}
		i = (i + 1) % len(pullers)
	}
}

// puller pulls the states q receives, in order, until its input closes
// or a pull fails (which stops every stage).
func (p *pipeline) puller(q puller) {
	defer close(q.out)
	for s := range q.in {
		if err := p.r.t.pull(p.ctx, s, true); err != nil {
			p.fail(err)
			return
		}
		select {
		case q.out <- s:
		case <-p.ctx.Done():
			return
		}
	}
}

// idlePauseCheck is how often the train stage, waiting for a batch, looks
// for a pause request (a snapshot or an export of a quiet stream).
const idlePauseCheck = 50 * time.Millisecond

// trainLoop is the train/push stage, on the pass's goroutine: it trains
// every pulled batch, and ticks the tracker while none comes (a quiet
// stream's positions are committed on time, and a pause asked meanwhile
// is taken at once).
func (p *pipeline) trainLoop(parent context.Context) {
	r := p.r
	var commitTick, pauseTick <-chan time.Time
	if every := r.t.opts.CommitEvery; r.t.opts.Job != nil && every > 0 {
		tk := time.NewTicker(every)
		defer tk.Stop()
		commitTick = tk.C
	}
	if r.t.opts.Job != nil { // a pause asked while no batch comes
		tk := time.NewTicker(idlePauseCheck)
		defer tk.Stop()
		pauseTick = tk.C
	}
	start := time.Now()
	for {
		select {
		case s, ok := <-p.ready:
			r.res.FetchWaitSeconds += time.Since(start).Seconds()
			if !ok {
				return
			}
			if err := r.trainFresh(parent, s, start); err != nil {
				p.fail(err)
				return
			}
			select {
			case p.recycle <- s.cb:
			default: // the builder allocates anew
			}
			s.cb = nil
			p.freeStates <- s // capacity holds every state: never blocks
			start = time.Now()
		case now := <-commitTick:
			if _, err := r.step(parent, tracker.Tick{Now: now}); err != nil {
				p.fail(err)
				return
			}
		case now := <-pauseTick:
			if !r.t.pauseRequested() {
				continue
			}
			if _, err := r.step(parent, tracker.Tick{Now: now, PauseRequested: true}); err != nil {
				p.fail(err)
				return
			}
		case <-p.ctx.Done():
			r.res.FetchWaitSeconds += time.Since(start).Seconds()
			return
		}
	}
}

// trainFresh is train for the pipeline: s's shared rows read again first
// when train.reread_shared is on, and its ids kept for the next batch.
func (r *run) trainFresh(ctx context.Context, s *state, start time.Time) error {
	if r.reread == nil {
		return r.train(ctx, s, false, start)
	}
	t0 := time.Now()
	n, err := r.reread.refresh(ctx, s)
	if err != nil {
		return err
	}
	r.res.RereadRows += int64(n)
	r.res.RereadSeconds += time.Since(t0).Seconds()
	if err := r.train(ctx, s, false, start); err != nil {
		return err
	}
	r.reread.remember(s)
	return nil
}

// train runs one step on s (pulled) and accounts for it; start is when the
// batch was first waited for.
func (r *run) train(ctx context.Context, s *state, wait bool, start time.Time) error {
	t, res := r.t, r.res
	b := s.cb
	ev := tracker.BatchTrained{Samples: b.N, Digest: b.Digest, Ends: b.Ends}
	if err := r.joinRound(s, ev); err != nil {
		return err
	}
	origin := ams.Origin{Worker: t.opts.Name, Batch: uint64(r.tk.Batches()), Samples: uint32(b.N), Digest: b.Digest}
	loss, err := t.step(ctx, s, origin, wait)
	if err != nil {
		return err
	}
	if s.round != nil {
		r.syncIter++
	}
	d := time.Since(start)
	r.trainDur += d
	r.progDur += d
	res.Samples += int64(b.N)
	r.progSamples += int64(b.N)
	res.Batches++
	for k := range res.Nodes {
		res.Nodes[k] += int64(b.Sparse.Nodes(k))
	}
	res.Position = b.End
	r.stream.Add(b.Labels[:b.N], s.probs[:b.N])
	r.uniq += int64(b.Sparse.Unique())
	r.lossSum += loss
	r.lossN++
	r.window.add(b.Labels[:b.N], s.probs[:b.N])
	res.BytesRead = r.bytesBefore + r.srcBytes.Load()
	ev.Now = time.Now()
	ev.PauseRequested = t.pauseRequested()
	_, err = r.step(ctx, ev)
	return err
}

// Progress makes one progress report (job.Progress): samples/s since the
// last one, the running loss of the epoch, the AUC of the training
// batches' predictions (made before each batch was trained on) since the
// last one, the compression ratio, the source's lag when it has one, and
// the rows the shards hold (with what admission, expiry and the budget
// did); it prints it as a line and hands it to OnProgress.
func (r *run) Progress(ctx context.Context) {
	t, res := r.t, r.res
	p := job.Progress{Worker: t.opts.Name, Time: time.Now(), Epoch: r.tk.Epoch(), Epochs: t.cfg.Train.Epochs,
		Batches: res.Batches, Samples: res.Samples, Loss: r.lossSum / float64(max(r.lossN, 1)),
		SamplesPerSecond: float64(r.progSamples) / r.progDur.Seconds(), AUC: math.NaN(),
		RunningAUC: math.NaN(), RunningLogLoss: math.NaN(), Lag: -1, Rows: -1}
	p.TestAUC, p.TestLogLoss = t.testFigures()
	if auc, ok := r.window.auc(); ok {
		p.AUC = auc
	}
	if r.stream.N() > 0 {
		p.RunningAUC, p.RunningLogLoss = r.stream.AUC(), r.stream.LogLoss()
	}
	if r.hasLag {
		p.Lag = r.srcLag.Load()
	}
	r.tables(ctx, &p)
	if t.opts.Progress != nil {
		fmt.Fprintln(t.opts.Progress, progressLine(&p, res.Nodes))
	}
	if t.opts.OnProgress != nil {
		t.opts.OnProgress(p)
	}
	r.lastProgress, r.progSamples, r.progDur = time.Now(), 0, 0
	r.window.reset()
}

// progressLine is the printed form of a progress report.
func progressLine(p *job.Progress, nodes []int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: epoch %d/%d batch %d samples %d loss %.4f", p.Worker, p.Epoch, p.Epochs, p.Batches, p.Samples, p.Loss)
	if !math.IsNaN(p.AUC) {
		fmt.Fprintf(&b, " auc %.4f", p.AUC)
	}
	if !math.IsNaN(p.RunningAUC) {
		// The run's progressive logloss is the epoch's loss while the
		// run is in its first epoch: then it is printed once.
		fmt.Fprintf(&b, " (running auc %.4f", p.RunningAUC)
		if l := fmt.Sprintf("%.4f", p.RunningLogLoss); l != fmt.Sprintf("%.4f", p.Loss) {
			fmt.Fprintf(&b, " logloss %s", l)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %.0f samples/s", p.SamplesPerSecond)
	if len(nodes) > 1 && nodes[1] > 0 {
		fmt.Fprintf(&b, " compression %.1fx", float64(nodes[0])/float64(nodes[1]))
	}
	if p.Lag >= 0 {
		fmt.Fprintf(&b, " lag %d", p.Lag)
	}
	if p.Rows >= 0 {
		fmt.Fprintf(&b, " rows %d (%.1f MiB)", p.Rows, float64(p.RowBytes)/(1<<20))
	}
	if p.NotAdmitted > 0 {
		fmt.Fprintf(&b, " not-admitted %d", p.NotAdmitted)
	}
	if p.Expired > 0 {
		fmt.Fprintf(&b, " expired %d", p.Expired)
	}
	if p.Evicted > 0 {
		fmt.Fprintf(&b, " evicted %d", p.Evicted)
	}
	if p.ColdRows > 0 {
		fmt.Fprintf(&b, " cold %d (DRAM hits %.3f)", p.ColdRows, p.HitRatio)
	}
	return b.String()
}

// tables fills a report's rows, summed over the shards, and the counters
// of admission, expiry and the budget. Asking the shards takes one round
// trip; a shard that does not answer within a second leaves them out.
func (r *run) tables(ctx context.Context, p *job.Progress) {
	if r.t.cl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	tables, err := r.t.cl.Tables(ctx)
	if err != nil {
		return
	}
	var u ams.TableUsage
	for _, t := range tables {
		u.Add(t)
	}
	p.Rows, p.RowBytes = int64(u.Rows), int64(u.RowBytes)
	p.NotAdmitted, p.Expired, p.Evicted = int64(u.FilteredPulls+u.FilteredPushes), int64(u.Expired), int64(u.Evicted)
	if u.Tier.Lookups > 0 {
		p.ColdRows, p.HitRatio = u.Tier.ColdRows, u.Tier.HitRatio()
	}
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
