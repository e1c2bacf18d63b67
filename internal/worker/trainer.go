package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/internal/config"
	"github.com/xdlgo/xps/internal/metrics"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

// DenseName is the name of the MLP's dense parameter vector on the shards.
const DenseName = "mlp"

// MaxFields bounds the number of fields of a model: the MLP input is one
// pooled vector per field, so a stray huge field number in the data would
// otherwise ask for a giant network.
const MaxFields = 4096

// maxDenseParams bounds the MLP's parameter count (one gRPC message carries
// a shard's share of it as float32s).
const maxDenseParams = 1 << 27

// ErrNoData is returned when there is nothing to train or evaluate on.
var ErrNoData = errors.New("worker: no data")

// Options configure a Trainer.
type Options struct {
	// Config is the job's configuration (defaults filled, validated).
	Config config.Config
	// Name labels progress lines. The default value is "worker".
	Name string
	// Progress receives progress lines. The default value (nil) prints none.
	Progress io.Writer
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
	// BeforeFinalEval, when set, runs after the last batch's push has been
	// applied and before the final evaluation (a job with several workers
	// waits there for the others, so that the final AUC is the whole
	// model's). The default value is nil.
	BeforeFinalEval func(ctx context.Context) error
}

// Eval is one evaluation on the test set.
type Eval struct {
	AUC     float64 `json:"auc"`
	LogLoss float64 `json:"logloss"`
	Samples int     `json:"samples"`
	Seconds float64 `json:"seconds"`
}

// Result summarises a training run.
type Result struct {
	Samples          int64   `json:"samples"`
	Seconds          float64 `json:"seconds"`
	SamplesPerSecond float64 `json:"samples_per_second"`
	TestAUC          float64 `json:"test_auc"`
	TestLogLoss      float64 `json:"test_logloss"`
	TestSamples      int     `json:"test_samples"`
	TrainLoss        float64 `json:"train_loss"`
	Batches          int64   `json:"batches"`
	Epochs           int     `json:"epochs"`
	UniquePerBatch   float64 `json:"unique_ids_per_batch"`
	// FetchWaitSeconds is training time spent waiting for a batch's rows
	// (the prefetch did not finish in time); PushWaitSeconds waiting for a
	// free push buffer (pushes in flight at the bound).
	FetchWaitSeconds float64 `json:"fetch_wait_seconds"`
	PushWaitSeconds  float64 `json:"push_wait_seconds"`
	Evals            []Eval  `json:"evals"`
}

// Trainer trains one worker's share of the data against the AMS shards.
type Trainer struct {
	cl     *client.Client
	cfg    config.Config
	opts   Options
	train  *reader.Dataset
	test   *reader.Dataset
	layout *sparsenet.Layout
	mlp    *densenet.MLP
	tables []ams.TableSpec // index = layout table index

	// push ring: a buffer is taken before a push and returned after it.
	free    chan *pushBuf
	pushWG  sync.WaitGroup
	fetchWG sync.WaitGroup
	// pushWait accumulates step's waits for a push buffer (Run's goroutine only).
	pushWait time.Duration
	errMu    sync.Mutex
	pushErr  error // first asynchronous push error; guarded by errMu
}

// pushBuf holds one batch's gradients while its push is in flight.
type pushBuf struct {
	ids   [][]uint64
	grads [][]float32
	dense []float32
}

// New builds a trainer for the model in opts.Config over the given data
// (test may be nil). The number of fields is Config.Model.Fields, or 1 +
// the largest field of the data.
func New(cl *client.Client, train, test *reader.Dataset, opts Options) (*Trainer, error) {
	cfg := opts.Config
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	opts.Config = cfg
	if opts.Name == "" {
		opts.Name = "worker"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if train == nil || train.Len() == 0 {
		return nil, fmt.Errorf("%w: empty training set", ErrNoData)
	}
	fields := cfg.Model.Fields
	if fields == 0 {
		fields = train.NumFields
		if test != nil && test.NumFields > fields {
			fields = test.NumFields
		}
		if len(cfg.Model.FieldTables) > fields {
			fields = len(cfg.Model.FieldTables)
		}
	}
	if fields == 0 {
		return nil, fmt.Errorf("%w: the data has no features", ErrNoData)
	}
	if fields > MaxFields {
		return nil, fmt.Errorf("worker: the model would have %d fields (1 + the largest field in the data), more than %d: check the data format (libFM fields are positions in the line) or set model.fields", fields, MaxFields)
	}
	tableIdx := map[string]int{}
	dims := make([]int, len(cfg.Model.Tables))
	for i, t := range cfg.Model.Tables {
		tableIdx[t.Name] = i
		dims[i] = t.Dim
	}
	fieldTable := make([]int, fields)
	if len(cfg.Model.FieldTables) > 0 {
		if len(cfg.Model.FieldTables) != fields {
			return nil, fmt.Errorf("worker: model.field_tables names %d tables but the data has %d fields", len(cfg.Model.FieldTables), fields)
		}
		for f, name := range cfg.Model.FieldTables {
			fieldTable[f] = tableIdx[name]
		}
	}
	pooling := sparsenet.Sum
	if cfg.Model.Pooling == "mean" {
		pooling = sparsenet.Mean
	}
	layout, err := sparsenet.NewLayout(fieldTable, dims, pooling)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if w, b := layout.Width(), max(cfg.Train.BatchSize, cfg.Train.EvalBatchSize); w*b > math.MaxInt32 {
		return nil, fmt.Errorf("worker: a batch of %d samples x %d inputs is too large; lower the batch size or the embedding dims", b, w)
	}
	sizes := append([]int{layout.Width()}, cfg.Model.Hidden...)
	mlp, err := densenet.NewMLP(append(sizes, 1))
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if n := mlp.NumParams(); n > maxDenseParams {
		return nil, fmt.Errorf("worker: the MLP %v would have %d parameters, more than %d", mlp.Sizes, n, maxDenseParams)
	}
	t := &Trainer{cl: cl, cfg: cfg, opts: opts, train: train, test: test, layout: layout, mlp: mlp,
		tables: cfg.Model.Tables, free: make(chan *pushBuf, cfg.Train.MaxInflightPushes)}
	for i := 0; i < cfg.Train.MaxInflightPushes; i++ {
		t.free <- &pushBuf{ids: make([][]uint64, len(dims)), grads: make([][]float32, len(dims)),
			dense: make([]float32, mlp.NumParams())}
	}
	return t, nil
}

// Fields returns the number of fields of the model.
func (t *Trainer) Fields() int { return t.layout.Fields() }

// DenseParams returns the number of MLP parameters.
func (t *Trainer) DenseParams() int { return t.mlp.NumParams() }

// Declare declares the model's tables and dense vector on the shards. It is
// idempotent: when several workers declare, the first creation wins and
// later ones keep what exists.
func (t *Trainer) Declare(ctx context.Context) error {
	init := make([]float32, t.mlp.NumParams())
	t.mlp.Init(init, t.cfg.Model.Seed)
	d := client.Dense{Spec: ams.DenseSpec{Name: DenseName, Size: len(init), Optimizer: t.cfg.Model.DenseOptimizer}, Init: init}
	if err := t.cl.Declare(ctx, t.tables, []client.Dense{d}); err != nil {
		return fmt.Errorf("worker: declare model: %w", err)
	}
	return nil
}

// state holds one batch's buffers, reused across batches.
type state struct {
	batch   *sparsenet.Batch
	ws      *densenet.Workspace
	rows    [][]float32
	params  []float32
	x, dx   []float32
	labels  []float32
	logits  []float32
	probs   []float32
	dlogits []float32
	pulls   []client.Table
}

func (t *Trainer) newState(maxBatch int) *state {
	ws := t.mlp.NewWorkspace(maxBatch)
	ws.Threads = t.cfg.Train.DenseThreads
	s := &state{batch: t.layout.NewBatch(), ws: ws,
		rows: make([][]float32, t.layout.Tables()), params: make([]float32, t.mlp.NumParams()),
		x: make([]float32, maxBatch*t.layout.Width()), dx: make([]float32, maxBatch*t.layout.Width()),
		labels: make([]float32, maxBatch), logits: make([]float32, maxBatch),
		probs: make([]float32, maxBatch), dlogits: make([]float32, maxBatch),
		pulls: make([]client.Table, t.layout.Tables())}
	return s
}

// load fills the batch from samples idx of ds.
func (t *Trainer) load(s *state, ds *reader.Dataset, idx []int32) error {
	s.batch.Reset()
	for j, i := range idx {
		label, fields, ids, values := ds.Sample(int(i))
		if err := s.batch.Add(fields, ids, values); err != nil {
			return fmt.Errorf("worker: sample %d: %w", i, err)
		}
		s.labels[j] = label
	}
	return nil
}

// pull fetches the batch's unique rows and the dense parameters, in one
// request per shard.
func (t *Trainer) pull(ctx context.Context, s *state, create bool) error {
	for ti := range s.rows {
		ids := s.batch.IDs(ti)
		s.rows[ti] = grow(s.rows[ti], len(ids)*t.layout.Dim(ti))
		s.pulls[ti] = client.Table{Name: t.tables[ti].Name, IDs: ids, Rows: s.rows[ti]}
	}
	return t.cl.Pull(ctx, s.pulls, []client.Vector{{Name: DenseName, Values: s.params}}, create)
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n, n+n/4)
	}
	return b[:n]
}

// Run trains for Config.Train.Epochs epochs, evaluating on the test set
// after each epoch (and every EvalEvery batches), and returns the summary.
// The final evaluation runs after every push has been applied.
func (t *Trainer) Run(ctx context.Context) (res Result, err error) {
	cfg := t.cfg.Train
	bs := cfg.BatchSize
	depth := *cfg.PrefetchBatches
	states := make([]*state, depth+1)
	for i := range states {
		states[i] = t.newState(bs)
	}
	n := t.train.Len()
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	batchesPerEpoch := (n + bs - 1) / bs
	var trainDur time.Duration
	var uniq int64
	lastProgress := time.Now()
	progressSamples, progressDur := int64(0), time.Duration(0)
	var lossSum float64
	var lossN int
	defer func() {
		// Join every fetch and push goroutine, whatever happened.
		t.fetchWG.Wait()
		t.pushWG.Wait()
		if err == nil {
			err = t.takePushErr()
		}
	}()
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		if *cfg.Shuffle {
			rng := rand.New(rand.NewPCG(t.cfg.Model.Seed, uint64(epoch)))
			rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		batch := func(b int) []int32 { return order[b*bs : min((b+1)*bs, n)] }
		lossSum, lossN = 0, 0
		// fetches[i] is batch b+i, in flight or done; at most depth+1.
		var fetches []*fetch
		for b := 0; b < batchesPerEpoch; b++ {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if err := t.takePushErr(); err != nil {
				return res, err
			}
			start := time.Now()
			// Keep the next depth batches loading and pulling while this
			// one trains; batch b+depth reuses the state of batch b-1,
			// which has trained.
			for k := b + len(fetches); k <= min(b+depth, batchesPerEpoch-1); k++ {
				fetches = append(fetches, t.startFetch(ctx, states[k%len(states)], batch(k)))
			}
			cur := fetches[0]
			fetches = fetches[1:]
			w0 := time.Now()
			<-cur.done
			res.FetchWaitSeconds += time.Since(w0).Seconds()
			if cur.err != nil {
				return res, cur.err
			}
			loss, err := t.step(ctx, cur.s, len(cur.idx))
			if err != nil {
				return res, err
			}
			d := time.Since(start)
			trainDur += d
			progressDur += d
			res.Samples += int64(len(cur.idx))
			progressSamples += int64(len(cur.idx))
			res.Batches++
			uniq += int64(cur.s.batch.Unique())
			lossSum += loss
			lossN++
			if t.opts.Progress != nil && time.Since(lastProgress) >= cfg.ProgressEvery {
				fmt.Fprintf(t.opts.Progress, "%s: epoch %d/%d batch %d/%d samples %d loss %.4f %.0f samples/s\n",
					t.opts.Name, epoch, cfg.Epochs, b+1, batchesPerEpoch, res.Samples, lossSum/float64(lossN),
					float64(progressSamples)/progressDur.Seconds())
				lastProgress, progressSamples, progressDur = time.Now(), 0, 0
			}
			if cfg.EvalEvery > 0 && res.Batches%int64(cfg.EvalEvery) == 0 && b+1 < batchesPerEpoch {
				for _, f := range fetches {
					<-f.done // keep the prefetch out of the evaluation's time
				}
				if _, err := t.evalAndReport(ctx, &res, fmt.Sprintf("batch %d", res.Batches)); err != nil {
					return res, err
				}
			}
		}
		if epoch == cfg.Epochs {
			t.pushWG.Wait() // the last evaluation sees every update
			if err := t.takePushErr(); err != nil {
				return res, err
			}
			if t.opts.BeforeFinalEval != nil {
				if err := t.opts.BeforeFinalEval(ctx); err != nil {
					return res, err
				}
			}
		}
		if _, err := t.evalAndReport(ctx, &res, fmt.Sprintf("epoch %d", epoch)); err != nil {
			return res, err
		}
	}
	res.Epochs = cfg.Epochs
	res.Seconds = trainDur.Seconds()
	if res.Seconds > 0 {
		res.SamplesPerSecond = float64(res.Samples) / res.Seconds
	}
	if lossN > 0 {
		res.TrainLoss = lossSum / float64(lossN)
	}
	if res.Batches > 0 {
		res.UniquePerBatch = float64(uniq) / float64(res.Batches)
	}
	res.PushWaitSeconds = t.pushWait.Seconds()
	if k := len(res.Evals); k > 0 {
		last := res.Evals[k-1]
		res.TestAUC, res.TestLogLoss, res.TestSamples = last.AUC, last.LogLoss, last.Samples
	}
	return res, nil
}

func (t *Trainer) evalAndReport(ctx context.Context, res *Result, when string) (Eval, error) {
	if t.test == nil || t.test.Len() == 0 {
		return Eval{}, nil
	}
	e, err := t.Evaluate(ctx)
	if err != nil {
		return e, err
	}
	res.Evals = append(res.Evals, e)
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, "%s: eval after %s: test AUC %.4f logloss %.4f (%d samples, %.1fs)\n",
			t.opts.Name, when, e.AUC, e.LogLoss, e.Samples, e.Seconds)
	}
	return e, nil
}

// fetch is one batch being loaded and pulled, possibly ahead of training.
type fetch struct {
	s    *state
	idx  []int32
	err  error         // set before done is closed
	done chan struct{} // closed when s holds the batch and its rows
}

// startFetch loads samples idx into s and pulls their rows and the dense
// parameters, in a goroutine joined by Run.
func (t *Trainer) startFetch(ctx context.Context, s *state, idx []int32) *fetch {
	f := &fetch{s: s, idx: idx, done: make(chan struct{})}
	t.fetchWG.Add(1)
	go func() {
		defer t.fetchWG.Done()
		defer close(f.done)
		if f.err = t.load(s, t.train, idx); f.err == nil {
			f.err = t.pull(ctx, s, true)
		}
	}()
	return f
}

// step trains on the n samples fetched into s and starts their
// asynchronous push.
func (t *Trainer) step(ctx context.Context, s *state, n int) (float64, error) {
	w := t.layout.Width()
	x, dx := s.x[:n*w], s.dx[:n*w]
	s.batch.Pool(s.rows, x)
	t.mlp.Forward(s.ws, s.params, x, n, s.logits[:n])
	loss := densenet.SigmoidBCE(s.logits[:n], s.labels[:n], s.probs[:n], s.dlogits[:n])
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, fmt.Errorf("worker: training diverged: batch loss is %v", loss)
	}
	var pb *pushBuf
	w0 := time.Now()
	select { // wait for a free push buffer: bounds pushes in flight
	case pb = <-t.free:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	t.pushWait += time.Since(w0)
	t.mlp.Backward(s.ws, s.params, x, n, s.dlogits[:n], pb.dense, dx)
	for ti := range pb.grads {
		ids := s.batch.IDs(ti)
		pb.ids[ti] = append(pb.ids[ti][:0], ids...)
		pb.grads[ti] = grow(pb.grads[ti], len(ids)*t.layout.Dim(ti))
	}
	s.batch.Scatter(dx, pb.grads)
	t.pushWG.Add(1)
	go func() {
		defer t.pushWG.Done()
		err := t.push(ctx, pb)
		t.free <- pb // capacity equals the ring size: never blocks
		if err != nil {
			t.setPushErr(err)
		}
	}()
	return loss, nil
}

func (t *Trainer) push(ctx context.Context, pb *pushBuf) error {
	tables := make([]client.Table, len(pb.ids))
	for ti := range tables {
		tables[ti] = client.Table{Name: t.tables[ti].Name, IDs: pb.ids[ti], Rows: pb.grads[ti]}
	}
	return t.cl.Push(ctx, tables, []client.Vector{{Name: DenseName, Values: pb.dense}})
}

func (t *Trainer) setPushErr(err error) {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	if t.pushErr == nil {
		t.pushErr = fmt.Errorf("worker: asynchronous push: %w", err)
	}
}

func (t *Trainer) takePushErr() error {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.pushErr
}

// Evaluate scores the test set with the shards' current model (rows not on
// the shards count as zeros; nothing is created) and returns AUC and
// logloss.
func (t *Trainer) Evaluate(ctx context.Context) (Eval, error) {
	if t.test == nil || t.test.Len() == 0 {
		return Eval{}, fmt.Errorf("%w: empty test set", ErrNoData)
	}
	start := time.Now()
	bs := t.cfg.Train.EvalBatchSize
	s := t.newState(bs)
	n := t.test.Len()
	probs := make([]float32, 0, n)
	labels := make([]float32, 0, n)
	idx := make([]int32, 0, bs)
	w := t.layout.Width()
	for lo := 0; lo < n; lo += bs {
		hi := min(lo+bs, n)
		idx = idx[:0]
		for i := lo; i < hi; i++ {
			idx = append(idx, int32(i))
		}
		if err := t.load(s, t.test, idx); err != nil {
			return Eval{}, err
		}
		if err := t.pull(ctx, s, false); err != nil {
			return Eval{}, err
		}
		m := hi - lo
		s.batch.Pool(s.rows, s.x[:m*w])
		t.mlp.Forward(s.ws, s.params, s.x[:m*w], m, s.logits[:m])
		for j := 0; j < m; j++ {
			probs = append(probs, densenet.Sigmoid(s.logits[j]))
		}
		labels = append(labels, s.labels[:m]...)
	}
	return Eval{AUC: metrics.AUC(labels, probs), LogLoss: metrics.LogLoss(labels, probs), Samples: n,
		Seconds: time.Since(start).Seconds()}, nil
}
