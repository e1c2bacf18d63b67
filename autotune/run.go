package autotune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
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
	// ModelRoot is where the trials keep their models, a directory per
	// setting under ModelRoot/autotune-*: a promoted trial goes on from
	// its setting's model, and the winner's job from the winner's (its
	// Result.Config names it: job.id and snapshot.store), the others
	// removed at the end (Plan.Resume). Not with several workers (the
	// trials train on one), nor for a job that names its snapshot.store
	// (its model goes there). The default value ("") keeps no model:
	// every trial and the winner's job start afresh.
	ModelRoot string
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
	// Resumed is what the winner's model holds that its job goes on from
	// (with Plan.Resume; 0: the job starts afresh): the job adds
	// Plan.Run - Resumed samples.
	Resumed int64 `json:"resumed_samples"`
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
	sr, err := o.prepare(ctx)
	if err != nil {
		return Result{}, err
	}
	defer sr.cleanup()
	res = Result{Plan: sr.plan, Metric: sr.base.Train.ValidMetric}
	w, err := o.search(ctx, sr, &res)
	if err != nil {
		return res, err
	}
	res.Winner, res.Config = sr.settings[w], sr.configs[w]
	res.Figure = job.Metric(math.NaN())
	for _, tr := range res.Trials {
		if tr.Setting == w {
			res.Figure = tr.Figure // the last round's
		}
	}
	a := sr.base.Autotune
	if err := writeConfig(a.Output, res.Config); err != nil {
		return res, err
	}
	res.Output = a.Output
	then := "the winner's job trains it from the start"
	if m := sr.models[w]; m != nil {
		res.Config.Job.ID, res.Config.Snapshot.Store, res.Resumed = m.job, m.store, m.samples
		sr.keep = m.store
		then = fmt.Sprintf("the winner's job goes on from its model of %d samples (job.id %s in %s)", m.samples, m.job, m.store)
	}
	o.say("autotune: the winner is setting %d (%s), %s %s; %d trials trained %d samples (%d stopped early); its configuration is in %s (run it with -config %s); %s",
		w, res.Winner, res.Metric, figureText(res.Figure), len(res.Trials), res.Searched, res.Stopped, a.Output, a.Output, then)
	return res, nil
}

// searchRun is what a search needs beside its Search: the job's
// configuration, the plan, the settings and their jobs, and the trials'
// saved models.
type searchRun struct {
	base         config.Config
	epochSamples int64
	plan         Plan
	settings     []Setting
	configs      []config.Config
	root, keep   string   // the trials' models' directory, and the one kept (the winner's)
	models       []*saved // by setting: its last trial's model (with Plan.Resume)
}

// prepare counts the data, plans the budget and builds every setting's
// job.
func (o *Options) prepare(ctx context.Context) (*searchRun, error) {
	base, err := config.Build(o.Sources...)
	if err != nil {
		return nil, err
	}
	a := base.Autotune
	if len(base.Job.Train) > 0 {
		o.say("autotune: counting the training files' samples (one pass over them) to plan the budget")
	}
	samples, err := ctrtrain.CountTrain(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("autotune: %w", err)
	}
	run := samples * int64(base.Train.Epochs)
	runs, budget, _ := config.ParseBudget(a.Budget) // valid: the config was built
	if runs > 0 {
		budget = int64(runs * float64(run))
	}
	resume := o.ModelRoot != "" && base.Job.Workers == 1 && base.Snapshot.Store == ""
	plan, err := NewPlan(a.Trials, budget, run, base.Train.BatchSize, resume)
	if err != nil {
		return nil, err
	}
	sr := &searchRun{base: base, epochSamples: samples, plan: plan, settings: Draw(plan.Trials, a.Kinds, base.Model.Kind, a.Seed)}
	sr.configs, sr.models = make([]config.Config, len(sr.settings)), make([]*saved, len(sr.settings))
	var errs []error
	for i, s := range sr.settings {
		if sr.configs[i], err = s.Config(o.Sources, base.Job.Holdout); err != nil {
			errs = append(errs, fmt.Errorf("autotune: setting %d (%s): %w", i, s, err))
		} else if !sr.configs[i].HasValidation() {
			errs = append(errs, fmt.Errorf("autotune: setting %d (%s) has no validation set", i, s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if resume {
		if err := os.MkdirAll(o.ModelRoot, 0o755); err != nil {
			return nil, fmt.Errorf("autotune: the trials' models: %w", err)
		}
		if sr.root, err = os.MkdirTemp(o.ModelRoot, "autotune-"); err != nil {
			return nil, fmt.Errorf("autotune: the trials' models: %w", err)
		}
	}
	how := "each round's trials from the start"
	if resume {
		how = "each promoted trial going on from its model, the winner's job from its last"
	}
	o.say("autotune: %d samples per epoch, %d per run of %s; budget %s = %d samples: %d trials of %d samples, the best third of each round to %d times the samples, in %d rounds, %s",
		samples, run, job.EpochsText(base.Train.Epochs, false), a.Budget, budget, plan.Trials, plan.First, Eta, plan.Rounds, how)
	return sr, nil
}

// cleanup removes the trials' models but the one kept.
func (sr *searchRun) cleanup() {
	if sr.root == "" {
		return
	}
	entries, _ := os.ReadDir(sr.root)
	for _, e := range entries {
		if p := filepath.Join(sr.root, e.Name()); p != sr.keep {
			os.RemoveAll(p)
		}
	}
	if sr.keep == "" {
		os.Remove(sr.root)
	}
}

// search runs the trials Search asks for, in order, and returns the
// winner.
func (o *Options) search(ctx context.Context, sr *searchRun, res *Result) (int, error) {
	s := NewSearch(sr.plan, config.HigherIsBetter(sr.base.Train.ValidMetric))
	for n := 1; ; n++ {
		t, ok := s.Next()
		if !ok {
			break
		}
		store := ""
		if sr.root != "" {
			store = filepath.Join(sr.root, fmt.Sprintf("setting-%d", t.Setting))
		}
		tr, m, err := o.trial(ctx, sr.configs[t.Setting], t, sr.epochSamples, sr.plan, store, sr.models[t.Setting])
		if err != nil {
			return 0, fmt.Errorf("autotune: trial %d (setting %d: %s): %w", n, t.Setting, sr.settings[t.Setting], err)
		}
		sr.models[t.Setting] = m
		tr.Settings = sr.settings[t.Setting]
		res.Trials = append(res.Trials, tr)
		res.Searched += tr.Trained
		if tr.Stopped {
			res.Stopped++
		}
		o.say("autotune: trial %d, round %d, setting %d (%s): %s, %d samples", n, t.Round, t.Setting, tr.Settings, tr.figureText(res.Metric), tr.Trained)
		if err := s.Report(t, Outcome{Figure: float64(tr.Figure), Trained: tr.Trained}); err != nil {
			return 0, err
		}
	}
	w, ok := s.Winner()
	if !ok {
		return 0, errors.New("autotune: the search chose no setting")
	}
	return w, nil
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
