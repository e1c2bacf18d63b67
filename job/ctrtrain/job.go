package ctrtrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/hdfssrc"
)

// JobResult is what a job prints as its summary (and as JSON with -json).
type JobResult struct {
	Result
	job.Summary
	Fields      int      `json:"fields"`
	Levels      int      `json:"levels"`
	DenseParams int      `json:"dense_params"`
	Data        string   `json:"data"`
	BestAUC     *float64 `json:"best_auc,omitempty"`
	// Stopped is set when a streaming job was stopped (it never ends by itself).
	Stopped bool `json:"stopped,omitempty"`
	// NoShare says why the scheduler gave this worker no part of the
	// training files (empty when it did).
	NoShare string `json:"no_share,omitempty"`
	// ValidMetric is the figure of Result.Best (train.valid_metric).
	ValidMetric string `json:"valid_metric,omitempty"`
	// format is the training data's, whose units Skipped counts.
	format reader.Format
}

// RunJob runs the CTR model's job (see package job): it registers the
// worker, waits for the shard map, loads the data, declares the model and
// trains, in attempts from the checkpoint the model holds.
func RunJob(ctx context.Context, opts job.Options) (JobResult, error) {
	m := &model{}
	defer m.close()
	err := job.Run(ctx, opts, m)
	return m.res, err
}

// model is the CTR model as the lifecycle's job.Model.
type model struct {
	res   JobResult
	valid []Eval // the validations of the attempts so far, and
	evals []Eval // their evaluations
	ended string // why the job ended on its best model (Result.Ended)
	data  Data
	kj    *kafkaJob
	// again is the training of the attempts that ended with
	// job.ErrTrainAgain (their deal replaced as they finished): it counts
	// in the next attempt's result, as nothing of it was rolled back.
	again    *Result
	closeFS  func() error
	stopAcks func()
}

func (m *model) Summary() *job.Summary { return &m.res.Summary }

func (m *model) close() {
	if m.stopAcks != nil {
		m.stopAcks()
	}
	if m.closeFS != nil {
		m.closeFS()
	}
}

// Prepare finds the worker's data: its file splits, its Kafka partitions,
// the job's own source or the generated dataset.
func (m *model) Prepare(ctx context.Context, env *job.Env) error {
	cfg := env.Config
	m.res.format, _ = reader.ParseFormat(cfg.Train.Format) // checked with the config
	if cfg.HasValidation() {
		m.res.ValidMetric = cfg.Train.ValidMetric
	}
	if env.FS == nil && env.Source == nil {
		fsys, closer, err := hdfssrc.ForPaths(slices.Concat(cfg.Job.Train, cfg.Job.Test, cfg.Job.Valid), "")
		if err != nil {
			return fmt.Errorf("worker: data: %w", err)
		}
		env.FS, m.closeFS = fsys, closer.Close
	}
	var err error
	if cfg.Kafka.Enabled() {
		err = m.prepareKafka(ctx, env)
	} else {
		var splits []reader.FileSplit
		if splits, err = jobSplits(ctx, env); err == nil {
			m.data, err = LoadData(env.Options, splits)
		}
		if err == nil {
			m.noShare(env, splits)
		}
	}
	if err != nil {
		return err
	}
	m.res.Data, m.res.BestAUC = m.data.Desc, m.data.BestAUC
	env.Say("training data: %s; %d test samples", m.data.Desc, countSamples(m.data.Test))
	if n := countSamples(m.data.Valid); n > 0 {
		env.SayValidation(n, cfg.Train.Sync)
	}
	return nil
}

// prepareKafka takes the worker's partitions (all, or the scheduler's
// deal) and reads the test files.
func (m *model) prepareKafka(ctx context.Context, env *job.Env) error {
	kj, err := newKafkaJob(env)
	if err != nil {
		return err
	}
	if err := kj.sync(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	var sh shapeFinder
	test, err := loadTest(kj.in, env.Config.Job.Test, &sh)
	if err != nil {
		return err
	}
	if m.data, err = kj.data(ctx, &sh); err != nil {
		return err
	}
	m.data.Test, m.kj = test, kj
	return nil
}

// jobSplits returns the worker's share of the training files: the
// scheduler's assignment (several workers), or every file.
func jobSplits(ctx context.Context, env *job.Env) ([]reader.FileSplit, error) {
	if len(env.Config.Job.Train) == 0 || env.Source != nil {
		return nil, nil
	}
	if env.Workers() > 1 {
		env.Say("waiting for the scheduler's file assignment (start the scheduler with -train and -workers %d)", env.Workers())
		var splits []reader.FileSplit
		err := env.WaitSaying(ctx, "this worker's share of the training files",
			fmt.Sprintf("the scheduler publishes it at start (is a scheduler running with -train and -workers %d, with this -etcd and -cluster?)", env.Workers()),
			func(ctx context.Context) (err error) {
				splits, err = env.Conn.WaitAssignment(ctx, env.Name)
				return err
			})
		if err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		return splits, nil
	}
	return allSplits(env)
}

// noShare records and says why a worker of several has no training
// samples: the scheduler gave it no part of the files (reader.Assign), or
// its part holds no sample.
func (m *model) noShare(env *job.Env, splits []reader.FileSplit) {
	if env.Workers() == 1 || len(env.Config.Job.Train) == 0 || env.Source != nil || !m.data.Empty {
		return
	}
	why := fmt.Sprintf("its share (%d byte ranges) holds no sample: the data is too small for every worker to get samples", len(splits))
	if len(splits) == 0 {
		why = "it got no part of the data: there are fewer pieces of it than workers (fewer bytes than workers, or fewer xml files, which are never cut)"
	}
	m.res.NoShare = fmt.Sprintf("the scheduler divided %s among %d workers, and %s",
		strings.Join(env.Config.Job.Train, ","), env.Workers(), why)
	env.Say("no training data for this worker: %s; it trains nothing and joins the final evaluation", m.res.NoShare)
}

// allSplits returns every training file, whole.
func allSplits(env *job.Env) ([]reader.FileSplit, error) {
	return wholeFiles(env.FS, env.Config.Job.Train)
}

// wholeFiles returns the files of patterns on fsys, each whole.
func wholeFiles(fsys reader.FS, patterns []string) ([]reader.FileSplit, error) {
	paths, err := reader.ExpandPathsFS(fsys, patterns)
	if err != nil {
		return nil, fmt.Errorf("worker: training data: %w", err)
	}
	splits := make([]reader.FileSplit, len(paths))
	for i, p := range paths {
		splits[i] = reader.FileSplit{Path: p}
	}
	return splits, nil
}

// Train runs one attempt: from the checkpoint the model holds, at the
// cluster version of env. A streaming job ends when it is told to
// (its context cancelled), its positions committed.
func (m *model) Train(ctx context.Context, env *job.Env, cp *checkpoint.Checkpoint) error {
	var start checkpoint.Checkpoint
	if cp != nil {
		start = *cp
	}
	if m.kj != nil && env.Attempt > 1 {
		m.kj.cl, m.kj.version = env.Client, env.Version
		if err := m.kj.sync(ctx); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
	}
	r, err := m.attempt(ctx, env, start)
	if a := m.again; a != nil {
		r.Samples, r.Batches, r.Seconds = r.Samples+a.Samples, r.Batches+a.Batches, r.Seconds+a.Seconds
		if r.Seconds > 0 {
			r.SamplesPerSecond = float64(r.Samples) / r.Seconds
		}
		m.again = nil
	}
	if errors.Is(err, job.ErrTrainAgain) {
		m.again = &r
	}
	if env.BestRestored != nil || len(m.valid) > 0 { // the evaluations of every attempt, with their validations
		r.Evals = append(m.evals, r.Evals...)
	}
	m.valid = append(m.valid, r.Valid...)
	m.evals = slices.Clone(r.Evals)
	for i := range m.evals {
		m.evals[i].probs = nil // job.test_scores writes the last attempt's
	}
	if r.Ended != "" {
		m.ended = r.Ended
	}
	r.Valid, r.Ended = m.valid, m.ended
	if prev := m.res.Result; env.BestRestored != nil && prev.Samples > 0 {
		// The attempt evaluates the kept model: the job's training is the
		// attempt's before the rollback.
		prev.Evals, prev.TestAUC, prev.TestLogLoss, prev.TestAUCNote, prev.TestSamples = r.Evals, r.TestAUC, r.TestLogLoss, r.TestAUCNote, r.TestSamples
		prev.Valid, prev.Best, prev.Ended = r.Valid, r.Best, r.Ended
		r = prev
	}
	m.res.Result = r
	if err != nil && m.kj != nil && env.Config.Kafka.Streaming && errors.Is(ctx.Err(), context.Canceled) &&
		!errors.Is(context.Cause(ctx), job.ErrLeaseLost) {
		m.res.Stopped = true
		env.Say("stopped: %d samples trained, positions %v stored in the model", r.Samples, r.Positions)
		return nil
	}
	return err
}

// attempt builds the trainer for one attempt, declares the model and
// trains.
func (m *model) attempt(ctx context.Context, env *job.Env, start checkpoint.Checkpoint) (Result, error) {
	switch {
	case env.BestRestored != nil:
		env.Say("the kept model: %d samples trained, to epoch %d", start.Applied, start.Epoch)
	case start.Applied > 0 && m.kj != nil:
		env.Say("resuming the stream from the positions stored in the model (%d samples applied before)", start.Applied)
	case start.Applied > 0:
		env.Say("resuming at epoch %d from %v (%d samples applied before)", start.Epoch, start.Positions, start.Applied)
	}
	tr, err := New(env.Client, m.trainerOptions(env, start))
	if err != nil {
		return Result{}, err
	}
	if err := tr.Declare(ctx); err != nil {
		if env.Workers() > 1 && !job.Recoverable(err) {
			err = fmt.Errorf("%w (with several workers, every worker must build the same model: set model.fields when a worker's share of the data may lack the highest field)", err)
		}
		return Result{}, err
	}
	if err := m.warmStartJob(ctx, env, start); err != nil {
		return Result{}, err
	}
	m.res.Fields, m.res.Levels, m.res.DenseParams = tr.Fields(), tr.Levels(), tr.DenseParams()
	env.Say("training on %d shards (version %d): %d fields in %d levels, %s, %d dense parameters, GEMM kernel %s",
		env.Client.NumShards(), env.Version, m.res.Fields, m.res.Levels, tr.Describe(), m.res.DenseParams, densenet.KernelName())
	if err := env.StartTraining(ctx); err != nil {
		return Result{}, err
	}
	r, err := tr.Run(ctx)
	env.StopTraining(ctx)
	if err == nil && env.Config.Job.TestScores != "" && env.Index == 0 && len(r.Evals) > 0 {
		err = writeScores(env.Config.Job.TestScores, r.Evals[len(r.Evals)-1].probs)
	}
	if err == nil && env.Config.Export.Store != "" && env.Index == 0 {
		err = exportFinal(ctx, env)
	}
	return r, err
}

// writeScores writes probs, one per line, to the file at path.
func writeScores(path string, probs []float32) error {
	var b []byte
	for _, p := range probs {
		b = strconv.AppendFloat(b, float64(p), 'g', -1, 32)
		b = append(b, '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("worker: job.test_scores: %w", err)
	}
	return nil
}

// exportFinal has the scheduler export the final model (the one the
// workers evaluated), so that serving gets it: worker 0 asks once the
// training is over.
func exportFinal(ctx context.Context, env *job.Env) error {
	res, err := env.Conn.RequestExport(ctx)
	if err != nil {
		return fmt.Errorf("worker: the final export: %w", err)
	}
	env.Say("exported the final model: export %d (%s, %d rows, %d deletions, %.1f MiB) to %s",
		res.Seq, res.Kind, res.Rows, res.Deletes, float64(res.Bytes)/(1<<20), env.Config.Export.Store)
	return nil
}

// trainerOptions are the trainer's options for an attempt from start.
func (m *model) trainerOptions(env *job.Env, start checkpoint.Checkpoint) Options {
	var at reader.Position
	if len(start.Positions) > 0 && m.kj == nil {
		at = start.Positions[len(start.Positions)-1]
	}
	train, name := m.data.Train, env.Name
	o := Options{Config: env.Config, Shape: m.data.Shape, Test: m.data.Test, Valid: m.data.Valid, Start: start,
		Train: func(epoch int) (reader.Source, error) {
			if epoch == start.Epoch && !start.EpochDone {
				return train(epoch, at)
			}
			return train(epoch, reader.Position{})
		},
		Name: name, Progress: env.Progress, OnProgress: env.OnProgress, Logger: env.Logger}
	// The checkpoint goes into the model, for snapshots (a pause commits
	// it too), and every second, so that the count of samples applied
	// there is fresh (scheduler -snapshot-every-samples); a Kafka job's
	// as often as its config says.
	o.CommitEvery = time.Second
	if m.kj != nil {
		o.CommitEvery = env.Config.Kafka.CommitEvery
	}
	if env.Config.Train.Sync {
		o.Sync = &SyncOptions{Worker: env.Index, Workers: env.Workers(), Key: ams.CheckpointKey(name)}
	}
	o.Job = jobRun{Env: env, m: m}
	o.Final = env.BestRestored != nil
	return o
}

// jobRun is the CTR model's job as its trainer sees it (Job): the
// lifecycle's pauses and best model are env's; where the checkpoint goes,
// the reopen and the final barrier depend on the source (Kafka or files)
// and on the workers.
type jobRun struct {
	*job.Env // its Lifecycle; Barrier below is the trainer's, not Env's
	m        *model
}

// Commit stores c: a Kafka job's positions (and applied count) in its
// topic's records, a file job's checkpoint in the model.
func (j jobRun) Commit(ctx context.Context, c Checkpoint) error {
	if j.m.kj != nil {
		return j.m.kj.commit(ctx, c)
	}
	return checkpoint.Store(ctx, j.Client, j.Name, c)
}

// Reopen takes the scheduler's new deal of a Kafka job's partitions; a
// file source never asks for one.
func (j jobRun) Reopen(ctx context.Context) error {
	if j.m.kj == nil {
		return errors.New("worker: a file source asked for a reopen, which only a Kafka source does")
	}
	return j.m.kj.sync(ctx)
}

// Barrier waits for the other workers of a job of several (none for one):
// this worker stops training first (snapshots need not wait for it), and
// a Kafka job's worker lets later partition deals go on without it.
func (j jobRun) Barrier(ctx context.Context) error {
	env, m := j.Env, j.m
	if env.Workers() <= 1 {
		return nil
	}
	env.StopTraining(ctx)
	if m.kj != nil {
		if err := m.kj.done(ctx, env.Version); err != nil {
			return err // train again (the next attempt starts training anew) or stopped
		}
		if m.stopAcks != nil {
			m.stopAcks()
		}
		m.stopAcks = m.kj.ackFromNowOn(ctx)
	}
	env.Say("waiting for all %d workers to finish training before the final evaluation", env.Workers())
	return env.Barrier(ctx, "final-eval")
}

// WriteSummary writes the summary lines a worker prints at the end.
func (r JobResult) WriteSummary(w io.Writer) {
	if r.Data != "" {
		fmt.Fprintf(w, "%s: data: %s\n", r.Worker, r.Data)
	}
	fmt.Fprintf(w, "%s: trained %d samples (%s) in %.1fs: %.0f samples/s on %d AMS shards",
		r.Worker, r.Samples, job.EpochsText(r.Epochs, r.Stopped), r.Seconds, r.SamplesPerSecond, r.Shards)
	if s := malformed(r.Skipped, r.format); s != "" {
		fmt.Fprintf(w, "; skipped %s", s)
	}
	if r.NoShare != "" {
		fmt.Fprintf(w, "\n%s: no training data for this worker: %s", r.Worker, r.NoShare)
	}
	if len(r.Evals) == 0 {
		fmt.Fprintf(w, "\n%s: no test evaluation", r.Worker)
	} else {
		fmt.Fprintf(w, "\n%s: test AUC %s, logloss %s on %d samples", r.Worker, aucText(r.TestAUC, r.TestAUCNote), figure(r.TestLogLoss), r.TestSamples)
	}
	if r.BestAUC != nil {
		fmt.Fprintf(w, " (best achievable AUC %.4f)", *r.BestAUC)
	}
	if b := r.Best; b != nil {
		fmt.Fprintf(w, "\n%s: the best validation %.4f (%s) after %s", r.Worker, b.Value, r.ValidMetric, b.When)
		if r.Ended != "" {
			fmt.Fprintf(w, ": the job ended on that model (%s)", r.Ended)
		}
	}
	fmt.Fprintf(w, "\n%s: wall time %.1fs (data %.1fs)", r.Worker, r.WallSeconds, r.LoadSeconds)
	if len(r.Nodes) > 1 && r.Nodes[1] > 0 {
		fmt.Fprintf(w, "; compression %.1f samples per level-1 node", float64(r.Nodes[0])/float64(r.Nodes[1]))
	}
	if r.BytesRead > 0 && r.Samples > 0 {
		fmt.Fprintf(w, "; %.0f bytes read per sample", float64(r.BytesRead)/float64(r.Samples))
	}
	if at := positionText(r.Position); at != "" {
		fmt.Fprintf(w, "\n%s: last position %s", r.Worker, at)
	}
	if r.Restores > 0 {
		fmt.Fprintf(w, "\n%s: resumed %d times after the cluster was restored from a snapshot", r.Worker, r.Restores)
	}
	fmt.Fprintf(w, "\n")
	r.WriteLines(w)
}

// positionText says where in its data a worker's last batch ended: a
// file and a byte, a Kafka partition and an offset, a group of the
// generated data, a chunk of a shuffle window, and the sample within the
// group when the group was cut; "" for none.
func positionText(p reader.Position) string {
	switch p.File {
	case "":
		return ""
	case reader.WindowEnd:
		return "the end of the data, every shuffle window trained"
	}
	if base, ok := reader.ParseWindowName(p.File); ok {
		if p.Offset == 0 && p.Index == 0 {
			return positionText(base) + ", where the next shuffle window starts"
		}
		s := fmt.Sprintf("chunk %d of the shuffle window at %s", p.Offset, positionText(base))
		if p.Index > 0 {
			s += fmt.Sprintf(", sample %d of the chunk", p.Index)
		}
		return s
	}
	unit := "byte"
	switch {
	case strings.HasPrefix(p.File, "kafka://"):
		unit = "offset"
	case p.File == GeneratedName:
		unit = "group"
	}
	s := fmt.Sprintf("%s at %s %d", p.File, unit, p.Offset)
	if p.Index > 0 {
		s += fmt.Sprintf(", sample %d of its group", p.Index)
	}
	return s
}
