package config

import (
	"strings"
	"testing"
)

// TestAutotuneRefusals: train.autotune refuses, with the reason, what it
// cannot search: a stream, a SLIDE output, the sequence kinds, a job
// without a validation set; and a budget or kinds it cannot read.
func TestAutotuneRefusals(t *testing.T) {
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"kafka.brokers=127.0.0.1:9092", "kafka.topic=t"}, "a stream is read once"},
		{[]string{"job.train=t.xml", "train.format=xml", "model.output.kind=slide", "job.valid=v.xml"}, "slide output: not built yet"},
		{[]string{"data.valid_samples=0"}, "needs a validation set"},
		{[]string{"data.valid_samples=100", "autotune.budget=three"}, `autotune.budget "three"`},
		{[]string{"data.valid_samples=100", "autotune.budget=0x"}, `autotune.budget "0x"`},
		{[]string{"data.valid_samples=100", "autotune.kinds=mlp,din"}, `autotune.kinds: "din" is not one of`},
	} {
		var o Overrides
		o.Add("test", "train.autotune", "true")
		for _, s := range c.sets {
			p, v, _ := strings.Cut(s, "=")
			o.Add("test", p, v)
		}
		_, err := Build(&o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.sets, err, c.want)
		}
	}
	var o Overrides
	o.Add("test", "train.autotune", "true")
	o.Add("test", "data.valid_samples", "100")
	o.Add("test", "autotune.budget", "200000")
	if _, err := Build(&o); err != nil {
		t.Fatalf("a budget in samples: %v", err)
	}
	if r, n, err := ParseBudget("2.5x"); r != 2.5 || n != 0 || err != nil {
		t.Fatalf("2.5x: %v %v %v", r, n, err)
	}
}

// TestHoldout: job.holdout is refused with job.valid, without training
// files and below 2; an autotuned job on files without job.valid holds
// out a tenth, and -valid given after a file that autotunes takes its
// place (the holdout is a default that follows from the keys).
func TestHoldout(t *testing.T) {
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"job.train=t.libffm", "job.valid=v.libffm", "job.holdout=5"}, "job.holdout with job.valid"},
		{[]string{"job.holdout=5"}, "job.holdout needs training files"},
		{[]string{"job.train=t.libffm", "job.holdout=1"}, "N at least 2"},
	} {
		var o Overrides
		for _, s := range c.sets {
			p, v, _ := strings.Cut(s, "=")
			o.Add("test", p, v)
		}
		if _, err := Build(&o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.sets, err, c.want)
		}
	}
	var o Overrides
	o.Add("test", "job.train", "t.libffm")
	o.Add("test", "train.autotune", "true")
	c, err := Build(&o)
	if err != nil || c.Job.Holdout != DefaultHoldout || !c.HasValidation() {
		t.Fatalf("autotune on files: holdout %d, %v", c.Job.Holdout, err)
	}
	o.Add("test", "job.valid", "v.libffm")
	if c, err = Build(YAML([]byte("job: {train: [t.libffm]}\ntrain: {autotune: true}\n")), &o); err != nil || c.Job.Holdout != 0 {
		t.Fatalf("-valid after a file that autotunes: holdout %d, %v", c.Job.Holdout, err)
	}
}
