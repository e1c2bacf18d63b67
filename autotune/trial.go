package autotune

import (
	"context"
	"errors"
	"math"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/ctrtrain"
)

// trial runs trial number n of setting cfg on an embedded cluster of its
// own until it has trained t.Samples (validated every plan.First
// samples, in whole batches) or its epochs end. The trial never reads the
// test set, exports nothing and keeps no snapshot: its figure is the best
// validation it made.
func (o *Options) trial(ctx context.Context, n int, cfg config.Config, t Trial, epochSamples int64, plan Plan) (TrialResult, error) {
	cfg.Job.Test, cfg.Job.TestScores = nil, ""
	cfg.Job.Workers, cfg.Train.Patience = 1, 0
	cfg.Export.Store, cfg.Snapshot.Store = "", ""
	bs := int64(cfg.Train.BatchSize)
	cfg.Train.EvalEvery = int(max(plan.First/bs, 1))
	rung := int64(cfg.Train.EvalEvery) * t.Samples / plan.First // the batches of t.Samples, validated at the last
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
			tr.Stopped = p.Samples < epochSamples*int64(cfg.Train.Epochs)
			stop()
		}
	}}
	co := o.Cluster
	co.ModelRoot = ""
	lc, err := cluster.StartFor(ctx, co, &opts, true)
	if err != nil {
		return tr, err
	}
	defer lc.Close()
	opts.SaveOnStop = false // a trial's model is dropped
	res, err := ctrtrain.RunJob(tctx, opts)
	tr.Trained = res.Samples
	switch {
	case ctx.Err() != nil:
		return tr, ctx.Err()
	case err != nil && !(tctx.Err() != nil && errors.Is(err, context.Canceled)):
		return tr, err
	}
	return tr, nil
}
