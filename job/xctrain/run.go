package xctrain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/job/tracker"
	"github.com/xdlgo/xps/job/trainrun"
	"github.com/xdlgo/xps/sparsenet/slide"
)

// run is the state of one Run, owned by Run's goroutine. What the run
// decides (when to commit, pause, evaluate, open the next epoch) is its
// tracker's (package tracker); run executes the tracker's actions.
type run struct {
	t        *Trainer
	res      *Result
	tk       *tracker.Tracker
	drv      trainrun.Driver // drives tk through run's Steps
	epoch    int
	nbatches int
	batch    int // within the epoch
	lossSum  float64
	lossN    int
	trainDur time.Duration
	fetch    time.Duration
	// progress window
	lineSamples int64
	lineDur     time.Duration
	window      slide.Precision
	total       slide.Precision
	// leftChecked is when peersLeft last asked etcd.
	leftChecked time.Time
}

// Run trains for train.epochs epochs over the training data (shuffled per
// epoch when train.shuffle is set), evaluating on the test set every
// train.eval_every batches and after each epoch, and returns the summary.
// Evaluations see every push before them applied. In a cluster (a
// Pauser) the run stores its progress every second and serves the
// scheduler's pauses, writing the layer into the snapshots (snapshot.go).
func (t *Trainer) Run(ctx context.Context) (res Result, err error) {
	r := &run{t: t, res: &res}
	r.describe()
	var start checkpoint.Checkpoint
	if t.start != nil {
		start, res.Resumed = *t.start, t.start
	}
	cfg := t.cfg.Train
	opts := tracker.Options{Epochs: cfg.Epochs, Start: start, Commits: t.opts.Job != nil,
		EvalEvery: cfg.EvalEvery, Evaluate: t.opts.Test != nil,
		Validate: t.opts.Valid != nil, Higher: config.HigherIsBetter(cfg.ValidMetric), MinDelta: cfg.MinDelta,
		Patience: cfg.Patience, KeepBest: t.keepsBest(), Final: t.opts.Final}
	if opts.Commits {
		opts.CommitEvery = commitEvery
	}
	if t.opts.Progress != nil {
		opts.ProgressEvery = cfg.ProgressEvery
	}
	r.tk = tracker.New(opts)
	r.drv = trainrun.Driver{Name: "xctrain", Tracker: r.tk, Model: r, Drain: t.waitPushes}
	if s, ok := t.out.(*shared); ok {
		s.w.Waiting = r.inRound
		defer func() { s.w.Waiting = nil }()
	}
	res.Epochs = start.Epoch // a run that trains no epoch (Final) ends at its start
	defer func() {
		if perr := t.waitPushes(); err == nil {
			err = perr
		}
		r.summarize()
		res.Best = r.tk.Best()
	}()
	acts, err := r.step(ctx, tracker.Started{Now: time.Now()})
	if err == nil {
		err = tracker.Epochs(acts, func(open tracker.Open) ([]tracker.Action, error) { return r.runEpoch(ctx, open) })
	}
	if err != nil && ctx.Err() != nil && opts.Commits {
		err = r.stopped(ctx, err)
	}
	return res, err
}

// stopped ends a run whose context ended (err is why): it stores the
// checkpoint of every batch trained (the tracker's Stopped commits), with
// time of its own, and keeps it in Result.Stopped, so that the stop's
// snapshot (job.Env.SaveOnStop) names where the run got to.
func (r *run) stopped(ctx context.Context, err error) error {
	cp, err := r.drv.Stopped(ctx, err, stopTimeout)
	if cp != nil {
		r.res.Stopped = cp
	}
	return err
}

// stopTimeout bounds the commit of a stopped run.
const stopTimeout = time.Minute

// describe fills the layer's shape into the summary.
func (r *run) describe() {
	t, res := r.t, r.res
	p := t.params
	oc := t.cfg.Model.Output
	res.Labels, res.InputDim, res.Sparsity, res.Hash = t.labels, t.net.OutputWidth(), oc.Sparsity, oc.Family.String()
	res.K, res.L, res.R = p.K, p.L, p.R
	res.LayerBytes = t.out.ParamBytes() + t.out.TablesBytes()
}

// summarize fills the run's figures into the summary (also of a run
// stopped early).
func (r *run) summarize() {
	res := r.res
	res.Seconds = r.trainDur.Seconds()
	if res.Seconds > 0 {
		res.SamplesPerSecond = float64(res.Samples) / res.Seconds
	}
	res.Progressive, res.ProgressiveSamples = patk(&r.total), r.total.N()
	res.FetchWaitSeconds, res.PushWaitSeconds = r.fetch.Seconds(), r.t.pushes.Waited().Seconds()
	r.t.describeOwners(res)
}

// step hands ev to the run's driver (trainrun.Driver: the tracker, and
// the actions it returns carried out by run's Steps).
func (r *run) step(ctx context.Context, ev tracker.Event) ([]tracker.Action, error) {
	return r.drv.Step(ctx, ev)
}

// Commit stores the job's progress c (trainrun.Steps).
func (r *run) Commit(ctx context.Context, c checkpoint.Checkpoint) error {
	return r.t.commitProgress(ctx, c)
}

// Pause serves the scheduler's pause (trainrun.Steps).
func (r *run) Pause(ctx context.Context, c *checkpoint.Checkpoint) error {
	return r.t.snapshotPause(ctx, c)
}

// Evaluate scores the test set once every push is applied
// (trainrun.Steps).
func (r *run) Evaluate(ctx context.Context, e tracker.Evaluate) error {
	if err := r.t.waitPushes(); err != nil { // the evaluation sees every update before it
		return err
	}
	return r.evaluate(ctx, e.When, e.Final)
}

// Progress prints a progress line (trainrun.Steps).
func (r *run) Progress(context.Context) { r.progressLine() }

// Pin keeps the model as the best so far (trainrun.Steps).
func (r *run) Pin(ctx context.Context, c checkpoint.Checkpoint) error {
	return r.t.keepBest(ctx, c)
}

// Rollback ends the run on the best model kept (trainrun.Steps).
func (r *run) Rollback(ctx context.Context, reason string) error {
	r.res.Ended, r.res.Epochs = reason, r.tk.Trained()
	return r.t.opts.Job.RollBack(ctx, reason)
}

func (r *run) evaluate(ctx context.Context, when string, final bool) error {
	t := r.t
	e, err := t.Evaluate(ctx, final)
	if err != nil {
		return err
	}
	e.When = when
	r.res.Evals = append(r.res.Evals, e)
	r.res.Test = e
	if w := t.opts.Progress; w != nil {
		fmt.Fprintf(w, "%s: eval after %s on %d test samples:", t.opts.Name, when, e.Samples)
		if e.Sparse != nil {
			fmt.Fprintf(w, " sparse inference %v;", *e.Sparse)
		}
		if e.Dense != nil {
			fmt.Fprintf(w, " dense inference %v;", *e.Dense)
		}
		fmt.Fprintf(w, " (%.1fs", e.Seconds)
		if e.RehashSeconds > 0 {
			fmt.Fprintf(w, ", rehash %.1fs", e.RehashSeconds)
		}
		if it := e.InferTune; it != nil {
			fmt.Fprintf(w, "; sparse inference calibrated in %.1fs%s (training tables %.3f)", it.Seconds, it.describe(), it.TrainingAgreement)
		}
		if e.Candidates > 0 {
			fmt.Fprintf(w, "; the LSH candidates (%.0f) hold %.3f of the exact top-1, %.3f of the top-5", e.Candidates, e.Recall1, e.Recall5)
		}
		if e.SparseMs > 0 || e.DenseMs > 0 {
			fmt.Fprintf(w, "; one-sample latency sparse %.2f ms, dense %.2f ms", e.SparseMs, e.DenseMs)
		}
		fmt.Fprintln(w, ")")
	}
	return nil
}

// runEpoch trains the epoch open names, from its batch: a pull stage (its
// own goroutine, up to train.prefetch_batches batches ahead) feeds the
// training stage (this goroutine), which pushes asynchronously. It
// returns the actions of the epoch's end that remain (the next Open).
func (r *run) runEpoch(ctx context.Context, open tracker.Open) ([]tracker.Action, error) {
	t := r.t
	cfg := t.cfg.Train
	r.epoch, r.lossSum, r.lossN = open.Epoch, 0, 0
	n := t.opts.Train.Len()
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	if *cfg.Shuffle {
		rng := rand.New(rand.NewPCG(t.cfg.Model.Seed, uint64(r.epoch)))
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	bs := cfg.BatchSize
	batches := r.batches(order, bs)
	r.nbatches = len(batches)
	ahead := max(1, *cfg.PrefetchBatches)
	free := make(chan *batch, ahead+1)
	ready := make(chan *batch, ahead+1)
	for i := 0; i < ahead+1; i++ {
		free <- t.newBatch()
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var pullErr error // written by the pull stage before it closes ready
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ready)
		for _, idx := range batches[min(open.Batch, len(batches)):] {
			var b *batch
			select {
			case b = <-free:
			case <-pctx.Done():
				return
			}
			if err := t.fill(pctx, b, t.opts.Train, idx, true); err != nil {
				pullErr = err
				return
			}
			ready <- b // capacity: never blocks
		}
	}()
	err := r.trainStage(ctx, ready, free, open.Batch)
	cancel()
	wg.Wait()
	if err == nil && pullErr != nil && ctx.Err() == nil {
		err = pullErr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	r.res.Epochs = r.epoch
	if r.lossN > 0 {
		r.res.TrainLoss = r.lossSum / float64(r.lossN)
	}
	return r.step(ctx, tracker.EpochEnded{Now: time.Now()})
}

// batches cuts the epoch's sample order into this worker's batches of
// bs samples (the last one shorter). With several workers (Peers) a
// batch of bs samples is a round of the layer, dealt out between the
// workers (worker w takes every W-th sample from the w-th), so that the
// layer takes the steps one worker would on the same batches; a last
// batch of fewer than W samples joins the one before, so that no worker's
// part of a round is empty.
func (r *run) batches(order []int32, bs int) [][]int32 {
	var out [][]int32
	for lo := 0; lo < len(order); lo += bs {
		out = append(out, order[lo:min(lo+bs, len(order))])
	}
	p := r.t.opts.Peers
	if p == nil {
		return out
	}
	if k := len(out); k > 1 && len(out[k-1]) < p.Workers {
		out[k-2] = order[(k-2)*bs:]
		out = out[:k-1]
	}
	for k, g := range out {
		mine := make([]int32, 0, len(g)/p.Workers+1)
		for j := p.Index; j < len(g); j += p.Workers {
			mine = append(mine, g[j])
		}
		out[k] = mine
	}
	return out
}

// trainStage trains the pulled batches of the epoch, from its firstBatch,
// and reports each to the tracker.
func (r *run) trainStage(ctx context.Context, ready <-chan *batch, free chan<- *batch, firstBatch int) error {
	t := r.t
	for r.batch = firstBatch; ; r.batch++ {
		w0 := time.Now()
		b, ok := <-ready
		if !ok {
			r.trainDur += time.Since(w0)
			r.fetch += time.Since(w0)
			return nil
		}
		r.fetch += time.Since(w0)
		var pause uint64
		if t.pauseRequested() {
			pause = t.opts.Job.PendingPause()
		}
		pauseAll, err := t.step(ctx, r, b, pause)
		if err != nil {
			return err
		}
		n := b.n
		free <- b // the pull stage owns b from here
		d := time.Since(w0)
		r.trainDur += d
		r.lineDur += d
		r.res.Samples += int64(n)
		r.res.Batches++
		r.lineSamples += int64(n)
		requested := t.pauseRequested() // one worker: as asked now
		if _, ok := t.out.(*shared); ok {
			if requested, err = r.agreedPause(ctx, pauseAll); err != nil {
				return err
			}
		}
		ev := tracker.BatchTrained{Now: time.Now(), Samples: n, PauseRequested: requested}
		if _, err := r.step(ctx, ev); err != nil {
			return err
		}
	}
}

// agreedPause reports whether this worker pauses after a step whose
// workers serve pause request seq (0: none; see output.TrainBatch):
// another worker may have seen the request first, so it waits until this
// worker's pauser has seen it too, then pauses unless it has already
// served it (in a round's wait, inRound).
func (r *run) agreedPause(ctx context.Context, seq uint64) (bool, error) {
	j := r.t.opts.Job
	if seq == 0 || j == nil {
		return false, nil
	}
	for j.PendingPause() < seq {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return j.PauseRequested(), nil
}

// inRound serves, while a round of several workers waits for the others,
// a pause that is not a snapshot's (a rollback): the round may never end
// (its worker died), and the pause changes no share. A snapshot's pause
// waits for the round's end, where every worker serves it (agreedPause):
// the snapshot's shares and checkpoints then belong to the same round.
//
// It also ends the run when another worker has left the cluster (its job
// ended, say on an error): the round would wait for its share forever,
// and no rollback comes for a clean leave.
func (r *run) inRound(ctx context.Context) error {
	t := r.t
	if err := r.peersLeft(ctx); err != nil {
		return err
	}
	if !t.pauseRequested() {
		return nil
	}
	seq := t.opts.Job.PendingPause()
	tgt, ok, err := t.opts.Job.SnapshotTarget(ctx)
	if err != nil {
		return fmt.Errorf("xctrain: pause %d: %w", seq, err)
	}
	if ok && tgt.Pause == seq {
		return nil
	}
	if err := t.waitPushes(); err != nil {
		return err
	}
	cp := r.tk.Checkpoint()
	return t.pauseFor(ctx, seq, nil, &cp) // this request, whatever came since: a later one waits for its own check
}

// peersLeft fails, at most once a second, when a worker of the round has
// left the cluster.
func (r *run) peersLeft(ctx context.Context) error {
	if time.Since(r.leftChecked) < time.Second {
		return nil
	}
	r.leftChecked = time.Now()
	return r.t.peersLeft(ctx)
}

// peerError is err, an error of the layer's rounds or predictions, or,
// when a worker has left the cluster, the error saying so (a peer that
// left stops answering: its share is gone for good, and no rollback
// comes).
func (t *Trainer) peerError(ctx context.Context, err error) error {
	if err == nil || t.opts.Peers == nil {
		return err
	}
	if lerr := t.peersLeft(ctx); lerr != nil {
		return fmt.Errorf("%w (%v)", lerr, err) // not err's kind: an unreachable peer that left is not coming back
	}
	return err
}

// peersLeft fails when another worker of the job has left the cluster.
func (t *Trainer) peersLeft(ctx context.Context) error {
	p := t.opts.Peers
	if p == nil || t.opts.Job == nil {
		return nil
	}
	var names []string
	for i := range p.Workers {
		if i != p.Index {
			names = append(names, membership.WorkerName(i))
		}
	}
	left, err := t.opts.Job.WorkersLeft(ctx, names)
	if err != nil {
		return fmt.Errorf("xctrain: %w", err)
	}
	if len(left) > 0 {
		return fmt.Errorf("xctrain: %v left the job (see its output for why): the SLIDE layer's rounds need every worker's share, so this worker stops too", left)
	}
	return nil
}

func (r *run) progressLine() {
	t := r.t
	if w := t.opts.Progress; w != nil {
		sps := 0.0
		if r.lineDur > 0 {
			sps = float64(r.lineSamples) / r.lineDur.Seconds()
		}
		loss := 0.0
		if r.lossN > 0 {
			loss = r.lossSum / float64(r.lossN)
		}
		fmt.Fprintf(w, "%s: epoch %d batch %d/%d: %.0f samples/s, loss %.4f", t.opts.Name, r.epoch, r.batch+1, r.nbatches, sps, loss)
		if r.window.N() > 0 {
			fmt.Fprintf(w, ", train P@1 %.4f P@3 %.4f P@5 %.4f (%d samples scored before training)",
				r.window.At(1), r.window.At(3), r.window.At(5), r.window.N())
		}
		fmt.Fprintln(w)
	}
	r.lineSamples, r.lineDur = 0, 0
	r.window = slide.Precision{}
}

// keepsBest reports whether the run keeps its best model in the job.
func (t *Trainer) keepsBest() bool {
	return t.opts.Job != nil && t.opts.Job.KeepsBest() && t.opts.Valid != nil
}

// pauseRequested reports whether the job's scheduler waits for a pause.
func (t *Trainer) pauseRequested() bool { return t.opts.Job != nil && t.opts.Job.PauseRequested() }
