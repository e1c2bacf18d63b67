package xctrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
)

// JobResult is what a job prints as its summary (and as JSON).
type JobResult struct {
	Result
	job.Summary
	Data           string `json:"data"`
	TrainSamples   int    `json:"train_samples"`
	TestSamples    int    `json:"test_samples"`
	EmbeddingDim   int    `json:"embedding_dim"`
	Hidden         []int  `json:"hidden"`
	DenseParams    int    `json:"dense_params"`
	SkippedSamples int64  `json:"skipped"`
}

// RunJob runs the SLIDE model's job (see package job): it registers the
// worker, waits for the shard map, reads the XMLRepository files of
// Config.Job.Train and Test, declares the model on the shards and trains,
// in attempts from the checkpoint (and the layer it names) the model
// holds. With several workers each holds one share of the SLIDE layer
// (peers.go), and worker 0 evaluates.
func RunJob(ctx context.Context, opts job.Options) (JobResult, error) {
	m := &model{}
	defer func() { m.peers.close() }() // Prepare starts it
	err := job.Run(ctx, opts, m)
	return m.res, err
}

// model is the SLIDE model as the lifecycle's job.Model.
type model struct {
	res                JobResult
	train, test, valid *Dataset
	// evals and valid are the evaluations and validations of the
	// attempts so far, ended why the job ended on its best model.
	evals, validations []Eval
	ended              string
	// peers serves this worker's share of the layer (several workers).
	peers *peerServer
}

// keep makes r, an attempt's result, the job's: with the evaluations and
// validations of the attempts before, and, for the attempt that evaluates
// the kept model (final), the training figures of the attempt before it.
func (m *model) keep(r *Result, final bool) {
	r.Evals = append(slices.Clone(m.evals), r.Evals...)
	r.Valid = append(slices.Clone(m.validations), r.Valid...)
	m.evals, m.validations = r.Evals, r.Valid
	if r.Ended != "" {
		m.ended = r.Ended
	}
	r.Ended = m.ended
	if prev := m.res.Result; final && prev.Samples > 0 {
		prev.Evals, prev.Test, prev.Valid, prev.Best, prev.Ended = r.Evals, r.Test, r.Valid, r.Best, r.Ended
		*r = prev
	}
	m.res.Result = *r
}

func (m *model) Summary() *job.Summary { return &m.res.Summary }

// Prepare reads the training and test files into memory.
func (m *model) Prepare(ctx context.Context, env *job.Env) error {
	cfg := env.Config
	if W := env.Workers(); W > 1 {
		if err := m.preparePeers(env); err != nil {
			return err
		}
	}
	if len(cfg.Job.Train) == 0 {
		return fmt.Errorf("%w: model.output.kind slide needs training files (-train, XMLRepository format; cmd/xcgen writes some)", ErrNoData)
	}
	policy, err := reader.ParseErrorPolicy(cfg.Train.OnError)
	if err != nil {
		return fmt.Errorf("xctrain: %w", err)
	}
	if m.train, err = Load(ctx, cfg.Job.Train, policy); err != nil {
		return fmt.Errorf("training data: %w", err)
	}
	if W := env.Workers(); W > 1 && min(m.train.Len(), cfg.Train.BatchSize) < W {
		return fmt.Errorf("%w: %d training samples in batches of %d for %d workers: a batch is dealt out between the workers, each needs a sample of it (fewer workers, or a larger train.batch_size)",
			ErrNoData, m.train.Len(), cfg.Train.BatchSize, W)
	}
	m.res.Data, m.res.TrainSamples, m.res.SkippedSamples = m.train.Desc, m.train.Len(), m.train.Skipped
	if len(cfg.Job.Test) > 0 {
		if m.test, err = Load(ctx, cfg.Job.Test, policy); err != nil {
			return fmt.Errorf("test data: %w", err)
		}
		m.res.TestSamples = m.test.Len()
		m.res.SkippedSamples += m.test.Skipped
	}
	env.Say("training data: %s; %d test samples", m.train.Desc, m.res.TestSamples)
	if len(cfg.Job.Valid) > 0 {
		if m.valid, err = Load(ctx, cfg.Job.Valid, policy); err != nil {
			return fmt.Errorf("validation data: %w", err)
		}
		env.SayValidation(m.valid.Len(), false) // the SLIDE job has no sync mode
	}
	return nil
}

// preparePeers checks that a job of several workers can split its layer
// between them and starts serving this worker's share.
func (m *model) preparePeers(env *job.Env) error {
	W, oc := env.Workers(), env.Config.Model.Output
	switch {
	case oc.Owners != 1 && oc.Owners != W:
		return fmt.Errorf("xctrain: with %d workers the SLIDE layer is split into one share per worker: model.output.owners must be 1 or %d, not %d", W, W, oc.Owners)
	case len(env.Config.Job.Valid) > 0:
		return fmt.Errorf("xctrain: validation (job.valid) with the SLIDE layer split between %d workers is not built yet: run 1 worker", W)
	}
	var err error
	m.peers, err = startPeerServer(oc.PeerListen, oc.PeerAdvertise, env.TLS)
	if err != nil {
		return err
	}
	how := ""
	if env.TLS != nil {
		how = " (mutual TLS, to workers only)"
	}
	env.Say("serving this worker's share of the SLIDE layer on %s%s", m.peers.addr, how)
	return nil
}

// Train runs one attempt: a trainer for the attempt's client, resumed from
// the layer the checkpoint names when there is one. With several workers
// it first meets the others (their shares' addresses at this attempt),
// only worker 0 evaluates, and every worker keeps serving its share until
// all are done (a barrier), since worker 0's last evaluation needs them.
func (m *model) Train(ctx context.Context, env *job.Env, start *checkpoint.Checkpoint) error {
	opts := Options{Config: env.Config, Train: m.train, Test: m.test, Valid: m.valid, Name: env.Name,
		Progress: env.Progress, Logger: env.Logger, Job: env, Final: env.BestRestored != nil}
	if m.peers != nil {
		if v := env.Version; v == m.peers.version {
			// The last attempt, at this version, ended early and its share
			// is gone, while the other workers' shares went on: leave as a
			// dead worker, so that the cluster rolls every share back to
			// the last snapshot.
			env.Say("the last attempt at version %d ended early and its share of the SLIDE layer is gone: leaving as a dead worker, so that the cluster rolls every share back to its last snapshot", v)
			if err := env.Registration.Renew(ctx); err != nil {
				return err
			}
			return fmt.Errorf("%w: this worker's share of version %d is lost", job.ErrRestored, v)
		}
		m.peers.version = env.Version
		p, err := m.peers.joinPeers(ctx, env)
		if err != nil {
			return fmt.Errorf("xctrain: meeting the other workers' shares: %w", err)
		}
		opts.Peers = p
		if env.Index != 0 {
			opts.Test = nil
		}
	}
	return m.train1(ctx, env, start, opts)
}

// train1 is Train's attempt proper, with opts its trainer's options.
func (m *model) train1(ctx context.Context, env *job.Env, start *checkpoint.Checkpoint, opts Options) error {
	tr, err := New(env.Client, opts)
	if err != nil {
		return err
	}
	defer tr.Close()
	if err := tr.Declare(ctx); err != nil {
		return err
	}
	if err := m.resume(env, tr, start); err != nil {
		return err
	}
	if s, ok := tr.out.(*shared); ok {
		s.serve()
	}
	oc := env.Config.Model.Output
	p := tr.params
	m.res.EmbeddingDim, m.res.Hidden, m.res.DenseParams = tr.table.Dim, oc.Hidden, tr.net.NumParams()
	owners := ""
	switch {
	case opts.Peers != nil:
		owners = fmt.Sprintf(" in %d shares, one per worker (this worker's share and tables)", opts.Peers.Workers)
	case oc.Owners > 1:
		owners = fmt.Sprintf(" in %d shares (owner 0's tables)", oc.Owners)
	}
	env.Say("training on %d shards: embedding dim %d, hidden %v, SLIDE output of %d labels%s (sparsity %v, %s, K=%d L=%d R=%d), %.0f MB in the layer",
		env.Client.NumShards(), tr.table.Dim, oc.Hidden, tr.labels, owners, oc.Sparsity, oc.Family, p.K, p.L, p.R,
		float64(tr.out.ParamBytes()+tr.out.TablesBytes())/1e6)
	if err := env.StartTraining(ctx); err != nil {
		return err
	}
	defer env.StopTraining(ctx)
	r, err := tr.Run(ctx)
	done := tr.modelCheckpoint(r) // what this attempt's model holds
	done.Done, done.Epoch, done.Best = true, r.Epochs, r.Best
	m.keep(&r, env.BestRestored != nil)
	if err != nil && r.Stopped != nil && env.SavesModel() && env.StoppedInOrder(ctx, err) {
		// The model lives on in no process once this one ends (worker
		// -local): save it, the layer with the stop's checkpoint.
		cp := *r.Stopped
		return errors.Join(err, env.SaveOnStop(ctx, func(ctx context.Context) error { return tr.holdPauses(ctx, cp) }))
	}
	if err != nil {
		return err
	}
	if env.SavesModel() { // the layer goes into the final snapshot, with the checkpoint naming it
		err = env.SaveModel(ctx, func(ctx context.Context) error { return tr.holdPauses(ctx, done) })
	} else {
		err = checkpoint.Store(ctx, env.Client, env.Name, done)
	}
	if err == nil && opts.Peers != nil {
		err = m.awaitPeers(ctx, env, tr, done)
	}
	return err
}

// awaitPeers keeps this worker's share served until every worker is done
// with it (worker 0's last evaluation and final snapshot need every
// share), serving the pauses of snapshots meanwhile (the final one
// holds every share, with cp).
func (m *model) awaitPeers(ctx context.Context, env *job.Env, tr *Trainer, cp checkpoint.Checkpoint) error {
	bctx, cancel := context.WithCancelCause(ctx)
	held := make(chan error, 1)
	go func() {
		err := tr.holdPauses(bctx, cp)
		if bctx.Err() == nil { // it failed: the barrier cannot be waited for without it
			cancel(err)
		}
		held <- err
	}()
	err := env.Barrier(bctx, "slide-shares")
	if cause := context.Cause(bctx); err != nil && cause != nil && ctx.Err() == nil {
		err = cause // holdPauses' failure
	}
	cancel(nil)
	<-held
	return err
}

// resume makes tr go on from the checkpoint the model holds, when it
// names the layer it was trained with.
func (m *model) resume(env *job.Env, tr *Trainer, cp *checkpoint.Checkpoint) error {
	if cp == nil {
		return nil
	}
	_, hasLayer := cp.File(tr.layerFile())
	switch {
	case cp.Done && !hasLayer:
		env.Say("the model's checkpoint says its job finished (%d samples); training again from the start", cp.Applied)
	case !hasLayer:
		env.Say("the model's checkpoint (epoch %d, batch %d, %d samples) names no SLIDE layer: the model was not restored from a snapshot, so the layer it trained with is gone; training again from the start",
			cp.Epoch, cp.Batch, cp.Applied)
	case cp.Done: // a saved final model: more epochs go on from it
		env.Say("resuming from the snapshot's checkpoint: the finished model of %d epochs (%d samples trained before)", cp.Epoch, cp.Applied)
		next := *cp
		next.Epoch, next.Batch, next.Done = cp.Epoch+1, 0, false
		return tr.resume(next)
	default:
		env.Say("resuming from the snapshot's checkpoint: epoch %d, batch %d (%d samples trained before)", cp.Epoch, cp.Batch, cp.Applied)
		return tr.resume(*cp)
	}
	return nil
}

// WriteSummary writes the summary lines a worker prints at the end.
func (r JobResult) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%s: trained %d samples (%s) in %.1fs: %.0f samples/s on %d AMS shards\n",
		r.Worker, r.Samples, job.EpochsText(r.Epochs, false), r.Seconds, r.SamplesPerSecond, r.Shards)
	fmt.Fprintf(w, "%s: SLIDE output of %d labels over %d inputs, sparsity %v, %s K=%d L=%d R=%d, %.0f MB\n",
		r.Worker, r.Labels, r.InputDim, r.Sparsity, r.Hash, r.K, r.L, r.R, float64(r.LayerBytes)/1e6)
	if r.Owners > 1 && r.StepBytes > 0 {
		fmt.Fprintf(w, "%s: %d shares: the busiest one's active labels %.2fx the mean (%.2fx on average); a batch moves %.2f MB between shares on different machines, %.0fx less than dense model parallelism's %.1f MB\n",
			r.Worker, r.Owners, r.OwnerImbalance, r.OwnerImbalanceMean, float64(r.StepBytes)/1e6,
			float64(r.DenseStepBytes)/float64(r.StepBytes), float64(r.DenseStepBytes)/1e6)
	}
	if e := r.Test; e.Samples > 0 {
		if e.Sparse != nil {
			fmt.Fprintf(w, "%s: test %v with sparse inference (%.2f ms for one sample%s)\n", r.Worker, *e.Sparse, e.SparseMs, e.InferTune.describe())
		}
		if e.Dense != nil {
			fmt.Fprintf(w, "%s: test %v with dense inference (%.2f ms for one sample)\n", r.Worker, *e.Dense, e.DenseMs)
		}
	}
	fmt.Fprintf(w, "%s: wall time %.1fs (data %.1fs)\n", r.Worker, r.WallSeconds, r.LoadSeconds)
	r.WriteLines(w)
}
