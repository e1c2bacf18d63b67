package xctrain

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/job/trainrun"
	"github.com/xdlgo/xps/sparsenet"
	"github.com/xdlgo/xps/sparsenet/slide"
)

// DenseName is the name of the dense parameter vector (the embedding bias
// and the hidden layers) on the AMS shards.
const DenseName = "xc-dense"

// TopK is the width of the predictions: P@1, P@3 and P@5 are reported.
const TopK = 5

// latencySamples is how many test samples the final evaluation scores one
// at a time to measure the latency of one prediction.
const latencySamples = 200

// Options configure a Trainer.
type Options struct {
	// Config is the job's configuration (defaults filled, validated:
	// config.Build, which job.Run calls); Model.Output.Kind must be
	// "slide".
	Config config.Config
	// Train is the training data. Required.
	Train *Dataset
	// Test is the test data. The default value (nil) skips evaluation.
	Test *Dataset
	// Name labels progress lines. The default value is "xc".
	Name string
	// Progress receives progress lines. The default value (nil) prints none.
	Progress io.Writer
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
	// Job is the job's lifecycle (a *job.Env), which takes the trainer
	// into the cluster's snapshot pauses (see snapshot.go: at a requested
	// pause it writes the layer into the snapshot and waits for the
	// resume) and, with a validation set and a job that keeps its best
	// model, keeps the best there and ends a run that stops early on it.
	// The default value (nil) is a run outside a job: it never pauses and
	// keeps no best.
	Job Job
	// Valid is the validation data (config job.valid), scored by
	// train.valid_metric after every epoch and every train.eval_every
	// batches. The default value (nil) validates nothing.
	Valid *Dataset
	// Final starts the run at its end (job.Env.BestRestored): the kept
	// model is validated again and evaluated.
	Final bool
	// Peers, when set, places the trainer among several workers: the
	// layer is split into one share per worker and trains in rounds with
	// theirs (peers.go). The default value (nil) keeps the whole layer in
	// this process (model.output.owners shares).
	Peers *Peers
}

// Job is the job's lifecycle as the SLIDE trainer uses it (*job.Env
// implements it): the pauses and the best model of every model, and what
// a model with state outside the shards needs besides: the pause's
// sequence number, matched to the snapshot being taken so that the layer
// goes into exactly that one, and which of the other workers left.
type Job interface {
	job.Lifecycle
	PendingPause() uint64
	PauseFor(ctx context.Context, seq uint64) error
	SnapshotTarget(ctx context.Context) (controlplane.SnapshotTarget, bool, error)
	WorkersLeft(ctx context.Context, names []string) ([]string, error)
}

// PAtK is precision at 1, 3 and 5.
type PAtK struct {
	P1 float64 `json:"p1"`
	P3 float64 `json:"p3"`
	P5 float64 `json:"p5"`
}

func (p PAtK) String() string { return fmt.Sprintf("P@1 %.4f P@3 %.4f P@5 %.4f", p.P1, p.P3, p.P5) }

func patk(m *slide.Precision) PAtK {
	if m.N() == 0 {
		return PAtK{}
	}
	return PAtK{P1: m.At(1), P3: m.At(3), P5: m.At(5)}
}

// Eval is one evaluation on the test set.
type Eval struct {
	// When names the point of training ("epoch 2", "batch 500").
	When    string `json:"when"`
	Samples int    `json:"samples"`
	// Sparse is the precision of sparse inference (LSH candidates), nil
	// when not run (output.eval dense, or a layer without hash tables);
	// Dense that of dense inference (every label), nil when not run.
	Sparse *PAtK `json:"sparse,omitempty"`
	Dense  *PAtK `json:"dense,omitempty"`
	// SparseMs and DenseMs are the mean latency of one prediction (batch
	// of 1: pull of the sample's rows, dense layers, top-5 of the output
	// layer), over the first 200 test samples; measured by the final
	// evaluation only.
	SparseMs float64 `json:"sparse_latency_ms,omitempty"`
	DenseMs  float64 `json:"dense_latency_ms,omitempty"`
	// SparsePerSampleMs and DensePerSampleMs are the scoring time per
	// sample in batches of train.eval_batch_size.
	SparsePerSampleMs float64 `json:"sparse_batched_ms_per_sample,omitempty"`
	DensePerSampleMs  float64 `json:"dense_batched_ms_per_sample,omitempty"`
	// Recall1 and Recall5 are the fractions of the exact top-1 and top-5
	// labels (dense inference) that the LSH candidate set of sparse
	// inference contains, over the scored samples (with output.eval both
	// and hash tables only; 0 otherwise). Candidates is the mean size of
	// the candidate set.
	Recall1    float64 `json:"recall_top1,omitempty"`
	Recall5    float64 `json:"recall_top5,omitempty"`
	Candidates float64 `json:"candidates,omitempty"`
	// RehashSeconds is the time spent re-inserting every neuron into the
	// hash tables before sparse inference.
	RehashSeconds float64 `json:"rehash_seconds"`
	// InferTune is what the calibration of sparse inference chose (nil
	// when it did not run: no sparse inference, infer_tune.off, or the
	// shares of several workers).
	InferTune *InferTune `json:"infer_tune,omitempty"`
	Seconds   float64    `json:"seconds"`
}

// InferTune reports slide.Layer.TuneInference at an evaluation: the shape
// of the tables sparse inference used, whether they were inference tables
// apart from the training ones, the fraction of the calibration inputs
// (training samples) whose sparse top-1 is the dense top-1 with them and
// with the training tables, whether that or the training tables' P@1
// met infer_tune.agreement, and the seconds the calibration took.
type InferTune struct {
	K                 int     `json:"k"`
	L                 int     `json:"l"`
	Separate          bool    `json:"separate"`
	Agreement         float64 `json:"agreement"`
	TrainingAgreement float64 `json:"training_agreement"`
	Met               bool    `json:"met"`
	Inputs            int     `json:"inputs"`
	Seconds           float64 `json:"seconds"`
	// DenseP1, TrainingP1 and P1 are the calibration samples' P@1 with
	// dense inference, the training tables and the tables chosen (0 with
	// several owners: slide.InferTune).
	DenseP1    float64 `json:"dense_p1"`
	TrainingP1 float64 `json:"training_p1"`
	P1         float64 `json:"p1"`
}

// describe is it for a summary line: ", inference tables K=1 L=512
// agreeing with dense inference on 0.993 of 1024 training samples", or
// "" for nil.
func (it *InferTune) describe() string {
	if it == nil {
		return ""
	}
	which := "training tables"
	if it.Separate {
		which = "inference tables"
	}
	s := fmt.Sprintf(", %s K=%d L=%d agreeing with dense inference on %.3f of %d training samples", which, it.K, it.L, it.Agreement, it.Inputs)
	if !it.Met {
		s += " (below infer_tune.agreement)"
	}
	return s
}

// Result summarises a training run.
type Result struct {
	Samples          int64   `json:"samples"`
	Batches          int64   `json:"batches"`
	Epochs           int     `json:"epochs"`
	Seconds          float64 `json:"seconds"`
	SamplesPerSecond float64 `json:"samples_per_second"`
	// TrainLoss is the mean batch loss of the last epoch.
	TrainLoss float64 `json:"train_loss"`
	// Progressive is the precision of the sparse predictions on training
	// batches scored before being trained on (every
	// output.progressive_every-th batch), over the whole run.
	Progressive        PAtK   `json:"progressive"`
	ProgressiveSamples int    `json:"progressive_samples"`
	Evals              []Eval `json:"evals"`
	// Test is the last evaluation (zero without a test set).
	Test Eval `json:"test"`
	// Valid are the validations (Options.Valid), Best the best of the
	// job (the kept model's, when it was kept), Ended why the run ended
	// on the best model instead of the last (empty: it did not).
	Valid []Eval           `json:"valid,omitempty"`
	Best  *checkpoint.Best `json:"best,omitempty"`
	Ended string           `json:"ended_on_best,omitempty"`
	// Labels and InputDim are the SLIDE layer's shape; K, L and R its
	// hash tables (0 without tables).
	Labels   int     `json:"labels"`
	InputDim int     `json:"input_dim"`
	Sparsity float64 `json:"sparsity"`
	Hash     string  `json:"hash"`
	K        int     `json:"k"`
	L        int     `json:"l"`
	R        int     `json:"r"`
	// Resumed is the checkpoint this run started from (nil: the
	// beginning); Samples and Batches count this run's only.
	Resumed *Checkpoint `json:"resumed,omitempty"`
	// Stopped is the checkpoint a run stopped (its context cancelled)
	// stored of what it trained, when it could (nil otherwise): the
	// position a snapshot of the stop's model names, with the layer.
	Stopped *Checkpoint `json:"-"`
	// LayerBytes is the memory of the layer's parameters, optimizer state
	// and hash tables.
	LayerBytes int64 `json:"layer_bytes"`
	// Owners is model.output.owners; with more than one, OwnerImbalance
	// is the largest and OwnerImbalanceMean the mean over the training
	// steps of the busiest share's active (sample, label) pairs over the
	// shares' mean (1: perfectly balanced), and StepBytes and
	// DenseStepBytes the bytes a training batch of this run's mean shape
	// would move between the shares placed on different machines, as
	// D-SLIDE and as dense model parallelism (dslide.StepBytes,
	// dslide.DenseStepBytes).
	Owners             int     `json:"owners"`
	OwnerImbalance     float64 `json:"owner_imbalance,omitempty"`
	OwnerImbalanceMean float64 `json:"owner_imbalance_mean,omitempty"`
	StepBytes          int64   `json:"step_bytes,omitempty"`
	DenseStepBytes     int64   `json:"dense_step_bytes,omitempty"`
	// FetchWaitSeconds is training time spent waiting for the next pulled
	// batch; PushWaitSeconds waiting for a free push buffer.
	FetchWaitSeconds float64 `json:"fetch_wait_seconds"`
	PushWaitSeconds  float64 `json:"push_wait_seconds"`
	// Phases splits the training time of the train stage.
	Phases Phases `json:"phases"`
}

// Phases are the seconds the train stage spent in each part of a step.
type Phases struct {
	// Dense is pooling and the dense layers, forward and backward, and
	// the scatter of the embedding gradients.
	Dense float64 `json:"dense"`
	// Progressive is the scoring of training batches before training.
	Progressive float64 `json:"progressive"`
	// Output is the SLIDE layer's TrainBatch (hashing, active sets,
	// forward, backward, Adam).
	Output float64 `json:"output"`
	// Maintain is the hash-table upkeep (re-insertion, redraws).
	Maintain float64 `json:"maintain"`
}

// Trainer trains "sparse features -> embedding sum -> hidden layers ->
// SLIDE output" against the AMS shards. It is used by one goroutine.
type Trainer struct {
	cl     *client.Client
	cfg    config.Config
	opts   Options
	table  ams.TableSpec
	layout *sparsenet.Layout
	net    *densenet.MLP // the embedding bias and the hidden layers
	out    output
	params slide.Params // the table shape (owner 0's, with owners)
	labels int          // the layer's rows
	ws     *densenet.Workspace
	x      []float32 // the pooled embeddings, the MLP's input
	h      []float32 // the MLP's output, the SLIDE layer's input
	dh     []float32 // gradient of the loss for the SLIDE layer's input
	dx     []float32 // gradient of the loss for the pooled embeddings
	pred   []int32

	pushes *trainrun.Ring[trainrun.Push] // the push ring

	start *Checkpoint // where Run starts (resume), nil: the beginning
}

// New builds the model: the layout of the one embedding table, the dense
// layers and the SLIDE layer (in this process). Close releases the layer.
func New(cl *client.Client, opts Options) (*Trainer, error) {
	cfg := opts.Config // built by the job (job.Run): its defaults filled, validated
	oc := cfg.Model.Output
	if oc.Kind != config.OutputSLIDE {
		return nil, fmt.Errorf("xctrain: model.output.kind is %q, want %q", oc.Kind, config.OutputSLIDE)
	}
	if opts.Train == nil || opts.Train.Len() == 0 {
		return nil, fmt.Errorf("%w: no training samples", ErrNoData)
	}
	if opts.Name == "" {
		opts.Name = "xc"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Config = cfg
	labels := oc.Labels
	if labels == 0 {
		labels = opts.Train.NumLabels()
		if opts.Test != nil {
			labels = max(labels, opts.Test.NumLabels())
		}
		if labels == 0 {
			return nil, fmt.Errorf("%w: the training data has no labels (set model.output.labels)", ErrNoData)
		}
	}
	for _, d := range []*Dataset{opts.Train, opts.Test} {
		if d != nil && int(d.MaxLabel) >= labels {
			return nil, fmt.Errorf("%w: label %d in %s, but the output has %d labels (model.output.labels)", ErrBadData, d.MaxLabel, d.Desc, labels)
		}
	}
	table := cfg.Model.Tables[0]
	pooling := sparsenet.Sum
	if cfg.Model.Pooling == "mean" {
		pooling = sparsenet.Mean
	}
	layout, err := sparsenet.NewLayout([]int{0}, []int{table.Dim}, pooling)
	if err != nil {
		return nil, fmt.Errorf("xctrain: %w", err)
	}
	// The embedding sum with a bias and a ReLU is a sparse input layer
	// (b_0 in the package doc is the MLP's input bias); the last hidden
	// layer's ReLU output feeds the SLIDE layer.
	net, err := densenet.NewMLPWith(append([]int{table.Dim}, oc.Hidden...), densenet.MLPOptions{InputBias: true, OutputReLU: true})
	if err != nil {
		return nil, fmt.Errorf("xctrain: embedding dim %d, hidden layers %v: %w", table.Dim, oc.Hidden, err)
	}
	sc := oc.Config
	sc.Dim, sc.InputDim, sc.Seed = labels, net.OutputWidth(), cfg.Model.Seed
	var out output
	var params slide.Params
	if opts.Peers != nil {
		out, params, err = newShared(sc, opts.Peers, oc.Exchange == "dense")
	} else {
		out, params, err = newOutput(sc, oc.Owners)
	}
	if err != nil {
		return nil, fmt.Errorf("xctrain: %w", err)
	}
	bs := max(cfg.Train.BatchSize, cfg.Train.EvalBatchSize)
	t := &Trainer{cl: cl, cfg: cfg, opts: opts, table: table, layout: layout, net: net, out: out, params: params, labels: labels,
		ws: net.NewWorkspace(bs), x: make([]float32, bs*net.InputWidth()), h: make([]float32, bs*net.OutputWidth()),
		dh: make([]float32, bs*net.OutputWidth()), dx: make([]float32, bs*net.InputWidth()), pred: make([]int32, bs*TopK)}
	t.pushes = trainrun.NewPushRing("xctrain", cfg.Train.MaxInflightPushes, cl, 1, DenseName, net.NumParams())
	return t, nil
}

// Close stops the SLIDE layer's goroutines.
func (t *Trainer) Close() error { return t.out.Close() }

// Declare declares the embedding table and the dense vector on the shards
// (idempotent).
func (t *Trainer) Declare(ctx context.Context) error {
	init := make([]float32, t.net.NumParams())
	t.net.Init(init, t.cfg.Model.Seed)
	d := client.Dense{Spec: ams.DenseSpec{Name: DenseName, Size: len(init), Optimizer: t.cfg.Model.DenseOptimizer,
		Schedule: t.cfg.Model.DenseSchedule}, Init: init}
	if err := t.cl.Declare(ctx, []ams.TableSpec{t.table}, []client.Dense{d}); err != nil {
		return fmt.Errorf("xctrain: declare model: %w", err)
	}
	return nil
}

// batch is one batch in flight through the pull and train stages.
type batch struct {
	sb     *sparsenet.Batch
	n      int
	labels [][]int32
	rows   [][]float32 // one buffer: the table's
	params []float32
	zeros  []uint32
	// route is the batch's ids split by shard, made by its pull and used
	// by its push (train hands it to the push buffer).
	route *client.Route
}

func (t *Trainer) newBatch() *batch {
	return &batch{sb: t.layout.NewBatch(), rows: make([][]float32, 1), params: make([]float32, t.net.NumParams()),
		route: t.cl.NewRoute()}
}

// fill loads samples idx of d into b and pulls their rows and the dense
// parameters (creating missing rows when create is set).
func (t *Trainer) fill(ctx context.Context, b *batch, d *Dataset, idx []int32, create bool) error {
	b.sb.Reset()
	b.labels = b.labels[:0]
	for _, i := range idx {
		ids, values, labels := d.Sample(int(i))
		for len(b.zeros) < len(ids) {
			b.zeros = append(b.zeros, 0)
		}
		if err := b.sb.Add(b.zeros[:len(ids)], ids, values); err != nil {
			return fmt.Errorf("xctrain: %w", err)
		}
		b.labels = append(b.labels, labels)
	}
	b.n = len(idx)
	ids := b.sb.IDs(0)
	b.rows[0] = grow(b.rows[0], len(ids)*t.table.Dim)
	b.route.Reset()
	if err := b.route.Add(t.table.Name, ids); err != nil {
		return fmt.Errorf("xctrain: %w", err)
	}
	return t.cl.PullRoute(ctx, b.route, b.rows, []client.Vector{{Name: DenseName, Values: b.params}}, create)
}

// hidden pools b's rows into t.x and runs the dense layers; it returns the
// SLIDE layer's input (n x InputDim, a view into t.h).
func (t *Trainer) hidden(b *batch) []float32 {
	x, h := t.x[:b.n*t.net.InputWidth()], t.h[:b.n*t.net.OutputWidth()]
	b.sb.Pool(b.rows, x)
	t.net.Forward(t.ws, b.params, x, b.n, h)
	return h
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n, n+n/4)
	}
	return b[:n]
}

// step trains on one pulled batch and starts its push; pause is the
// pause request this worker was asked to serve (0: none). It returns the
// pause request every worker of the step serves after it (0: none).
func (t *Trainer) step(ctx context.Context, r *run, b *batch, pause uint64) (uint64, error) {
	n := b.n
	ph := &r.res.Phases
	t0 := time.Now()
	h := t.hidden(b)
	t1 := time.Now()
	ph.Dense += t1.Sub(t0).Seconds()
	if pe := *t.cfg.Model.Output.ProgressiveEvery; pe > 0 && r.res.Batches%int64(pe) == 0 {
		pred := t.pred[:n*TopK]
		if err := t.out.Predict(ctx, h, n, TopK, true, pred); err != nil {
			return 0, t.peerError(ctx, fmt.Errorf("xctrain: %w", err))
		}
		r.window.Add(pred, TopK, b.labels)
		r.total.Add(pred, TopK, b.labels)
		t2 := time.Now()
		ph.Progressive += t2.Sub(t1).Seconds()
		t1 = t2
	}
	dh := t.dh[:n*t.net.OutputWidth()]
	loss, pauseAll, err := t.out.TrainBatch(ctx, h, n, b.labels, dh, pause)
	t2 := time.Now()
	ph.Output += t2.Sub(t1).Seconds()
	if err != nil {
		return 0, t.peerError(ctx, fmt.Errorf("xctrain: %w", err))
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, fmt.Errorf("xctrain: training diverged: batch loss is %v (lower model.output.lr or the table's lr)", loss)
	}
	r.lossSum += loss
	r.lossN++
	t.out.Maintain()
	ph.Maintain += time.Since(t2).Seconds()
	slot, err := t.pushes.Take(ctx) // bounds pushes in flight
	if err != nil {
		return 0, err
	}
	pb := &slot.Buf
	t0 = time.Now()
	demb := t.dx[:n*t.net.InputWidth()]
	t.net.Backward(t.ws, b.params, t.x[:n*t.net.InputWidth()], n, dh, pb.Dense, demb)
	// The push reuses the pull's route; b takes the push buffer's idle one
	// for its next pull.
	pb.Route, b.route = b.route, pb.Route
	pb.Grads[0] = grow(pb.Grads[0], len(b.sb.IDs(0))*t.table.Dim)
	b.sb.Scatter(demb, pb.Grads)
	ph.Dense += time.Since(t0).Seconds()
	pb.Origin = ams.Origin{Worker: t.opts.Name, Batch: uint64(r.tk.Batches()), Samples: uint32(n)}
	t.pushes.Go(ctx, slot)
	return pauseAll, nil
}

// waitPushes waits until every push started so far is done and returns
// the first error of one.
func (t *Trainer) waitPushes() error { return t.pushes.Drain() }

// Evaluate scores the test set (its first output.eval_limit samples) with
// the shards' current rows (missing rows read as zeros; nothing is
// created) and the layer's current weights, with sparse and/or dense
// inference (output.eval). Before sparse inference every neuron is
// re-inserted into the hash tables (Layer.Rehash) and sparse inference is
// calibrated on training samples (Layer.TuneInference, unless
// infer_tune.off). With latency set it also times single-sample
// predictions.
func (t *Trainer) Evaluate(ctx context.Context, latency bool) (Eval, error) {
	return t.evaluate(ctx, t.opts.Test, latency)
}

// evaluate scores test as Evaluate does the test set.
func (t *Trainer) evaluate(ctx context.Context, test *Dataset, latency bool) (Eval, error) {
	if test == nil || test.Len() == 0 {
		return Eval{}, fmt.Errorf("%w: empty evaluation set", ErrNoData)
	}
	if lim := t.cfg.Model.Output.EvalLimit; lim > 0 {
		test = test.Prefix(lim)
	}
	start := time.Now()
	mode := t.cfg.Model.Output.Eval
	doSparse := mode != "dense" && t.out.HasTables()
	doDense := mode != "sparse" || !t.out.HasTables()
	e := Eval{Samples: test.Len()}
	if doSparse {
		if err := t.prepareSparse(ctx, &e); err != nil {
			return Eval{}, err
		}
	}
	_, shares := t.out.(*shared)
	recall := doSparse && doDense && !shares // the other workers' candidates are not listed here
	var sp, dp slide.Precision
	var spDur, dpDur time.Duration
	var rc candidateRecall
	b := t.newBatch()
	n := test.Len()
	err := t.hiddenBatches(ctx, b, test, n, func(h []float32) error {
		pred := t.pred[:b.n*TopK]
		if doSparse {
			t0 := time.Now()
			if err := t.out.Predict(ctx, h, b.n, TopK, true, pred); err != nil {
				return fmt.Errorf("xctrain: %w", err)
			}
			spDur += time.Since(t0)
			sp.Add(pred, TopK, b.labels)
		}
		if doDense {
			t0 := time.Now()
			if err := t.out.Predict(ctx, h, b.n, TopK, false, pred); err != nil {
				return fmt.Errorf("xctrain: %w", err)
			}
			dpDur += time.Since(t0)
			dp.Add(pred, TopK, b.labels)
		}
		if recall {
			rc.add(t, h, pred, b.n)
		}
		return nil
	})
	if err != nil {
		return e, err
	}
	if recall {
		e.Recall1, e.Recall5, e.Candidates = rc.hit1/float64(n), rc.hit5/float64(n*TopK), rc.cands/float64(n)
	}
	ms := func(d time.Duration, n int) float64 { return d.Seconds() * 1000 / float64(n) }
	if doSparse {
		p := patk(&sp)
		e.Sparse, e.SparsePerSampleMs = &p, ms(spDur, n)
	}
	if doDense {
		p := patk(&dp)
		e.Dense, e.DensePerSampleMs = &p, ms(dpDur, n)
	}
	if latency {
		if err := t.evalLatency(ctx, b, test, min(latencySamples, n), doSparse, doDense, &e); err != nil {
			return e, err
		}
	}
	e.Seconds = time.Since(start).Seconds()
	return e, nil
}

// hiddenBatches pulls (creating nothing) the first n samples of d into b,
// train.eval_batch_size at a time, runs the dense layers and calls fn with
// each batch's hidden vectors (a view valid until the next batch).
func (t *Trainer) hiddenBatches(ctx context.Context, b *batch, d *Dataset, n int, fn func(h []float32) error) error {
	bs := t.cfg.Train.EvalBatchSize
	idx := make([]int32, 0, bs)
	for lo := 0; lo < n; lo += bs {
		idx = idx[:0]
		for i := lo; i < min(lo+bs, n); i++ {
			idx = append(idx, int32(i))
		}
		if err := t.fill(ctx, b, d, idx, false); err != nil {
			return err
		}
		if err := fn(t.hidden(b)); err != nil {
			return err
		}
	}
	return nil
}

// prepareSparse readies sparse inference for an evaluation: every neuron
// re-inserted into the hash tables, then the calibration (tuneInference).
func (t *Trainer) prepareSparse(ctx context.Context, e *Eval) error {
	t0 := time.Now()
	if err := t.out.Rehash(ctx); err != nil {
		return fmt.Errorf("xctrain: %w", err)
	}
	e.RehashSeconds = time.Since(t0).Seconds()
	return t.tuneInference(ctx, e)
}

// tuneInference calibrates sparse inference (slide.Layer.TuneInference)
// on the hidden vectors and labels of the first
// model.output.infer_tune.samples training samples and records the
// outcome in e.
func (t *Trainer) tuneInference(ctx context.Context, e *Eval) error {
	o := t.cfg.Model.Output.InferTune
	o.EnsureDefaults()
	train := t.opts.Train
	_, shares := t.out.(*shared) // the other shares are in other workers
	if o.Off || shares || train == nil || train.Len() == 0 {
		return nil
	}
	start := time.Now()
	n, din := min(o.Samples, train.Len()), t.net.OutputWidth()
	h := make([]float32, 0, n*din)
	labels := make([][]int32, 0, n)
	b := t.newBatch()
	err := t.hiddenBatches(ctx, b, train, n, func(hb []float32) error {
		h = append(h, hb...)
		for _, ls := range b.labels {
			labels = append(labels, slices.Clone(ls))
		}
		return nil
	})
	if err != nil {
		return err
	}
	res, ok, err := t.out.TuneInference(ctx, h, n, labels, o)
	if err != nil {
		return fmt.Errorf("xctrain: %w", err)
	}
	if ok {
		e.InferTune = &InferTune{K: res.Params.K, L: res.Params.L, Separate: res.Separate, Agreement: res.Agreement,
			TrainingAgreement: res.TrainingAgreement, Met: res.Met, Inputs: res.Inputs, Seconds: time.Since(start).Seconds(),
			DenseP1: res.DenseP1, TrainingP1: res.TrainingP1, P1: res.P1}
	}
	return nil
}

// candidateRecall counts, over the samples Evaluate scored with both
// sparse and dense inference, how many dense top-k predictions are among
// the sparse candidates (hit5; hit1 for the top prediction only) and how
// many candidates there were (cands).
type candidateRecall struct {
	hit1, hit5, cands float64
	cand              []int32 // scratch for Layer.Candidates
}

// add counts the n samples of a batch: h holds their hidden vectors
// (t.net.OutputWidth() each), pred their dense top-TopK predictions.
func (rc *candidateRecall) add(t *Trainer, h []float32, pred []int32, n int) {
	din := t.net.OutputWidth()
	for i := 0; i < n; i++ {
		rc.cand = t.out.Candidates(h[i*din:(i+1)*din], rc.cand)
		rc.cands += float64(len(rc.cand))
		for j, id := range pred[i*TopK : (i+1)*TopK] {
			if id >= 0 && slices.Contains(rc.cand, id) {
				rc.hit5++
				if j == 0 {
					rc.hit1++
				}
			}
		}
	}
}

// evalLatency sets e.SparseMs and/or e.DenseMs (per doSparse, doDense) to
// the mean single-sample latency over the first m samples of test.
func (t *Trainer) evalLatency(ctx context.Context, b *batch, test *Dataset, m int, doSparse, doDense bool, e *Eval) error {
	var err error
	if doSparse {
		if e.SparseMs, err = t.latency(ctx, b, test, m, true); err != nil {
			return err
		}
	}
	if doDense {
		if e.DenseMs, err = t.latency(ctx, b, test, m, false); err != nil {
			return err
		}
	}
	return nil
}

// latency returns the mean time in ms of predicting the first m samples of
// d one at a time: pull, dense layers, top-k.
func (t *Trainer) latency(ctx context.Context, b *batch, d *Dataset, m int, sparse bool) (float64, error) {
	idx := []int32{0}
	pred := t.pred[:TopK]
	var total time.Duration
	for i := 0; i < m; i++ {
		idx[0] = int32(i)
		t0 := time.Now()
		if err := t.fill(ctx, b, d, idx, false); err != nil {
			return 0, err
		}
		if err := t.out.Predict(ctx, t.hidden(b), 1, TopK, sparse, pred); err != nil {
			return 0, fmt.Errorf("xctrain: %w", err)
		}
		total += time.Since(t0)
	}
	if m == 0 {
		return 0, nil
	}
	return total.Seconds() * 1000 / float64(m), nil
}
