package xctrain

import (
	"context"
	"fmt"

	"github.com/xdlgo/xps/job/tracker"
)

// Validate scores the validation set once every push is applied and
// answers the tracker with its train.valid_metric: P@k of dense
// inference when the evaluation does it (the model's own figure; sparse
// inference depends on the hash tables too, drawn anew after a restore),
// else of sparse inference.
func (r *run) Validate(ctx context.Context, when string) (tracker.Event, error) {
	t := r.t
	if err := t.waitPushes(); err != nil {
		return nil, err
	}
	e, err := t.evaluate(ctx, t.opts.Valid, false)
	if err != nil {
		return nil, err
	}
	e.When = when
	r.res.Valid = append(r.res.Valid, e)
	p := e.Sparse
	if e.Dense != nil {
		p = e.Dense
	}
	metric := t.cfg.Train.ValidMetric
	var v float64
	switch metric {
	case "p@3":
		v = p.P3
	case "p@5":
		v = p.P5
	default:
		v = p.P1
	}
	if w := t.opts.Progress; w != nil {
		at, best := tracker.ValidationWords(when, r.tk.Best(), metric)
		fmt.Fprintf(w, "%s: validation %s on %d samples: %v%s\n", t.opts.Name, at, e.Samples, *p, best)
	}
	return tracker.Validated{Value: v}, nil
}

// keepBest keeps the model as the best so far: every push applied, cp
// stored, then a pinned snapshot whose pause writes the layer into it.
func (t *Trainer) keepBest(ctx context.Context, cp Checkpoint) error {
	if err := t.commitProgress(ctx, cp); err != nil {
		return err
	}
	_, err := t.opts.Job.KeepBest(ctx, func(ctx context.Context) error { return t.holdPauses(ctx, cp) })
	return err
}
