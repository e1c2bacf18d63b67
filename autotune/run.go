package autotune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/ctrtrain"
)

// Options configure a search.
type Options struct {
	// Sources are the job's configuration as its user gave it (the
	// sources of config.Build: a file, the command line's changes); each
	// trial's is built from them with its setting's changes after them.
	// Required.
	Sources []config.Source
	// Cluster is the embedded cluster every trial runs on, a new one each
	// time: its Shards and Stripes (its Prefix, Config and ModelRoot are
	// the trial's).
	Cluster cluster.Options
	// Progress receives the search's lines: the plan, each trial's
	// validations and outcome, the winner. The default value (nil)
	// prints none.
	Progress io.Writer
	// Logger receives the trials' structured logs. The default value
	// discards them.
	Logger *slog.Logger
}

// Result is a search's account: the plan, every trial, the winner.
type Result struct {
	Plan Plan `json:"plan"`
	// Metric is the validation metric that ranked the trials.
	Metric string        `json:"metric"`
	Trials []TrialResult `json:"trials"`
	// Winner is the setting chosen, Figure its trial's best figure in the
	// last round.
	Winner Setting    `json:"winner"`
	Figure job.Metric `json:"figure"`
	// Searched is what the trials trained; Stopped how many of them were
	// stopped early (before the end of the job's epochs).
	Searched int64 `json:"searched_samples"`
	Stopped  int   `json:"stopped_early"`
	// Output is the YAML file the winner's configuration was written to.
	Output string `json:"output"`
	// Seconds is the search's wall time, the count of the data included.
	Seconds float64 `json:"seconds"`
	// Config is the winner's configuration: the job to train.
	Config config.Config `json:"-"`
}

// TrialResult is one trial: its setting, its round, what it trained and
// its best validation figure (and when).
type TrialResult struct {
	Setting  int        `json:"setting"`
	Settings Setting    `json:"settings"`
	Round    int        `json:"round"`
	Samples  int64      `json:"samples"`
	Trained  int64      `json:"trained"`
	Figure   job.Metric `json:"figure"`
	When     string     `json:"when,omitempty"`
	Stopped  bool       `json:"stopped_early"`
}

// Run searches the settings of the job of o.Sources (its autotune
// section) and returns the winner's configuration, written to
// autotune.output as YAML.
func Run(ctx context.Context, o Options) (res Result, err error) {
	defer func(start time.Time) { res.Seconds = time.Since(start).Seconds() }(time.Now())
	base, err := config.Build(o.Sources...)
	if err != nil {
		return Result{}, err
	}
	a := base.Autotune
	if len(base.Job.Train) > 0 {
		o.say("autotune: counting the training files' samples (one pass over them) to plan the budget")
	}
	samples, err := ctrtrain.CountTrain(ctx, base)
	if err != nil {
		return Result{}, fmt.Errorf("autotune: %w", err)
	}
	run := samples * int64(base.Train.Epochs)
	runs, budget, _ := config.ParseBudget(a.Budget) // valid: the config was built
	if runs > 0 {
		budget = int64(runs * float64(run))
	}
	plan, err := NewPlan(a.Trials, budget, run, base.Train.BatchSize)
	if err != nil {
		return Result{}, err
	}
	settings := Draw(plan.Trials, a.Kinds, base.Model.Kind, a.Seed)
	configs := make([]config.Config, len(settings))
	var errs []error
	for i, s := range settings {
		if configs[i], err = s.Config(o.Sources, base.Job.Holdout); err != nil {
			errs = append(errs, fmt.Errorf("autotune: setting %d (%s): %w", i, s, err))
		} else if !configs[i].HasValidation() {
			errs = append(errs, fmt.Errorf("autotune: setting %d (%s) has no validation set", i, s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	o.say("autotune: %d samples per epoch, %d per run of %s; budget %s = %d samples: %d trials of %d samples, the best third of each round again with %d times the samples, in %d rounds; the winner then trains %d",
		samples, run, job.EpochsText(base.Train.Epochs, false), a.Budget, budget, plan.Trials, plan.First, Eta, plan.Rounds, run)
	res = Result{Plan: plan, Metric: base.Train.ValidMetric}
	s := NewSearch(plan, config.HigherIsBetter(base.Train.ValidMetric))
	for n := 1; ; n++ {
		t, ok := s.Next()
		if !ok {
			break
		}
		tr, err := o.trial(ctx, n, configs[t.Setting], t, samples, plan)
		if err != nil {
			return res, fmt.Errorf("autotune: trial %d (setting %d: %s): %w", n, t.Setting, settings[t.Setting], err)
		}
		tr.Settings = settings[t.Setting]
		res.Trials = append(res.Trials, tr)
		res.Searched += tr.Trained
		if tr.Stopped {
			res.Stopped++
		}
		o.say("autotune: trial %d, round %d, setting %d (%s): %s, %d samples", n, t.Round, t.Setting, tr.Settings, tr.figureText(res.Metric), tr.Trained)
		if err := s.Report(t, Outcome{Figure: float64(tr.Figure), Trained: tr.Trained}); err != nil {
			return res, err
		}
	}
	w, ok := s.Winner()
	if !ok {
		return res, errors.New("autotune: the search chose no setting")
	}
	res.Winner, res.Config = settings[w], configs[w]
	res.Figure = job.Metric(math.NaN())
	for _, tr := range res.Trials {
		if tr.Setting == w {
			res.Figure = tr.Figure // the last round's
		}
	}
	if err := writeConfig(a.Output, res.Config); err != nil {
		return res, err
	}
	res.Output = a.Output
	o.say("autotune: the winner is setting %d (%s), %s %s; %d trials trained %d samples (%d stopped early); its configuration is in %s (run it with -config %s); training it",
		w, res.Winner, res.Metric, figureText(res.Figure), len(res.Trials), res.Searched, res.Stopped, a.Output, a.Output)
	return res, nil
}

func (o *Options) say(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// figureText says the trial's best figure by metric, and when.
func (tr TrialResult) figureText(metric string) string {
	if !tr.Figure.Defined() {
		return "no validation figure"
	}
	return fmt.Sprintf("%s %.4f after %s", metric, float64(tr.Figure), tr.When)
}

func figureText(m job.Metric) string {
	if !m.Defined() {
		return "none"
	}
	return fmt.Sprintf("%.4f", float64(m))
}

// writeConfig writes c as YAML to path (a whole file at once: a file
// left half written is removed).
func writeConfig(path string, c config.Config) error {
	b, err := c.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		os.Remove(path)
		return fmt.Errorf("autotune: write the winner's configuration: %w", err)
	}
	return nil
}
