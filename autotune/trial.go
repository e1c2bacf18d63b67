package autotune

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/ctrtrain"
)

// saved is a trial's model, kept for the setting's next trial and the
// winner's run: the job id and snapshot store it was saved in, and the
// samples it holds.
type saved struct {
	job, store string
	samples    int64
}

// trial runs trial number n of setting cfg on an embedded cluster of its
// own until it has trained t.Samples (validated every plan.First
// samples, in whole batches) or its epochs end: from the start, or from
// the setting's model of its round before (from, with plan.Resume). The
// trial never reads the test set and exports nothing; with store it
// saves its model there when it stops (the orderly stop of job), which it
// returns. Its figure is the best validation it made.
func (o *Options) trial(ctx context.Context, cfg config.Config, t Trial, epochSamples int64, plan Plan, store string, from *saved) (TrialResult, *saved, error) {
	cfg.Job.Test, cfg.Job.TestScores = nil, ""
	cfg.Job.Workers, cfg.Train.Patience = 1, 0
	cfg.Export.Store, cfg.Snapshot.Store = "", store
	bs := int64(cfg.Train.BatchSize)
	cfg.Train.EvalEvery = int(max(plan.First/bs, 1))
	rung := int64(cfg.Train.EvalEvery) * t.Samples / plan.First // this run's batches, validated at the last
	if from != nil {
		cfg.Job.ID = from.job
		rung -= int64(cfg.Train.EvalEvery) * plan.Samples(t.Round-1) / plan.First
	}
	cfg.Train.Epochs = int(min((t.Samples+epochSamples-1)/epochSamples, config.MaxEpochs))
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	higher := config.HigherIsBetter(cfg.Train.ValidMetric)
	tr := TrialResult{Setting: t.Setting, Round: t.Round, Samples: t.Samples, Figure: job.Metric(math.NaN())}
	opts := job.Options{Config: cfg, Logger: o.Logger, OnProgress: func(p job.Progress) {
		v := p.Valid
		if v == nil {
			return
		}
		if f := float64(tr.Figure); math.IsNaN(f) || higher && v.Value > f || !higher && v.Value < f {
			tr.Figure, tr.When = job.Metric(v.Value), v.When
		}
		if p.Batches >= rung {
			tr.Stopped = true
			stop()
		}
	}}
	co := o.Cluster
	co.ModelRoot = ""
	lc, err := cluster.StartFor(ctx, co, &opts, true)
	if err != nil {
		return tr, nil, err
	}
	defer lc.Close()
	opts.SaveOnStop = store != "" // a trial's model is kept only for its next
	res, err := ctrtrain.RunJob(tctx, opts)
	tr.Trained = res.Samples
	switch {
	case ctx.Err() != nil:
		return tr, nil, ctx.Err()
	case err != nil && !(tctx.Err() != nil && errors.Is(err, context.Canceled)):
		return tr, nil, err
	case store == "":
		return tr, nil, nil
	case res.Model == nil:
		return tr, nil, fmt.Errorf("its model was not saved in %s", store)
	}
	s := &saved{job: res.Model.Job, store: res.Model.Store, samples: res.Samples}
	if from != nil {
		s.samples += from.samples
	}
	return tr, s, nil
}
