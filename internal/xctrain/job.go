package xctrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/checkpoint"
	"github.com/xdlgo/xps/internal/config"
	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/internal/membership"
	"github.com/xdlgo/xps/reader"
)

// ErrLeaseLost is the cause of a job's end when its etcd lease was lost
// (the cluster declared the worker dead).
var ErrLeaseLost = errors.New("xctrain: lost its etcd lease")

// JobOptions configure a whole extreme-classification worker job.
type JobOptions struct {
	// Config is the job's configuration (Model.Output.Kind "slide").
	Config config.Config
	// Etcd is the etcd client the worker registers with and finds the
	// shard map through. Required.
	Etcd *clientv3.Client
	// Prefix is the cluster's etcd key prefix. The default value is
	// membership.DefaultPrefix.
	Prefix string
	// Index and Count: this is worker Index of Count. The SLIDE layer lives
	// in one worker, so Count must be 1 (the default).
	Index, Count int
	// Train and Test list XMLRepository files, directories or globs. Train
	// is required; Test empty skips evaluation.
	Train, Test []string
	// LeaseTTL is the worker's registration lease TTL. The default value is
	// membership.DefaultTTL.
	LeaseTTL time.Duration
	// Progress receives progress lines. The default value (nil) prints none.
	Progress io.Writer
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
	// Local resolves the shards that serve in this process (the embedded
	// local cluster: local.Cluster): pulls and pushes to them are direct
	// calls of their service instead of loopback gRPC (client.NewLocal).
	// The default value (nil) sends everything through gRPC.
	Local client.Resolver
}

// JobResult is what a job prints as its summary (and as JSON).
type JobResult struct {
	Result
	Worker         string  `json:"worker"`
	Shards         int     `json:"shards"`
	Data           string  `json:"data"`
	TrainSamples   int     `json:"train_samples"`
	TestSamples    int     `json:"test_samples"`
	EmbeddingDim   int     `json:"embedding_dim"`
	Hidden         []int   `json:"hidden"`
	DenseParams    int     `json:"dense_params"`
	LoadSeconds    float64 `json:"load_seconds"`
	WallSeconds    float64 `json:"wall_seconds"`
	SkippedSamples int64   `json:"skipped"`
}

// RunJob loads the data, registers the worker in etcd, waits for the
// scheduler's shard map, declares the model on the shards and trains.
func RunJob(ctx context.Context, opts JobOptions) (JobResult, error) {
	wall := time.Now()
	if opts.Etcd == nil {
		return JobResult{}, errors.New("xctrain: an etcd client is required")
	}
	if opts.Prefix == "" {
		opts.Prefix = membership.DefaultPrefix
	}
	opts.Count = max(opts.Count, 1)
	if opts.Count != 1 || opts.Index != 0 {
		return JobResult{}, fmt.Errorf("xctrain: the SLIDE output layer lives in one worker: run 1 worker (got index %d of %d)", opts.Index, opts.Count)
	}
	if len(opts.Train) == 0 {
		return JobResult{}, fmt.Errorf("%w: model.output.kind slide needs training files (-train, XMLRepository format; cmd/xcgen writes some)", ErrNoData)
	}
	cfg := opts.Config
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return JobResult{}, fmt.Errorf("xctrain: %w", err)
	}
	opts.Config = cfg
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = membership.DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	conn, err := controlplane.New(opts.Etcd, opts.Prefix)
	if err != nil {
		return JobResult{}, fmt.Errorf("xctrain: %w", err)
	}
	name := membership.WorkerName(opts.Index)
	res := JobResult{Worker: name}
	reg, err := membership.Register(ctx, opts.Etcd, opts.Prefix, membership.Member{Kind: membership.KindWorker, ID: name,
		PID: os.Getpid(), Started: time.Now()}, opts.LeaseTTL)
	if err != nil {
		return res, fmt.Errorf("xctrain: %w", err)
	}
	defer reg.Close()
	var lostWG sync.WaitGroup
	defer lostWG.Wait() // runs after cancel (deferred calls run last-in first-out)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lostWG.Add(1)
	go func() {
		defer lostWG.Done()
		select {
		case <-reg.Lost():
			cancel(fmt.Errorf("%w (%s)", ErrLeaseLost, name))
		case <-ctx.Done():
		}
	}()
	res, err = trainJob(ctx, opts, conn, res)
	res.WallSeconds = time.Since(wall).Seconds()
	if cause := context.Cause(ctx); err != nil && cause != nil && cause != ctx.Err() {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return res, err
}

func trainJob(ctx context.Context, opts JobOptions, conn *controlplane.Conn, res JobResult) (JobResult, error) {
	say := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, res.Worker+": "+format+"\n", args...)
		}
	}
	policy, err := reader.ParseErrorPolicy(opts.Config.Train.OnError)
	if err != nil {
		return res, fmt.Errorf("xctrain: %w", err)
	}
	say("waiting for the shard map")
	m, err := conn.WaitShardMap(ctx)
	if err != nil {
		return res, fmt.Errorf("xctrain: %w", err)
	}
	cl, err := client.NewLocal(m, opts.Local)
	if err != nil {
		return res, fmt.Errorf("xctrain: %w", err)
	}
	defer cl.Close()
	loadStart := time.Now()
	train, err := Load(ctx, opts.Train, policy)
	if err != nil {
		return res, fmt.Errorf("training data: %w", err)
	}
	var test *Dataset
	if len(opts.Test) > 0 {
		if test, err = Load(ctx, opts.Test, policy); err != nil {
			return res, fmt.Errorf("test data: %w", err)
		}
		res.TestSamples = test.Len()
	}
	res.LoadSeconds = time.Since(loadStart).Seconds()
	res.Data, res.TrainSamples, res.SkippedSamples = train.Desc, train.Len(), train.Skipped
	if test != nil {
		res.SkippedSamples += test.Skipped
	}
	say("training data: %s; %d test samples (read in %.1fs)", train.Desc, res.TestSamples, res.LoadSeconds)
	pz, err := conn.StartPauser(ctx, res.Worker, opts.Logger)
	if err != nil {
		return res, fmt.Errorf("xctrain: %w", err)
	}
	defer pz.Close()
	pz.SetVersion(m.Version)
	tr, err := New(cl, Options{Config: opts.Config, Train: train, Test: test, Name: res.Worker,
		Progress: opts.Progress, Logger: opts.Logger, Pauser: pz, Conn: conn})
	if err != nil {
		return res, err
	}
	defer tr.Close()
	if err := tr.Declare(ctx); err != nil {
		return res, err
	}
	cp, ok, err := checkpoint.Load(ctx, cl, res.Worker)
	if err != nil {
		return res, err
	}
	_, hasLayer := cp.File(LayerFile)
	switch {
	case ok && cp.Done:
		say("the model's checkpoint says its job finished (%d samples); training again from the start", cp.Applied)
	case ok && !hasLayer:
		say("the model's checkpoint (epoch %d, batch %d, %d samples) names no SLIDE layer: the model was not restored from a snapshot, so the layer it trained with is gone; training again from the start",
			cp.Epoch, cp.Batch, cp.Applied)
	case ok:
		say("resuming from the snapshot's checkpoint: epoch %d, batch %d (%d samples trained before)", cp.Epoch, cp.Batch, cp.Applied)
		if err := tr.resume(cp); err != nil {
			return res, err
		}
	}
	oc := opts.Config.Model.Output
	p := tr.out.Params()
	res.Shards, res.EmbeddingDim, res.Hidden, res.DenseParams = cl.NumShards(), tr.table.Dim, oc.Hidden, tr.net.NumParams()
	say("training on %d shards: embedding dim %d, hidden %v, SLIDE output of %d labels (sparsity %v, %s, K=%d L=%d R=%d), %.0f MB in the layer",
		res.Shards, tr.table.Dim, oc.Hidden, tr.out.Config().Dim, oc.Sparsity, oc.Family, p.K, p.L, p.R,
		float64(tr.out.ParamBytes()+tablesBytes(tr))/1e6)
	pz.StartTraining()
	r, err := tr.Run(ctx)
	pz.StopTraining(ctx)
	res.Result = r
	if err == nil {
		done := tr.modelCheckpoint(r)
		done.Done, done.Epoch = true, r.Epochs
		err = checkpoint.Store(ctx, cl, res.Worker, done)
	}
	return res, err
}

func tablesBytes(t *Trainer) int64 {
	if tb := t.out.Tables(); tb != nil {
		return tb.Bytes()
	}
	return 0
}

// WriteSummary writes the summary lines a worker prints at the end.
func (r JobResult) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%s: trained %d samples (%d epochs) in %.1fs: %.0f samples/s on %d AMS shards\n",
		r.Worker, r.Samples, r.Epochs, r.Seconds, r.SamplesPerSecond, r.Shards)
	fmt.Fprintf(w, "%s: SLIDE output of %d labels over %d inputs, sparsity %v, %s K=%d L=%d R=%d, %.0f MB\n",
		r.Worker, r.Labels, r.InputDim, r.Sparsity, r.Hash, r.K, r.L, r.R, float64(r.LayerBytes)/1e6)
	if e := r.Test; e.Samples > 0 {
		if e.Sparse != nil {
			fmt.Fprintf(w, "%s: test %v with sparse inference (%.2f ms for one sample)\n", r.Worker, *e.Sparse, e.SparseMs)
		}
		if e.Dense != nil {
			fmt.Fprintf(w, "%s: test %v with dense inference (%.2f ms for one sample)\n", r.Worker, *e.Dense, e.DenseMs)
		}
	}
	fmt.Fprintf(w, "%s: wall time %.1fs (data %.1fs)\n", r.Worker, r.WallSeconds, r.LoadSeconds)
}
