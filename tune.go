package xps

import (
	"context"
	"errors"

	"github.com/xdlgo/xps/autotune"
	"github.com/xdlgo/xps/config"
)

// ErrTuneNotLocal refuses train.autotune on a running cluster: the
// trials run on embedded clusters of their own.
var ErrTuneNotLocal = errors.New("train.autotune runs with worker -local (each trial on an embedded cluster of its own); for a running cluster, tune with -local, then give its workers the YAML file it writes (-config)")

// Tune returns the configuration a job trains: with train.autotune (cfg,
// built from o.Sources), the winner of the search it runs first (package
// autotune) and its account; else cfg as it is and nil. local says
// whether the job runs on an embedded cluster (worker -local), which the
// search needs.
func Tune(ctx context.Context, cfg config.Config, local bool, o autotune.Options) (config.Config, *autotune.Result, error) {
	if !cfg.Train.Autotune {
		return cfg, nil, nil
	}
	if !local {
		return cfg, nil, ErrTuneNotLocal
	}
	r, err := autotune.Run(ctx, o)
	if err != nil {
		return cfg, nil, err
	}
	return r.Config, &r, nil
}
