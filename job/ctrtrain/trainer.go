package ctrtrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/job/tracker"
	"github.com/xdlgo/xps/job/trainrun"
	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/model/metrics"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

// ErrNoData is returned when there is nothing to train or evaluate on.
var ErrNoData = errors.New("worker: no data")

// ErrBadLabel is returned for a label binary cross-entropy cannot use.
var ErrBadLabel = errors.New("worker: label outside [0, 1]")

// Options configure a Trainer.
type Options struct {
	// Config is the job's configuration (defaults filled, validated:
	// config.Build, which job.Run calls).
	Config config.Config
	// Shape is the model's input shape. Required (Fields > 0).
	Shape ctr.Shape
	// Train opens the training data for an epoch (1-based). Required.
	Train func(epoch int) (reader.Source, error)
	// Test is the test set, held in memory. The default value (nil) skips
	// evaluation.
	Test []*reader.Group
	// Name labels progress lines. The default value is "worker".
	Name string
	// Progress receives progress lines. The default value (nil) prints none.
	Progress io.Writer
	// OnProgress receives every progress report and evaluation (see
	// job.Options.OnProgress). The default value is nil.
	OnProgress func(job.Progress)
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
	// CommitEvery is how often the checkpoint is committed while
	// training (Job.Commit), besides the end of each epoch, a reopen and
	// a pause. The default value (0) commits only there.
	CommitEvery time.Duration
	// Start is where a run resumes: the epoch it starts in (Train opens
	// that epoch's data from the position it resumes at) and the samples
	// applied before. The default value is epoch 1, nothing applied.
	Start Checkpoint
	// Job is the job the trainer runs in (see Job). The default value
	// (nil) is a run outside a job: it commits no checkpoint, never
	// pauses, fails on ErrReopen like on any other error, and one that
	// stops early (train.patience) stops at the end of the epoch with the
	// model it has.
	Job Job
	// Sync, when set, trains in sync mode (train.sync): see SyncOptions.
	// The default value (nil) is asynchronous training.
	Sync *SyncOptions
	// Valid is the validation set (the first worker's: config job.valid),
	// held in memory, scored by train.valid_metric after every epoch and
	// wherever the test set is (train.eval_every). The default value
	// (nil) validates nothing.
	Valid []*reader.Group
	// Final starts the run at its end: the job was rolled back to its
	// best model (job.Env.BestRestored), which is validated again and
	// evaluated.
	Final bool
}

// SyncOptions configure sync mode: every batch is a round shared with the
// other workers. The worker pulls the round's rows once every shard has
// applied the previous round (the barrier per iteration), then pushes its
// gradients as its part of the round; each shard applies a round with the
// average of its workers' parts when the last part arrives (see the
// shard's PushRound). When its epoch's data ends, the worker leaves the
// epoch (the others' rounds go on without it), and the next epoch starts
// on every shard once all have left. Batches run one after another (the
// pipeline and prefetching are off: the next round's rows exist only
// after the round). The worker's checkpoint travels with its part and
// enters the model when the round is applied, so Commit is not used; a
// snapshot therefore holds each worker's checkpoint of exactly the rounds
// applied.
type SyncOptions struct {
	// Worker and Workers: this is worker Worker of Workers.
	Worker, Workers int
	// Key is the state key of this worker's checkpoint in the model.
	Key string
}

// Checkpoint is what a worker stores in the model with every commit, so
// that a restore of the model (a snapshot) restores it too.
type Checkpoint = checkpoint.Checkpoint

// Job is the job a Trainer runs in, as the trainer uses it (the CTR
// model's job on package job implements it): the lifecycle's pauses and
// best model, and where the run's checkpoint goes.
type Job interface {
	// Lifecycle: after every batch the trainer asks whether the
	// scheduler wants a pause (for a consistent snapshot); when it does,
	// the trainer waits until every push has been applied, commits its
	// checkpoint and pauses. With a validation set and a job that keeps
	// its best model, a new best is kept there and a run that stops early
	// ends on it (rolled back).
	job.Lifecycle
	// Commit stores the checkpoint of the batches whose pushes have all
	// been applied (reader positions, one per stream, see
	// Result.Positions; the epoch; the samples applied): every
	// Options.CommitEvery while training, at the end of each epoch,
	// before a reopen and at a pause (not in sync mode, whose checkpoint
	// travels with its rounds).
	Commit(ctx context.Context, c Checkpoint) error
	// Reopen runs when the epoch's source fails with an error wrapping
	// ErrReopen (its partitions were reassigned), after every push has
	// been applied and the positions committed; then the same epoch goes
	// on with a source from Options.Train.
	Reopen(ctx context.Context) error
	// Barrier runs after the last batch's push has been applied and
	// before the final evaluation (a job with several workers waits there
	// for the others, so that the final AUC is the whole model's).
	Barrier(ctx context.Context) error
}

// ErrReopen is wrapped by a source's error to make the trainer commit its
// positions, run Job.Reopen and reopen the epoch's data.
var ErrReopen = errors.New("worker: reopen the training data")

// Eval is one evaluation on the test set (or the validation set).
type Eval struct {
	// When names the evaluation: "epoch 2", "batch 300", "final".
	When string `json:"when,omitempty"`
	// AUC and LogLoss are undefined (NaN, null in JSON) when AUCNote
	// says why: a test set of one class has no AUC.
	AUC     job.Metric `json:"auc"`
	LogLoss job.Metric `json:"logloss"`
	AUCNote string     `json:"auc_note,omitempty"`
	Samples int        `json:"samples"`
	Seconds float64    `json:"seconds"`
	// probs are the predictions, in the test set's order (job.test_scores).
	probs []float32
}

// Result summarises a training run.
type Result struct {
	Samples          int64   `json:"samples"`
	Seconds          float64 `json:"seconds"`
	SamplesPerSecond float64 `json:"samples_per_second"`
	// TestAUC, TestLogLoss, TestAUCNote and TestSamples are the last
	// evaluation's (see Eval).
	TestAUC        job.Metric `json:"test_auc"`
	TestLogLoss    job.Metric `json:"test_logloss"`
	TestAUCNote    string     `json:"test_auc_note,omitempty"`
	TestSamples    int        `json:"test_samples"`
	TrainLoss      float64    `json:"train_loss"`
	Batches        int64      `json:"batches"`
	Epochs         int        `json:"epochs"`
	UniquePerBatch float64    `json:"unique_ids_per_batch"`
	// AllocsPerBatch is the heap allocations of the whole process (the
	// readers, evaluations and, with -local, the embedded shards
	// included) from the start of Run to its summary, per batch.
	AllocsPerBatch float64 `json:"allocs_per_batch"`
	// Nodes[k] counts the level-k nodes of every batch trained on (Nodes[0]
	// = Samples); Samples/Nodes[k] is the compression ratio at level k.
	Nodes []int64 `json:"nodes_per_level"`
	// BytesRead is the input read by the training sources (0 for data held
	// in memory).
	BytesRead int64 `json:"bytes_read"`
	// Skipped counts malformed groups skipped (train.on_error: skip).
	Skipped int64 `json:"skipped"`
	// Position is the reader position right after the last sample trained
	// on (the last batch of the last epoch).
	Position reader.Position `json:"position"`
	// Positions holds that position for every stream trained on (the
	// partitions of a topic) since the last reopen, sorted by stream.
	Positions []reader.Position `json:"positions,omitempty"`
	// Applied counts the samples this reader has applied to the model over
	// the whole job (see Checkpoint.Applied): after a rollback to a
	// snapshot it counts what the restored model holds, not what was read.
	Applied int64 `json:"applied"`
	// Digest sums the applied samples' digests, as Checkpoint.Digest.
	Digest uint64 `json:"digest,omitempty"`
	// Progressive is the progressive validation of the whole run: every
	// training batch scored before it was trained on.
	Progressive Progressive `json:"progressive"`
	// FetchWaitSeconds is training time spent waiting for the next batch
	// (reading, batching or pulling did not keep up); PushWaitSeconds
	// waiting for a free push buffer (pushes in flight at the bound).
	FetchWaitSeconds float64 `json:"fetch_wait_seconds"`
	PushWaitSeconds  float64 `json:"push_wait_seconds"`
	// RereadRows counts the rows read again because a batch shared them
	// with the batch before it (train.reread_shared), and RereadSeconds
	// the training time that took: the wait for that batch's push and
	// the read.
	RereadRows    int64   `json:"reread_rows"`
	RereadSeconds float64 `json:"reread_seconds"`
	Evals         []Eval  `json:"evals"`
	// Valid are the validations (Options.Valid), Best the best of the job
	// (train.valid_metric; the kept model's, when it was kept), Ended why
	// the run ended on the best model instead of the last (empty: it did
	// not).
	Valid []Eval           `json:"valid,omitempty"`
	Best  *checkpoint.Best `json:"best,omitempty"`
	Ended string           `json:"ended_on_best,omitempty"`
}

// Progressive is a running quality figure over training predictions.
// AUC and LogLoss are undefined (NaN, null in JSON) when AUCNote says why:
// no sample was scored, or the samples scored have one class.
type Progressive struct {
	Samples int64      `json:"samples"`
	AUC     job.Metric `json:"auc"`
	LogLoss job.Metric `json:"logloss"`
	AUCNote string     `json:"auc_note,omitempty"`
}

// Trainer trains one worker's share of the data against the AMS shards.
type Trainer struct {
	cl       *client.Client
	lastTest Eval // the latest evaluation, for progress reports
	cfg      config.Config
	opts     Options
	layout   *sparsenet.Layout
	net      *ctr.Net
	tables   []ams.TableSpec // index = layout table index
	cols     []int           // column blocks of the levels in the dense network's input
	ws       *ctr.NetWorkspace

	// pushes is the push ring: a buffer taken before a batch's backward
	// and returned when its push is done.
	pushes *trainrun.Ring[trainrun.Push]
}

// New builds a trainer for the model in opts.Config and opts.Shape.
func New(cl *client.Client, opts Options) (*Trainer, error) {
	cfg := opts.Config // built by the job (job.Run): its defaults filled, validated
	if opts.Name == "" {
		opts.Name = "worker"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Train == nil {
		return nil, fmt.Errorf("%w: no training source", ErrNoData)
	}
	if opts.Shape.Fields <= 0 {
		return nil, fmt.Errorf("%w: the model has no fields", ErrNoData)
	}
	net, err := ctr.NewNet(cfg, opts.Shape)
	if err != nil {
		return nil, err
	}
	if w, b := net.Layout.Width(), max(cfg.Train.BatchSize, cfg.Train.EvalBatchSize); w*b > math.MaxInt32 {
		return nil, fmt.Errorf("worker: a batch of %d samples x %d inputs is too large; lower the batch size or the embedding dims", b, w)
	}
	layout := net.Layout
	t := &Trainer{cl: cl, cfg: cfg, opts: opts, layout: layout, net: net, cols: net.Cols,
		tables: cfg.Model.Tables}
	t.ws = net.NewWorkspace(cfg.Train.BatchSize, cfg.Train.DenseThreads)
	t.pushes = trainrun.NewPushRing("worker", cfg.Train.MaxInflightPushes, cl, layout.Tables(), ctr.DenseName, net.NumParams())
	return t, nil
}

// Fields returns the number of fields of the model (its data's, without
// the wide part's mirror fields).
func (t *Trainer) Fields() int {
	n := 0
	for f := range t.layout.Fields() {
		if t.layout.MirrorOf(f) < 0 {
			n++
		}
	}
	return n
}

// Levels returns the number of levels of the model's input.
func (t *Trainer) Levels() int { return t.layout.Levels() }

// DenseParams returns the number of dense parameters.
func (t *Trainer) DenseParams() int { return t.net.NumParams() }

// Describe names the dense network, for the progress lines.
func (t *Trainer) Describe() string { return t.net.Describe() }

// Declare declares the model's tables and dense vector on the shards. It is
// idempotent: when several workers declare, the first creation wins and
// later ones keep what exists.
func (t *Trainer) Declare(ctx context.Context) error {
	init := make([]float32, t.net.NumParams())
	t.net.Init(init, t.cfg.Model.Seed)
	d := client.Dense{Spec: ams.DenseSpec{Name: ctr.DenseName, Size: len(init), Optimizer: t.cfg.Model.DenseOptimizer,
		Schedule: t.cfg.Model.DenseSchedule}, Init: init}
	if err := t.cl.Declare(ctx, t.tables, []client.Dense{d}); err != nil {
		return fmt.Errorf("worker: declare model: %w", err)
	}
	// The job's configuration and the network's input shape, for the
	// snapshots' and the exports' manifests.
	cfg, err := json.Marshal(t.cfg)
	if err != nil {
		return fmt.Errorf("worker: encode the config: %w", err)
	}
	shape, err := json.Marshal(t.opts.Shape)
	if err != nil {
		return fmt.Errorf("worker: encode the shape: %w", err)
	}
	if err := t.cl.PutState(ctx, []client.StateEntry{{Key: client.ConfigStateKey, Value: cfg},
		{Key: client.ShapeStateKey, Value: shape}}); err != nil {
		return fmt.Errorf("worker: store the config in the model: %w", err)
	}
	return nil
}

// state holds one batch in flight through the pull and train stages, with
// buffers reused across batches.
type state struct {
	cb      *compress.Batch
	rows    [][]float32
	params  []float32
	vecs    []client.Vector // params, as the pull's one vector
	xs, dxs [][]float32     // per level: nodes x level width
	logits  []float32
	probs   []float32
	dlogits []float32
	// route is the batch's ids split by shard, made by its pull and used
	// by its push (step hands it to the push buffer).
	route *client.Route
	tree  densenet.Tree
	// round and roundState: in sync mode, the round the batch is this
	// worker's part of and the checkpoint that goes with it.
	round      *client.Round
	roundState []client.StateEntry
}

func (t *Trainer) newState() *state {
	L := t.layout.Levels()
	s := &state{rows: make([][]float32, t.layout.Tables()), params: make([]float32, t.net.NumParams()),
		xs: make([][]float32, L), dxs: make([][]float32, L), route: t.cl.NewRoute(),
		tree: densenet.Tree{Cols: t.cols, Count: make([]int, L), X: make([][]float32, L)}}
	s.vecs = []client.Vector{{Name: ctr.DenseName, Values: s.params}}
	return s
}

// prepare sizes s's buffers for its batch and pools its input.
func (t *Trainer) prepare(s *state) {
	n := s.cb.N
	t.net.Pool(&s.tree, s.xs, s.cb, s.rows)
	for k, x := range s.xs {
		s.dxs[k] = grow(s.dxs[k], len(x))
	}
	s.logits, s.probs, s.dlogits = grow(s.logits, n), grow(s.probs, n), grow(s.dlogits, n)
}

// pull fetches the batch's unique rows and the dense parameters, in one
// request per shard.
func (t *Trainer) pull(ctx context.Context, s *state, create bool) error {
	if err := t.route(s); err != nil {
		return err
	}
	return t.cl.PullRoute(ctx, s.route, s.rows, s.vecs, create)
}

// route routes the batch's unique ids into s's route, once for its pull
// and its push, and sizes s's rows for them.
func (t *Trainer) route(s *state) error {
	s.route.Reset()
	for ti := range s.rows {
		ids := s.cb.Sparse.IDs(ti)
		s.rows[ti] = grow(s.rows[ti], len(ids)*t.layout.Dim(ti))
		if err := s.route.Add(t.tables[ti].Name, ids); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
	}
	return nil
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n, n+n/4)
	}
	return b[:n]
}

// Run trains for Config.Train.Epochs epochs, evaluating on the test set
// after each epoch (and every EvalEvery batches), and returns the summary.
// The final evaluation runs after every push has been applied. What to do
// when is the run's tracker's (package tracker); Run executes it.
func (t *Trainer) Run(ctx context.Context) (res Result, err error) {
	start := t.opts.Start
	r := &run{t: t, res: &res, lastProgress: time.Now(), window: newWindow(), stream: metrics.NewStream(), reread: newReread(t)}
	tc := &t.cfg.Train
	r.tk = tracker.New(tracker.Options{Epochs: tc.Epochs, Start: start,
		Commits: t.opts.Job != nil && t.opts.Sync == nil, CommitEvery: t.opts.CommitEvery,
		ProgressEvery: progressEvery(t), EvalEvery: tc.EvalEvery, Evaluate: len(t.opts.Test) > 0,
		Sync: t.opts.Sync != nil, Barrier: t.opts.Job != nil, EvaluateOnStop: t.cfg.Kafka.Streaming,
		Validate: len(t.opts.Valid) > 0, Higher: config.HigherIsBetter(tc.ValidMetric), MinDelta: tc.MinDelta,
		Patience: tc.Patience, KeepBest: t.keepsBest(),
		Final: t.opts.Final})
	res.Nodes = make([]int64, t.layout.Levels())
	r.drv = trainrun.Driver{Name: "worker", Tracker: r.tk, Model: r, Drain: t.drain}
	defer func() {
		if derr := t.drain(); err == nil { // join every push goroutine, whatever happened
			err = derr
		}
	}()
	defer r.summarize() // also of a run stopped early
	r.mallocs = mallocs()
	if err := r.startSync(); err != nil {
		return res, err
	}
	acts, err := r.step(ctx, tracker.Started{Now: time.Now()})
	if err == nil {
		err = tracker.Epochs(acts, func(open tracker.Open) ([]tracker.Action, error) { return r.epoch(ctx, open.Epoch) })
	}
	if k := len(res.Evals); k > 0 { // the last evaluation's, also of a stopped stream's
		last := res.Evals[k-1]
		res.TestAUC, res.TestLogLoss, res.TestAUCNote, res.TestSamples = last.AUC, last.LogLoss, last.AUCNote, last.Samples
	}
	res.Best = r.tk.Best()
	if err != nil {
		return res, err
	}
	res.Epochs = r.tk.Epochs()
	return res, nil
}

// mallocs is the process's count of heap allocations so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// testFigures are the latest evaluation's AUC and log loss, NaN before
// the first one.
func (t *Trainer) testFigures() (auc, logloss float64) {
	if t.lastTest.Samples == 0 {
		return math.NaN(), math.NaN()
	}
	return float64(t.lastTest.AUC), float64(t.lastTest.LogLoss)
}

// figuresReport is the report made for an evaluation or a validation in
// epoch (0: unknown): the run's counts and the latest test figures, no
// training figures (NaN).
func (t *Trainer) figuresReport(res *Result, epoch int) job.Progress {
	p := job.Progress{Worker: t.opts.Name, Time: time.Now(), Epoch: epoch, Epochs: t.cfg.Train.Epochs,
		Batches: res.Batches, Samples: res.Samples, SamplesPerSecond: math.NaN(), Loss: math.NaN(), AUC: math.NaN(),
		RunningAUC: math.NaN(), RunningLogLoss: math.NaN(), Lag: -1, Rows: -1}
	p.TestAUC, p.TestLogLoss = t.testFigures()
	return p
}

// progressEvery is how often the run reports progress (never without a
// writer or a hook).
func progressEvery(t *Trainer) time.Duration {
	if t.opts.Progress == nil && t.opts.OnProgress == nil {
		return 0
	}
	return t.cfg.Train.ProgressEvery
}

// summarize fills the run's summary figures.
func (r *run) summarize() {
	res := r.res
	res.Seconds = r.trainDur.Seconds()
	if res.Seconds > 0 {
		res.SamplesPerSecond = float64(res.Samples) / res.Seconds
	}
	if r.lossN > 0 {
		res.TrainLoss = r.lossSum / float64(r.lossN)
	}
	if res.Batches > 0 {
		res.UniquePerBatch = float64(r.uniq) / float64(res.Batches)
		res.AllocsPerBatch = float64(mallocs()-r.mallocs) / float64(res.Batches)
	}
	res.PushWaitSeconds = r.t.pushes.Waited().Seconds()
	res.Positions = r.tk.Positions()
	res.Applied, res.Digest = r.tk.Applied()
	p := Progressive{Samples: r.stream.N(), AUC: job.Metric(r.stream.AUC()), LogLoss: job.Metric(r.stream.LogLoss())}
	switch {
	case p.Samples == 0:
		p.AUCNote = noteNoProgressive
	case !p.AUC.Defined():
		p.AUCNote = noteProgressiveOneClass
	}
	res.Progressive = p
}

// startSync checks, in sync mode, that the run resumes a sync checkpoint,
// and takes its round.
func (r *run) startSync() error {
	start := r.t.opts.Start
	if r.t.opts.Sync == nil {
		return nil
	}
	if start.Applied > 0 && !start.Sync {
		return fmt.Errorf("%w: the model holds an asynchronous checkpoint (%d samples applied): sync mode must be on from the job's start", ErrSync, start.Applied)
	}
	if !start.EpochDone {
		r.syncIter = start.Round
	}
	return nil
}

// drain waits until every push has been applied and returns the first
// asynchronous push error.
func (t *Trainer) drain() error { return t.pushes.Drain() }

func (t *Trainer) evalAndReport(ctx context.Context, res *Result, when string) (Eval, error) {
	if len(t.opts.Test) == 0 {
		return Eval{}, nil
	}
	e, err := t.Evaluate(ctx)
	if err != nil {
		return e, err
	}
	e.When = when
	res.Evals = append(res.Evals, e)
	t.lastTest = e
	t.lastTest.probs = nil
	if t.opts.OnProgress != nil {
		t.opts.OnProgress(t.figuresReport(res, 0))
	}
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, "%s: eval after %s: test AUC %s logloss %s (%d samples, %.1fs)\n",
			t.opts.Name, when, aucText(e.AUC, e.AUCNote), figure(e.LogLoss), e.Samples, e.Seconds)
	}
	return e, nil
}

// forward pools s's batch and runs the MLP forward; it returns the number
// of samples.
func (t *Trainer) forward(ws *ctr.NetWorkspace, s *state) int {
	t.prepare(s)
	n := s.cb.N
	t.net.ForwardTree(ws, s.params, s.tree, s.logits[:n])
	return n
}

// step trains on the batch pulled into s and starts its asynchronous push
// (waited for when wait is set), of origin (the worker's batch: the
// shards apply it once).
func (t *Trainer) step(ctx context.Context, s *state, origin ams.Origin, wait bool) (float64, error) {
	n := t.forward(t.ws, s)
	labels := s.cb.Labels[:n]
	for i, y := range labels {
		if !(y >= 0 && y <= 1) {
			return 0, fmt.Errorf("%w: sample %d of the batch ending at %v has label %v; binary cross-entropy needs labels in [0, 1]",
				ErrBadLabel, i, s.cb.End, y)
		}
	}
	loss := densenet.SigmoidBCE(s.logits[:n], labels, s.probs[:n], s.dlogits[:n])
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, fmt.Errorf("worker: training diverged: batch loss is %v", loss)
	}
	slot, err := t.pushes.Take(ctx) // bounds pushes in flight
	if err != nil {
		return 0, err
	}
	pb := &slot.Buf
	t.net.BackwardTree(t.ws, s.params, s.tree, s.dlogits[:n], pb.Dense, s.dxs)
	// The push reuses the pull's route; s takes the push buffer's idle one
	// for its next batch.
	pb.Route, s.route = s.route, pb.Route
	for ti := range pb.Grads {
		pb.Grads[ti] = grow(pb.Grads[ti], len(s.cb.Sparse.IDs(ti))*t.layout.Dim(ti))
	}
	s.cb.Sparse.ScatterTree(s.dxs, pb.Grads)
	pb.Origin = origin
	switch {
	case !wait:
		t.pushes.Go(ctx, slot)
		return loss, nil
	case s.round != nil:
		err = t.pushRound(ctx, pb, *s.round, s.roundState)
		t.pushes.Put(slot)
	default:
		err = t.pushes.Sync(ctx, slot)
	}
	return loss, err
}

// Evaluate scores the test set with the shards' current model (a row not
// on the shards reads as its initial value, as in training and serving;
// nothing is created) and returns AUC and logloss. Test batches are
// compressed like training batches.
func (t *Trainer) Evaluate(ctx context.Context) (Eval, error) {
	if len(t.opts.Test) == 0 {
		return Eval{}, fmt.Errorf("%w: empty test set", ErrNoData)
	}
	return t.evaluate(ctx, t.opts.Test)
}

// evaluate scores groups as Evaluate does the test set.
func (t *Trainer) evaluate(ctx context.Context, groups []*reader.Group) (Eval, error) {
	start := time.Now()
	bs := t.cfg.Train.EvalBatchSize
	builder, err := compress.NewBuilder(compress.Options{BatchSize: bs, Layout: t.layout})
	if err != nil {
		return Eval{}, fmt.Errorf("worker: %w", err)
	}
	ws := t.net.NewWorkspace(bs, t.cfg.Train.DenseThreads)
	s := t.newState()
	var probs, labels []float32
	score := func() error {
		for b := builder.Take(); b != nil; b = builder.Take() {
			s.cb = b
			if err := t.pull(ctx, s, false); err != nil {
				return err
			}
			n := t.forward(ws, s)
			for j := 0; j < n; j++ {
				probs = append(probs, densenet.Sigmoid(s.logits[j]))
			}
			labels = append(labels, b.Labels[:n]...)
			builder.Recycle(b)
		}
		return nil
	}
	for _, g := range groups {
		if err := builder.Add(g); err != nil {
			return Eval{}, fmt.Errorf("worker: evaluation set: %w", err)
		}
		if err := score(); err != nil {
			return Eval{}, err
		}
	}
	builder.Flush()
	if err := score(); err != nil {
		return Eval{}, err
	}
	e := Eval{AUC: job.Metric(metrics.AUC(labels, probs)), LogLoss: job.Metric(metrics.LogLoss(labels, probs)), Samples: len(labels),
		Seconds: time.Since(start).Seconds(), probs: probs}
	if !e.AUC.Defined() {
		e.AUCNote = testAUCNote(labels)
	}
	return e, nil
}

// Why an AUC is undefined: the notes of the JSON summary (Eval.AUCNote,
// Progressive.AUCNote).
const (
	noteTestOneClass        = "the test set has one class: AUC is undefined"
	noteTestNoSamples       = "the test set has no samples: AUC and logloss are undefined"
	noteTestNaN             = "the model predicted NaN: AUC and logloss are undefined"
	noteNoProgressive       = "no training sample was scored: progressive AUC and logloss are undefined"
	noteProgressiveOneClass = "the training samples scored have one class: progressive AUC is undefined"
)

// testAUCNote says why the test AUC of samples with labels is undefined.
func testAUCNote(labels []float32) string {
	if len(labels) == 0 {
		return noteTestNoSamples
	}
	one := labels[0] > 0.5
	for _, y := range labels {
		if (y > 0.5) != one {
			return noteTestNaN // both classes: a prediction was NaN
		}
	}
	return noteTestOneClass
}

// aucText is an AUC for the text summary: its value, or "undefined" and
// why, from its note, in short.
func aucText(auc job.Metric, note string) string {
	if auc.Defined() {
		return fmt.Sprintf("%.4f", float64(auc))
	}
	switch note {
	case noteTestOneClass:
		return "undefined (one class)"
	case noteTestNoSamples:
		return "undefined (no samples)"
	case noteTestNaN:
		return "undefined (NaN predictions)"
	}
	return "undefined"
}

// figure is a metric for the text summary: its value, or "undefined".
func figure(m job.Metric) string {
	if m.Defined() {
		return fmt.Sprintf("%.4f", float64(m))
	}
	return "undefined"
}

// keepsBest reports whether the run keeps its best model in the job
// (not in sync mode, whose rounds are the workers' together).
func (t *Trainer) keepsBest() bool {
	j := t.opts.Job
	return j != nil && j.KeepsBest() && len(t.opts.Valid) > 0 && t.opts.Sync == nil
}

// pauseRequested reports whether the job's scheduler waits for a pause.
func (t *Trainer) pauseRequested() bool { return t.opts.Job != nil && t.opts.Job.PauseRequested() }
