package xps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/xdlgo/xps/autotune"
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
	// Autotune is the search that chose the job's settings
	// (train.autotune; see Tune), nil without one.
	Autotune *autotune.Result
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
		if opts.Source != nil || opts.TestSource != nil {
			return Result{}, errors.New("xps: the SLIDE output layer trains on files (job.train, job.test): Options.Source and TestSource are the CTR models'")
		}
		r, err := xctrain.RunJob(ctx, opts)
		return Result{SLIDE: &r}, err
	}
	r, err := ctrtrain.RunJob(ctx, opts)
	return Result{CTR: &r}, err
}

// WriteSummary writes the summary lines a worker prints at the end.
func (r Result) WriteSummary(w io.Writer) {
	if a := r.Autotune; a != nil {
		run := a.Plan.Run - a.Resumed
		fmt.Fprintf(w, "autotune: %d trials (%d stopped early) trained %d samples, the winner's job %d more: %d of the budget's %d; the winner (%s) is in %s\n",
			len(a.Trials), a.Stopped, a.Searched, run, a.Searched+run, a.Plan.Budget, a.Winner, a.Output)
	}
	switch {
	case r.CTR != nil:
		r.CTR.WriteSummary(w)
	case r.SLIDE != nil:
		r.SLIDE.WriteSummary(w)
	}
}

// Report ends a worker's job as the worker command does, err being
// Train's error: a job that failed (or was stopped) writes the shards'
// account of it to diag and, with asJSON, its result to out (the exit
// status says it failed), and returns err; a job done writes its summary
// lines to out and, with asJSON, the result as one JSON object on the
// last line.
func (r Result) Report(err error, asJSON bool, out, diag io.Writer) error {
	if err != nil {
		if s := r.Summary(); s != nil {
			s.WriteLines(diag)
			if asJSON {
				err = errors.Join(err, printJSON(out, r))
			}
		}
		return err
	}
	r.WriteSummary(out)
	if asJSON {
		return printJSON(out, r)
	}
	return nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = fmt.Fprintf(w, "%s\n", b)
	}
	return err
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

// MarshalJSON encodes the model's result, with the search's under
// "autotune" when there was one.
func (r Result) MarshalJSON() ([]byte, error) {
	var m any = r.CTR
	if r.SLIDE != nil {
		m = r.SLIDE
	}
	b, err := json.Marshal(m)
	if err != nil || r.Autotune == nil || len(b) < 2 || b[0] != '{' {
		return b, err
	}
	a, err := json.Marshal(r.Autotune)
	if err != nil {
		return nil, err
	}
	sep := `,"autotune":`
	if len(b) == 2 {
		sep = sep[1:]
	}
	return append(append(append(b[:len(b)-1:len(b)-1], sep...), a...), '}'), nil
}
