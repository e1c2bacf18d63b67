package ctrtrain

import (
	"context"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/tracker"
)

// ErrValidation is returned (wrapped) when the validation set gives no
// figure to judge the model by.
var ErrValidation = errors.New("worker: the validation set cannot judge the model")

// Validate scores the validation set once every push is applied and
// answers the tracker with its figure (train.valid_metric).
func (r *run) Validate(ctx context.Context, when string) (tracker.Event, error) {
	t := r.t
	if err := t.drain(); err != nil {
		return nil, err
	}
	e, err := t.evaluate(ctx, t.opts.Valid)
	if err != nil {
		return nil, err
	}
	e.When, e.probs = when, nil
	r.res.Valid = append(r.res.Valid, e)
	metric := t.cfg.Train.ValidMetric
	m := e.LogLoss
	if metric == config.MetricAUC {
		m = e.AUC
	}
	v := float64(m)
	if !m.Defined() {
		return nil, fmt.Errorf("%w: %s is undefined after %s (%s)", ErrValidation, metric, when, e.AUCNote)
	}
	if w := t.opts.Progress; w != nil {
		at, best := tracker.ValidationWords(when, r.tk.Best(), metric)
		fmt.Fprintf(w, "%s: validation %s: AUC %s logloss %s (%d samples)%s\n",
			t.opts.Name, at, aucText(e.AUC, e.AUCNote), figure(e.LogLoss), e.Samples, best)
	}
	if t.opts.OnProgress != nil {
		p := t.figuresReport(r.res, r.tk.Epoch())
		p.Valid = &job.Validation{When: when, Metric: metric, Value: v}
		t.opts.OnProgress(p)
	}
	return tracker.Validated{Value: v}, nil
}

// Pin keeps the model as the best so far: every push applied, cp
// (which holds the new best) committed, then kept in the job.
func (r *run) Pin(ctx context.Context, cp Checkpoint) error {
	if err := r.Commit(ctx, cp); err != nil {
		return err
	}
	_, err := r.t.opts.Job.KeepBest(ctx, nil)
	return err
}
