package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/cluster"
	"github.com/xdlgo/xps/internal/config"
	"github.com/xdlgo/xps/internal/datagen"
	"github.com/xdlgo/xps/internal/metrics"
	"github.com/xdlgo/xps/reader"
)

// JobOptions configure a whole worker job: data, cluster, training.
type JobOptions struct {
	// Config is the job's configuration (defaults filled, validated).
	Config config.Config
	// Etcd is the etcd client the worker registers with and finds the shard
	// map through. Required.
	Etcd *clientv3.Client
	// Prefix is the cluster's etcd key prefix. The default value is
	// cluster.DefaultPrefix.
	Prefix string
	// Index and Count: this is worker Index of Count. With one training
	// file, worker i takes every Count-th line starting at line i; with the
	// generated dataset, every Count-th sample. The default value of Count
	// is 1.
	Index, Count int
	// TrainFile and TestFile are data files in Config.Train.Format. When
	// TrainFile is empty the built-in generated dataset is used.
	TrainFile, TestFile string
	// LeaseTTL is the worker's registration lease TTL. The default value is
	// cluster.DefaultTTL.
	LeaseTTL time.Duration
	// Progress receives progress lines. The default value (nil) prints none.
	Progress io.Writer
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
}

// JobResult is what a job prints as its summary (and as JSON with -json).
type JobResult struct {
	Result
	Worker      string   `json:"worker"`
	Index       int      `json:"index"`
	Count       int      `json:"count"`
	Shards      int      `json:"shards"`
	Fields      int      `json:"fields"`
	DenseParams int      `json:"dense_params"`
	Data        string   `json:"data"`
	TrainRows   int      `json:"train_rows"`
	Skipped     int64    `json:"skipped_lines"`
	BestAUC     *float64 `json:"best_auc,omitempty"`
	LoadSeconds float64  `json:"load_seconds"`
	WallSeconds float64  `json:"wall_seconds"`
}

// Data is a job's training and test data.
type Data struct {
	Train, Test *reader.Dataset
	// Desc describes where the data came from, for humans.
	Desc string
	// Skipped counts malformed lines skipped (train.on_error: skip).
	Skipped int64
	// BestAUC is the best achievable test AUC (the hidden teacher's own),
	// known for generated data only.
	BestAUC *float64
}

// LoadData reads the job's training and test data: files when TrainFile is
// set, otherwise the generated dataset.
func LoadData(opts JobOptions) (Data, error) {
	cfg := opts.Config
	count := max(opts.Count, 1)
	if opts.TrainFile != "" {
		format, err := reader.ParseFormat(cfg.Train.Format)
		if err != nil {
			return Data{}, err
		}
		policy, err := reader.ParseErrorPolicy(cfg.Train.OnError)
		if err != nil {
			return Data{}, err
		}
		train, st, err := reader.ReadFile(opts.TrainFile, reader.ReadOptions{Format: format, OnError: policy,
			Stride: count, Index: opts.Index})
		if err != nil {
			return Data{}, err
		}
		d := Data{Train: train, Skipped: st.Skipped,
			Desc: fmt.Sprintf("%s (%s, lines %d mod %d)", opts.TrainFile, format, opts.Index, count)}
		if opts.TestFile != "" {
			if d.Test, st, err = reader.ReadFile(opts.TestFile, reader.ReadOptions{Format: format, OnError: policy}); err != nil {
				return Data{}, err
			}
			d.Skipped += st.Skipped
		}
		return d, nil
	}
	d := cfg.Data
	gen, err := datagen.New(datagen.Config{Fields: d.Fields, UserFields: d.UserFields, MeanBag: d.MeanBag,
		Vocab: d.Vocab, ZipfS: d.ZipfS, SamplesPerUser: d.SamplesPerUser, Seed: d.Seed})
	if err != nil {
		return Data{}, fmt.Errorf("worker: generator: %w", err)
	}
	all := reader.NewDataset()
	gen.Generate(all, d.TrainSamples)
	test := reader.NewDataset()
	probs := gen.Generate(test, d.TestSamples)
	train := all
	if count > 1 {
		train = reader.NewDataset()
		var feats []reader.Feature
		for i := opts.Index; i < all.Len(); i += count {
			label, fields, ids, values := all.Sample(i)
			feats = feats[:0]
			for k := range fields {
				feats = append(feats, reader.Feature{Field: fields[k], ID: ids[k], Value: values[k]})
			}
			train.Append(label, feats)
		}
	}
	bestAUC := metrics.AUC(test.Labels, probs)
	return Data{Train: train, Test: test, BestAUC: &bestAUC,
		Desc: fmt.Sprintf("generated CTR data (%d fields, %d train samples, seed %d)", d.Fields, d.TrainSamples, d.Seed)}, nil
}

// RunJob loads the data, registers the worker in etcd, waits for the
// scheduler's shard map, declares the model and trains.
func RunJob(ctx context.Context, opts JobOptions) (JobResult, error) {
	wall := time.Now()
	if opts.Etcd == nil {
		return JobResult{}, fmt.Errorf("worker: an etcd client is required")
	}
	if opts.Prefix == "" {
		opts.Prefix = cluster.DefaultPrefix
	}
	opts.Count = max(opts.Count, 1)
	if opts.Index < 0 || opts.Index >= opts.Count {
		return JobResult{}, fmt.Errorf("worker: index %d is not in [0, %d)", opts.Index, opts.Count)
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = cluster.DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	name := fmt.Sprintf("worker-%d", opts.Index)
	progress := opts.Progress
	say := func(format string, args ...any) {
		if progress != nil {
			fmt.Fprintf(progress, name+": "+format+"\n", args...)
		}
	}
	loadStart := time.Now()
	data, err := LoadData(opts)
	if err != nil {
		return JobResult{}, err
	}
	res := JobResult{Worker: name, Index: opts.Index, Count: opts.Count, Data: data.Desc, TrainRows: data.Train.Len(),
		Skipped: data.Skipped, BestAUC: data.BestAUC, LoadSeconds: time.Since(loadStart).Seconds()}
	say("loaded %d training samples from %s in %.1fs", data.Train.Len(), data.Desc, res.LoadSeconds)
	if data.Skipped > 0 {
		say("skipped %d malformed lines (train.on_error: skip)", data.Skipped)
	}
	reg, err := cluster.Register(ctx, opts.Etcd, opts.Prefix, cluster.Member{Kind: cluster.KindWorker, ID: name,
		PID: os.Getpid(), Started: time.Now()}, opts.LeaseTTL)
	if err != nil {
		return res, fmt.Errorf("worker: %w", err)
	}
	defer reg.Close()
	// A worker whose lease is lost has been declared dead: stop training.
	var lostWG sync.WaitGroup
	defer lostWG.Wait() // runs after cancel: deferred calls run last-in first-out
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lostWG.Add(1)
	go func() {
		defer lostWG.Done()
		select {
		case <-reg.Lost():
			cancel(fmt.Errorf("worker: %s lost its etcd lease", name))
		case <-ctx.Done():
		}
	}()
	say("waiting for the shard map")
	m, err := cluster.WaitShardMap(ctx, opts.Etcd, opts.Prefix)
	if err != nil {
		return res, fmt.Errorf("worker: %w", err)
	}
	cl, err := client.New(m)
	if err != nil {
		return res, fmt.Errorf("worker: %w", err)
	}
	defer cl.Close()
	topts := Options{Config: opts.Config, Name: name, Progress: progress, Logger: opts.Logger}
	if opts.Count > 1 {
		topts.BeforeFinalEval = func(ctx context.Context) error {
			say("waiting for all %d workers to finish training before the final evaluation", opts.Count)
			return reg.Barrier(ctx, "final-eval", opts.Count)
		}
	}
	tr, err := New(cl, data.Train, data.Test, topts)
	if err != nil {
		return res, err
	}
	if err := tr.Declare(ctx); err != nil {
		if opts.Count > 1 {
			err = fmt.Errorf("%w (with several workers, every worker must build the same model: set model.fields when a worker's share of the data may lack the highest field)", err)
		}
		return res, err
	}
	res.Shards, res.Fields, res.DenseParams = cl.NumShards(), tr.Fields(), tr.DenseParams()
	say("training on %d shards: %d fields, MLP %v, %d dense parameters", res.Shards, res.Fields,
		opts.Config.Model.Hidden, res.DenseParams)
	r, err := tr.Run(ctx)
	res.Result = r
	res.WallSeconds = time.Since(wall).Seconds()
	if cause := context.Cause(ctx); err != nil && cause != nil && cause != ctx.Err() {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return res, err
}
