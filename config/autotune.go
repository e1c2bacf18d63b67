package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// AutotuneConfig is the search train.autotune runs before the job (package
// autotune): trials of the job with other settings, scored on the
// validation set and stopped early by successive halving, within Budget;
// then the winner trains as the job.
type AutotuneConfig struct {
	// Budget bounds the samples the trials and the winner's training
	// train together: "3x" is three times the samples of one training run
	// (train.epochs over the training data), a plain number is samples.
	// The winner's run takes one run of it; the trials share the rest.
	//
	// The default value is "3x".
	Budget string `yaml:"budget"`
	// Kinds are the model kinds the search may choose among, each with
	// its own defaults (model.kind's).
	//
	// The default value is empty: the job's model.kind only.
	Kinds []string `yaml:"kinds"`
	// Trials is the number of settings the first round tries; each round
	// keeps the best third of its trials and gives each three times the
	// samples.
	//
	// The default value is 9.
	Trials int `yaml:"trials" zero:"refused"`
	// Output is the YAML file the winner's whole configuration is written
	// to, which a later job runs without searching again (-config FILE).
	//
	// The default value is "autotune.yaml".
	Output string `yaml:"output"`
	// Seed seeds the draws of the settings tried.
	//
	// The default value is 1.
	Seed uint64 `yaml:"seed" zero:"refused"`
}

// ensureDefaults fills the search's defaults.
func (a *AutotuneConfig) ensureDefaults() {
	if a.Budget == "" {
		a.Budget = "3x"
	}
	setInt(&a.Trials, 9)
	if a.Output == "" {
		a.Output = "autotune.yaml"
	}
	if a.Seed == 0 {
		a.Seed = 1
	}
}

// ParseBudget reads autotune.budget: a multiple of one training run
// ("3x": runs 3, samples 0) or a number of samples (runs 0).
func ParseBudget(s string) (runs float64, samples int64, err error) {
	if m, ok := strings.CutSuffix(s, "x"); ok {
		runs, err = strconv.ParseFloat(m, 64)
		if err != nil || !(runs > 0) {
			return 0, 0, fmt.Errorf("autotune.budget %q: want a positive multiple of one training run (3x) or a number of samples", s)
		}
		return runs, 0, nil
	}
	samples, err = strconv.ParseInt(s, 10, 64)
	if err != nil || samples <= 0 {
		return 0, 0, fmt.Errorf("autotune.budget %q: want a positive multiple of one training run (3x) or a number of samples", s)
	}
	return 0, samples, nil
}

// autotuneKinds are the model kinds autotune.kinds may name: the CTR
// kinds on flat samples (din and dien need a sequence section that the
// other kinds refuse).
var autotuneKinds = []string{KindMLP, KindLR, KindFM, KindDeepFM, KindDCNv2, KindWDL}

// validateAutotune appends the problems of train.autotune and its
// section.
func (c *Config) validateAutotune(bad func(string, ...any)) {
	a := &c.Autotune
	if _, _, err := ParseBudget(a.Budget); err != nil {
		bad("%v", err)
	}
	for _, k := range a.Kinds {
		if !slices.Contains(autotuneKinds, k) {
			bad("autotune.kinds: %q is not one of %s", k, strings.Join(autotuneKinds, ", "))
		}
	}
	if a.Trials < 1 || a.Output == "" {
		bad("autotune: trials %d must be at least 1 and output a file name", a.Trials)
	}
	if !c.Train.Autotune {
		return
	}
	switch {
	case c.Kafka.Enabled():
		bad("train.autotune with kafka: a stream is read once, so trials cannot each read it (tune on files of the topic's data, then stream with the YAML it writes)")
	case c.Model.Output.Kind == OutputSLIDE:
		bad("train.autotune with a slide output: not built yet (the search covers the CTR model)")
	case c.Model.Kind == KindDIN || c.Model.Kind == KindDIEN:
		bad("train.autotune with model.kind %s: not built yet (the search covers the kinds on flat samples: %s)", c.Model.Kind, strings.Join(autotuneKinds, ", "))
	case !c.HasValidation():
		bad("train.autotune needs a validation set to judge the trials: job.valid (for the generated data: data.valid_samples)")
	}
}
