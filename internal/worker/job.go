package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/checkpoint"
	"github.com/xdlgo/xps/internal/config"
	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/internal/datagen"
	"github.com/xdlgo/xps/internal/membership"
	"github.com/xdlgo/xps/internal/metrics"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/hdfssrc"
)

// ErrLeaseLost is the cause of a job's end when its etcd lease was lost
// (the cluster declared the worker dead).
var ErrLeaseLost = errors.New("worker: lost its etcd lease")

// JobOptions configure a whole worker job: data, cluster, training.
type JobOptions struct {
	// Config is the job's configuration (defaults filled, validated).
	Config config.Config
	// Etcd is the etcd client the worker registers with and finds the shard
	// map through. Required.
	Etcd *clientv3.Client
	// Prefix is the cluster's etcd key prefix. The default value is
	// membership.DefaultPrefix.
	Prefix string
	// Index and Count: this is worker Index of Count. The default value of
	// Count is 1.
	Index, Count int
	// Train lists the training data: files, directories and globs in
	// Config.Train.Format. Empty: the built-in generated dataset (worker i
	// of W takes groups i, i+W, ...).
	Train []string
	// Splits, when set, are this worker's share of the training files. With
	// Count > 1 and Splits unset, the worker waits for the scheduler's
	// assignment (scheduler -train and -workers); with Count == 1 it reads
	// every file of Train whole.
	Splits []reader.FileSplit
	// Test lists the test data (files, directories, globs), read into
	// memory. The default value (empty) skips evaluation for file data.
	Test []string
	// FS is the file system Train and Test name. The default value (nil)
	// is the one their names are on (hdfssrc.ForPaths): HDFS for
	// hdfs://NAMENODE/PATH names (as user $HADOOP_USER_NAME), else the
	// local one.
	FS reader.FS
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

// JobResult is what a job prints as its summary (and as JSON with -json).
type JobResult struct {
	Result
	Worker      string   `json:"worker"`
	Index       int      `json:"index"`
	Count       int      `json:"count"`
	Shards      int      `json:"shards"`
	Fields      int      `json:"fields"`
	Levels      int      `json:"levels"`
	DenseParams int      `json:"dense_params"`
	Data        string   `json:"data"`
	BestAUC     *float64 `json:"best_auc,omitempty"`
	LoadSeconds float64  `json:"load_seconds"`
	// Stopped is set when a streaming job was stopped (it never ends by itself).
	Stopped bool `json:"stopped,omitempty"`
	// Restores counts the times the job started over from a checkpoint
	// because the cluster was restored from a snapshot.
	Restores    int     `json:"restores,omitempty"`
	WallSeconds float64 `json:"wall_seconds"`
}

// Data is a job's training and test data.
type Data struct {
	// Train opens the training data for an epoch, at start (the zero
	// Position: the beginning; Kafka sources take their positions from the
	// model and ignore it).
	Train func(epoch int, start reader.Position) (reader.Source, error)
	// Test is the test set in memory (nil for none).
	Test []*reader.Group
	// Shape is the model input shape found in the data and the config.
	Shape Shape
	// Desc describes where the data came from, for humans.
	Desc string
	// BestAUC is the best achievable test AUC (the hidden teacher's own),
	// known for generated data only.
	BestAUC *float64
}

// FromStart returns Train opening every epoch at its beginning, as
// Options.Train takes it.
func (d Data) FromStart() func(epoch int) (reader.Source, error) {
	return func(epoch int) (reader.Source, error) { return d.Train(epoch, reader.Position{}) }
}

// peekSamples is how many training samples LoadData looks at to find the
// fields, their levels and dense widths.
const peekSamples = 20000

// LoadData prepares the job's training and test data: files when Train is
// set (splits as given), otherwise the generated dataset.
func LoadData(opts JobOptions, splits []reader.FileSplit) (Data, error) {
	cfg := opts.Config
	count := max(opts.Count, 1)
	var sh shapeFinder
	if len(opts.Train) > 0 {
		format, policy, err := inputFormat(cfg)
		if err != nil {
			return Data{}, err
		}
		open := func(splits []reader.FileSplit, start reader.Position) (reader.Source, error) {
			return reader.OpenFilesAtFS(opts.FS, splits, format, policy, start)
		}
		d := Data{Train: func(_ int, start reader.Position) (reader.Source, error) { return open(splits, start) },
			Desc: fmt.Sprintf("%d file splits of %s (%s, streamed in order)", len(splits), strings.Join(opts.Train, ","), format)}
		if *cfg.Train.Shuffle {
			src, err := open(splits, reader.Position{})
			if err != nil {
				return Data{}, err
			}
			all, err := readAll(src)
			if err != nil {
				return Data{}, fmt.Errorf("worker: training data: %w", err)
			}
			skipped := src.Stats().Skipped
			chunks := chunkGroups(all, cfg.Train.ShuffleChunk)
			seed := cfg.Model.Seed
			d.Train = func(epoch int, start reader.Position) (reader.Source, error) {
				m := newMemorySource(chunks, true, seed, uint64(epoch), start)
				if epoch == 1 { // the groups skipped while reading the files into memory
					m.stats.Skipped = skipped
				}
				return m, nil
			}
			d.Desc = fmt.Sprintf("%d file splits of %s (%s, in memory, %d chunks of up to %d samples shuffled per epoch)",
				len(splits), strings.Join(opts.Train, ","), format, len(chunks), cfg.Train.ShuffleChunk)
		}
		if err := peek(d.Train, &sh); err != nil {
			return Data{}, err
		}
		if d.Test, err = loadTest(opts.FS, opts.Test, format, policy, &sh); err != nil {
			return Data{}, err
		}
		d.Shape, err = sh.shape(cfg, format == reader.SampleGroup)
		return d, err
	}
	dc := cfg.Data
	gen, err := datagen.New(dc.Config)
	if err != nil {
		return Data{}, fmt.Errorf("worker: generator: %w", err)
	}
	var train []*reader.Group
	g := new(reader.Group)
	chunk := 1 << 30
	if *cfg.Train.Shuffle {
		chunk = cfg.Train.ShuffleChunk
	}
	for i, n := 0, 0; n < dc.TrainSamples; i++ {
		gen.NextGroup(g, min(dc.TrainSamples-n, chunk), nil)
		n += g.NumSamples()
		if i%count == opts.Index {
			train = append(train, g.Clone())
			sh.add(g)
		}
	}
	var test []*reader.Group
	var probs []float32
	for n := 0; n < dc.TestSamples; n += g.NumSamples() {
		probs = gen.NextGroup(g, dc.TestSamples-n, probs)
		test = append(test, g.Clone())
	}
	var labels []float32
	for _, g := range test {
		for i := 0; i < g.NumSamples(); i++ {
			labels = append(labels, g.Label(i))
		}
	}
	bestAUC := metrics.AUC(labels, probs)
	shape, err := sh.shape(cfg, true)
	if err != nil {
		return Data{}, err
	}
	shuffle, seed := *cfg.Train.Shuffle, cfg.Model.Seed
	return Data{
		Train: func(epoch int, start reader.Position) (reader.Source, error) {
			return newMemorySource(train, shuffle, seed, uint64(epoch), start), nil
		},
		Test: test, Shape: shape, BestAUC: &bestAUC,
		Desc: fmt.Sprintf("generated CTR data (%d fields, %d user fields, %d train samples, seed %d)",
			dc.Fields, dc.UserFields, dc.TrainSamples, dc.Seed)}, nil
}

// inputFormat returns the format and malformed-input policy of cfg.Train.
func inputFormat(cfg config.Config) (reader.Format, reader.ErrorPolicy, error) {
	format, err := reader.ParseFormat(cfg.Train.Format)
	if err != nil {
		return 0, 0, err
	}
	policy, err := reader.ParseErrorPolicy(cfg.Train.OnError)
	return format, policy, err
}

// loadTest reads the test files into memory and adds them to sh.
func loadTest(fsys reader.FS, patterns []string, format reader.Format, policy reader.ErrorPolicy, sh *shapeFinder) ([]*reader.Group, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	paths, err := reader.ExpandPathsFS(fsys, patterns)
	if err != nil {
		return nil, fmt.Errorf("worker: test data: %w", err)
	}
	ts := make([]reader.FileSplit, len(paths))
	for i, p := range paths {
		ts[i] = reader.FileSplit{Path: p}
	}
	src, err := reader.OpenFilesFS(fsys, ts, format, policy)
	if err != nil {
		return nil, err
	}
	test, err := readAll(src)
	if err != nil {
		return nil, fmt.Errorf("worker: test data: %w", err)
	}
	for _, g := range test {
		sh.add(g)
	}
	return test, nil
}

// readAll reads a source to its end into memory and closes it.
func readAll(src reader.Source) ([]*reader.Group, error) {
	defer src.Close()
	return reader.ReadAll(context.Background(), src)
}

// peek feeds the first peekSamples training samples to sh.
func peek(open func(int, reader.Position) (reader.Source, error), sh *shapeFinder) error {
	src, err := open(1, reader.Position{})
	if err != nil {
		return err
	}
	defer src.Close()
	g := new(reader.Group)
	for n := 0; n < peekSamples; n += g.NumSamples() {
		err := src.Next(context.Background(), g)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("worker: training data: %w", err)
		}
		sh.add(g)
	}
	return nil
}

// shapeFinder collects the fields of sample groups: the largest field, the
// level of the line each field is first seen on, and dense widths.
type shapeFinder struct {
	fields int
	level  map[uint32]int
	dense  map[uint32]int
	err    error
}

func (s *shapeFinder) add(g *reader.Group) {
	if s.level == nil {
		s.level, s.dense = map[uint32]int{}, map[uint32]int{}
	}
	for k := range g.Levels {
		l := &g.Levels[k]
		for _, f := range l.Fields {
			s.fields = max(s.fields, int(min(f, MaxFields))+1)
			if _, ok := s.level[f]; !ok {
				s.level[f] = k
			}
		}
		for i := 0; i < l.Len(); i++ {
			l.Dense(i, func(f uint32, v []float32) {
				s.fields = max(s.fields, int(min(f, MaxFields))+1)
				if _, ok := s.level[f]; !ok {
					s.level[f] = k
				}
				if w, ok := s.dense[f]; ok && w != len(v) && s.err == nil {
					s.err = fmt.Errorf("worker: dense field %d has vectors of %d and %d values", f, w, len(v))
				}
				s.dense[f] = len(v)
			})
		}
	}
}

// shape returns the model shape: config values win over what the data
// shows; data levels are used when useLevels.
func (s *shapeFinder) shape(cfg config.Config, useLevels bool) (Shape, error) {
	if s.err != nil {
		return Shape{}, s.err
	}
	m := cfg.Model
	n := max(m.Fields, len(m.FieldTables), len(m.FieldLevels))
	if m.Fields == 0 {
		n = max(n, s.fields)
	}
	if n == 0 {
		return Shape{}, fmt.Errorf("%w: the data has no features", ErrNoData)
	}
	if n > MaxFields {
		return Shape{}, fmt.Errorf("worker: the model would have %d fields (1 + the largest field in the data), more than %d: check the data format (libFM fields are positions in the line) or set model.fields", n, MaxFields)
	}
	sh := Shape{Fields: n, Levels: make([]int, n), DenseWidths: make([]int, n)}
	for f := 0; f < n; f++ {
		switch {
		case f < len(m.FieldLevels):
			sh.Levels[f] = m.FieldLevels[f]
		case useLevels:
			sh.Levels[f] = s.level[uint32(f)]
		}
		sh.DenseWidths[f] = s.dense[uint32(f)]
	}
	return sh, nil
}

// RunJob loads the data, registers the worker in etcd, waits for the
// scheduler's shard map, declares the model and trains.
func RunJob(ctx context.Context, opts JobOptions) (JobResult, error) {
	wall := time.Now()
	if opts.Etcd == nil {
		return JobResult{}, fmt.Errorf("worker: an etcd client is required")
	}
	if opts.Prefix == "" {
		opts.Prefix = membership.DefaultPrefix
	}
	opts.Count = max(opts.Count, 1)
	if opts.Index < 0 || opts.Index >= opts.Count {
		return JobResult{}, fmt.Errorf("worker: index %d is not in [0, %d)", opts.Index, opts.Count)
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = membership.DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	conn, err := controlplane.New(opts.Etcd, opts.Prefix)
	if err != nil {
		return JobResult{}, fmt.Errorf("worker: %w", err)
	}
	name := membership.WorkerName(opts.Index)
	progress := opts.Progress
	say := func(format string, args ...any) {
		if progress != nil {
			fmt.Fprintf(progress, name+": "+format+"\n", args...)
		}
	}
	res := JobResult{Worker: name, Index: opts.Index, Count: opts.Count}
	reg, err := membership.Register(ctx, opts.Etcd, opts.Prefix, membership.Member{Kind: membership.KindWorker, ID: name,
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
			cancel(fmt.Errorf("%w (%s)", ErrLeaseLost, name))
		case <-ctx.Done():
		}
	}()
	// Snapshot pauses are acknowledged from now on (at once until training
	// starts), so that a worker loading its data holds up no snapshot.
	pz, err := conn.StartPauser(ctx, name, opts.Logger)
	if err != nil {
		return res, fmt.Errorf("worker: %w", err)
	}
	defer pz.Close()
	res, err = trainJob(ctx, opts, conn, reg, pz, res, say)
	res.WallSeconds = time.Since(wall).Seconds()
	select {
	case <-reg.Lost(): // the first cause, whatever failed after it
		if !errors.Is(err, ErrLeaseLost) && err != nil {
			err = fmt.Errorf("%w (%s): %w", ErrLeaseLost, name, err)
		}
	default:
	}
	if cause := context.Cause(ctx); err != nil && cause != nil && cause != ctx.Err() {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return res, err
}

// trainJob is RunJob once the worker is registered: it loads the data,
// then trains in attempts. An attempt ends when the cluster is restored
// from a snapshot (a pause resumes at a higher version), or when a request
// fails because the cluster lost a member (it waits for the restore);
// the next attempt starts over, at the new version, from the checkpoint
// (reader positions, epoch, samples applied) the restored model holds.
func trainJob(ctx context.Context, opts JobOptions, conn *controlplane.Conn, reg *membership.Registration, pz *controlplane.Pauser, res JobResult, say func(string, ...any)) (JobResult, error) {
	say("waiting for the shard map")
	m, err := conn.WaitShardMap(ctx)
	if err != nil {
		return res, fmt.Errorf("worker: %w", err)
	}
	if opts.FS == nil {
		fsys, closer, err := hdfssrc.ForPaths(append(slices.Clone(opts.Train), opts.Test...), "")
		if err != nil {
			return res, fmt.Errorf("worker: data: %w", err)
		}
		defer closer.Close()
		opts.FS = fsys
	}
	splits, err := jobSplits(ctx, opts, conn, res.Worker, say)
	if err != nil {
		return res, err
	}
	cl, err := client.NewLocal(m, opts.Local)
	if err != nil {
		return res, fmt.Errorf("worker: %w", err)
	}
	defer func() { cl.Close() }()
	loadStart := time.Now()
	var data Data
	var kj *kafkaJob
	if opts.Config.Kafka.Enabled() {
		if kj, err = newKafkaJob(opts, conn, cl, res.Worker, say); err != nil {
			return res, err
		}
		if err := kj.sync(ctx); err != nil {
			return res, fmt.Errorf("worker: %w", err)
		}
		var sh shapeFinder
		test, err := loadTest(opts.FS, opts.Test, kj.format, kj.policy, &sh)
		if err != nil {
			return res, err
		}
		if data, err = kj.data(ctx, &sh); err != nil {
			return res, err
		}
		data.Test = test
	} else if data, err = LoadData(opts, splits); err != nil {
		return res, err
	}
	res.Data, res.BestAUC, res.LoadSeconds = data.Desc, data.BestAUC, time.Since(loadStart).Seconds()
	say("training data: %s; %d test samples (prepared in %.1fs)", data.Desc, countSamples(data.Test), res.LoadSeconds)
	stopAcks := func() {}
	defer func() { stopAcks() }()
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			if kj != nil {
				kj.cl = cl
				if err := kj.sync(ctx); err != nil {
					return res, fmt.Errorf("worker: %w", err)
				}
			}
		}
		pz.SetVersion(m.Version)
		a := attemptState{opts: opts, conn: conn, cl: cl, data: data, kj: kj, name: res.Worker, stopAcks: &stopAcks}
		r, err := a.run(ctx, reg, pz, &res, say)
		res.Result = r
		if err == nil || ctx.Err() != nil || !recoverable(err) {
			if err == nil || kj == nil || !opts.Config.Kafka.Streaming || !errors.Is(ctx.Err(), context.Canceled) ||
				errors.Is(context.Cause(ctx), ErrLeaseLost) {
				return res, err
			}
			// A streaming job ends when it is told to: positions are committed.
			res.Stopped = true
			say("stopped: %d samples trained, positions %v stored in the model", r.Samples, r.Positions)
			return res, nil
		}
		// The cluster lost state, or was rolled back: wait for the version
		// it resumes at, then start over from the restored checkpoint.
		say("%v; waiting for the cluster to be restored", err)
		resumed, werr := conn.WaitRestored(ctx, m.Version)
		if werr != nil {
			return res, fmt.Errorf("worker: %w (after %w)", werr, err)
		}
		// The rollback may be of this worker's own death (a frozen process
		// whose lease expired): such a worker must not train on.
		if werr := reg.CheckRegistered(ctx); werr != nil {
			return res, fmt.Errorf("%w (%s): %w", ErrLeaseLost, res.Worker, werr)
		}
		next, werr := conn.WaitShardMapVersion(ctx, resumed.Version)
		if werr != nil {
			return res, fmt.Errorf("worker: %w", werr)
		}
		ncl, werr := client.NewLocal(next, opts.Local)
		if werr != nil {
			return res, fmt.Errorf("worker: %w", werr)
		}
		cl.Close()
		cl, m = ncl, next
		res.Restores++
		say("the cluster was restored at version %d; resuming from the checkpoint in the model", m.Version)
	}
}

// jobSplits returns the worker's share of the training files: as given,
// the scheduler's assignment (several workers), or every file.
func jobSplits(ctx context.Context, opts JobOptions, conn *controlplane.Conn, name string, say func(string, ...any)) ([]reader.FileSplit, error) {
	splits := opts.Splits
	if len(opts.Train) == 0 || splits != nil || opts.Config.Kafka.Enabled() {
		return splits, nil
	}
	if opts.Count > 1 {
		say("waiting for the scheduler's file assignment (start the scheduler with -train and -workers %d)", opts.Count)
		splits, err := conn.WaitAssignment(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		return splits, nil
	}
	paths, err := reader.ExpandPathsFS(opts.FS, opts.Train)
	if err != nil {
		return nil, fmt.Errorf("worker: training data: %w", err)
	}
	for _, p := range paths {
		splits = append(splits, reader.FileSplit{Path: p})
	}
	return splits, nil
}

// recoverable reports whether a failed attempt may go on after a restore:
// the cluster was rolled back, or a request failed the way requests to a
// dead, replaced or restored shard fail. The AMS client's errors wrap the
// same sentinels over gRPC and on direct calls (see amspb.Errors).
func recoverable(err error) bool {
	for _, target := range []error{ErrRestored, ams.ErrStaleVersion, ams.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, target) {
			return true
		}
	}
	return etcdTransient(err)
}

// etcdTransient reports an etcd request (a pause, a barrier) that failed
// as the AMS requests above do: etcd's client reports it as a gRPC status
// of one of their codes, which recoverable has always taken as such.
func etcdTransient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

// attemptState is one training attempt of a job: at one cluster version,
// from the checkpoint the model holds.
type attemptState struct {
	opts     JobOptions
	conn     *controlplane.Conn
	cl       *client.Client
	data     Data
	kj       *kafkaJob
	name     string
	stopAcks *func()
}

func (a *attemptState) run(ctx context.Context, reg *membership.Registration, pz *controlplane.Pauser, res *JobResult, say func(string, ...any)) (Result, error) {
	opts, cl, kj, name := a.opts, a.cl, a.kj, a.name
	start, _, err := checkpoint.Load(ctx, cl, name)
	if err != nil {
		return Result{}, err
	}
	if start.Applied > 0 {
		say("resuming at epoch %d from %v (%d samples applied before)", start.Epoch, start.Positions, start.Applied)
	}
	var at reader.Position
	if len(start.Positions) > 0 && kj == nil {
		at = start.Positions[len(start.Positions)-1]
	}
	train := a.data.Train
	topts := Options{Config: opts.Config, Shape: a.data.Shape, Test: a.data.Test, Start: start,
		Train: func(epoch int) (reader.Source, error) {
			if epoch == start.Epoch && !start.EpochDone {
				return train(epoch, at)
			}
			return train(epoch, reader.Position{})
		},
		Name: name, Progress: opts.Progress, Logger: opts.Logger}
	if kj != nil {
		topts.Commit, topts.CommitEvery, topts.Reopen = kj.commit, opts.Config.Kafka.CommitEvery, kj.sync
	} else {
		// The checkpoint goes into the model, for snapshots (a pause
		// commits it too), and every second, so that the count of samples
		// applied there is fresh (scheduler -snapshot-every-samples).
		topts.Commit = func(ctx context.Context, c Checkpoint) error { return checkpoint.Store(ctx, cl, name, c) }
		topts.CommitEvery = time.Second
	}
	if opts.Config.Train.Sync {
		topts.Sync = &SyncOptions{Worker: opts.Index, Workers: max(opts.Count, 1), Key: ams.CheckpointKey(name)}
	}
	// Pause at a batch boundary when the scheduler asks (a snapshot, a
	// rollback).
	topts.PauseRequested, topts.Pause = pz.Requested, pz.Pause
	if opts.Count > 1 {
		topts.BeforeFinalEval = func(ctx context.Context) error {
			pz.StopTraining(ctx) // no more batches: snapshots need not wait for us
			if kj != nil {       // reading is over: let later partition deals go on without us
				(*a.stopAcks)()
				*a.stopAcks = kj.ackFromNowOn(ctx)
			}
			say("waiting for all %d workers to finish training before the final evaluation", opts.Count)
			return finalBarrier(ctx, a.conn, reg, opts.Count, pz.Version())
		}
	}
	tr, err := New(cl, topts)
	if err != nil {
		return Result{}, err
	}
	if err := tr.Declare(ctx); err != nil {
		if opts.Count > 1 && !recoverable(err) {
			err = fmt.Errorf("%w (with several workers, every worker must build the same model: set model.fields when a worker's share of the data may lack the highest field)", err)
		}
		return Result{}, err
	}
	res.Shards, res.Fields, res.Levels, res.DenseParams = cl.NumShards(), tr.Fields(), tr.Levels(), tr.DenseParams()
	say("training on %d shards (version %d): %d fields in %d levels, MLP %v, %d dense parameters", res.Shards,
		pz.Version(), res.Fields, res.Levels, opts.Config.Model.Hidden, res.DenseParams)
	pz.StartTraining()
	r, err := tr.Run(ctx)
	pz.StopTraining(ctx)
	return r, err
}

// finalBarrier waits until every worker has finished training at version
// (a barrier per version), or returns ErrRestored when the cluster is
// rolled back meanwhile: this worker's last samples may be gone from the
// restored model, so it trains them again from its checkpoint.
func finalBarrier(ctx context.Context, conn *controlplane.Conn, reg *membership.Registration, workers int, version uint64) error {
	bctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := conn.WaitRestored(bctx, version)
		if err == nil {
			cancel(fmt.Errorf("%w: version %d resumes, trained at %d", ErrRestored, r.Version, version))
		} else if errors.Is(err, controlplane.ErrClusterFailed) {
			cancel(err)
		}
	}()
	err := conn.Barrier(bctx, reg, fmt.Sprintf("final-eval-v%d", version), workers)
	if cause := context.Cause(bctx); err != nil && ctx.Err() == nil && cause != nil {
		return cause
	}
	return err
}

func countSamples(gs []*reader.Group) int {
	n := 0
	for _, g := range gs {
		n += g.NumSamples() - g.Pos.Index
	}
	return n
}

// chunkGroups cuts every group into groups of at most size consecutive
// samples (each with the group's upper-level lines).
func chunkGroups(gs []*reader.Group, size int) []*reader.Group {
	var out []*reader.Group
	for _, g := range gs {
		n := g.NumSamples()
		if n-g.Pos.Index <= size {
			out = append(out, g)
			continue
		}
		for lo := g.Pos.Index; lo < n; lo += size {
			out = append(out, sliceGroup(g, lo, min(lo+size, n)))
		}
	}
	return out
}

// sliceGroup returns a copy of g holding only its samples [lo, hi) (and
// every upper-level line).
func sliceGroup(g *reader.Group, lo, hi int) *reader.Group {
	c := new(reader.Group)
	c.Reset(len(g.Levels))
	for k := 1; k < len(g.Levels); k++ {
		c.Levels[k].CopyFrom(&g.Levels[k])
	}
	l0 := &g.Levels[0]
	for i := lo; i < hi; i++ {
		f, id, v := l0.Line(i)
		parent := int32(0)
		if l0.Parent != nil {
			parent = l0.Parent[i]
		}
		c.AddLine(0, parent, f, id, v)
		l0.Dense(i, func(field uint32, vals []float32) { c.AddDense(0, field, vals) })
		c.AddLabels(g.SampleLabels(i)...)
	}
	c.Pos = reader.Position{File: g.Pos.File, Offset: g.Pos.Offset, Index: 0}
	return c
}

// WriteSummary writes the summary lines a worker prints at the end.
func (r JobResult) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%s: trained %d samples (%d epochs) in %.1fs: %.0f samples/s on %d AMS shards\n",
		r.Worker, r.Samples, r.Epochs, r.Seconds, r.SamplesPerSecond, r.Shards)
	fmt.Fprintf(w, "%s: test AUC %.4f, logloss %.4f on %d samples", r.Worker, r.TestAUC, r.TestLogLoss, r.TestSamples)
	if r.BestAUC != nil {
		fmt.Fprintf(w, " (best achievable AUC %.4f)", *r.BestAUC)
	}
	fmt.Fprintf(w, "\n%s: wall time %.1fs (data %.1fs)", r.Worker, r.WallSeconds, r.LoadSeconds)
	if len(r.Nodes) > 1 && r.Nodes[1] > 0 {
		fmt.Fprintf(w, "; compression %.1f samples per level-1 node", float64(r.Nodes[0])/float64(r.Nodes[1]))
	}
	if r.BytesRead > 0 && r.Samples > 0 {
		fmt.Fprintf(w, "; %.0f bytes read per sample", float64(r.BytesRead)/float64(r.Samples))
	}
	fmt.Fprintf(w, "\n%s: last position %s", r.Worker, r.Position)
	if r.Restores > 0 {
		fmt.Fprintf(w, "; resumed %d times after the cluster was restored from a snapshot", r.Restores)
	}
	fmt.Fprintf(w, "\n")
}
