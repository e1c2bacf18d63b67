package xps

import (
	"context"
	"encoding/json"
	"io"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/ctrtrain"
	"github.com/xdlgo/xps/job/xctrain"
)

// Result is a finished job's summary: one of its fields is set, for the
// model the job trained.
type Result struct {
	// CTR is the CTR model's result (model.output.kind logit).
	CTR *CTRResult
	// SLIDE is the extreme classification model's result
	// (model.output.kind slide).
	SLIDE *SLIDEResult
}

// CTRResult and SLIDEResult are the summaries of the two models' jobs
// (their trainers' JobResult, whose fields and JSON are what the worker's
// -json prints), named here so that a program can hold and pass them.
type (
	CTRResult   = ctrtrain.JobResult
	SLIDEResult = xctrain.JobResult
)

// Train runs a worker's job on a cluster (an embedded one, see package
// cluster, or a running one through opts.Etcd): the model opts.Config
// declares, trained on the job's data, in the one lifecycle of package
// job. It returns when the job is done (a bounded job), when ctx ends (a
// streaming job stops cleanly), or when it fails.
func Train(ctx context.Context, opts job.Options) (Result, error) {
	if opts.Config.Model.Output.Kind == config.OutputSLIDE {
		r, err := xctrain.RunJob(ctx, opts)
		return Result{SLIDE: &r}, err
	}
	r, err := ctrtrain.RunJob(ctx, opts)
	return Result{CTR: &r}, err
}

// WriteSummary writes the summary lines a worker prints at the end.
func (r Result) WriteSummary(w io.Writer) {
	switch {
	case r.CTR != nil:
		r.CTR.WriteSummary(w)
	case r.SLIDE != nil:
		r.SLIDE.WriteSummary(w)
	}
}

// Summary returns the part of the result common to every model (nil
// when neither field is set).
func (r Result) Summary() *job.Summary {
	switch {
	case r.CTR != nil:
		return &r.CTR.Summary
	case r.SLIDE != nil:
		return &r.SLIDE.Summary
	}
	return nil
}

// MarshalJSON encodes the model's result.
func (r Result) MarshalJSON() ([]byte, error) {
	if r.SLIDE != nil {
		return json.Marshal(r.SLIDE)
	}
	return json.Marshal(r.CTR)
}
