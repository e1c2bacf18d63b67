package config

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	c := Default()
	c.Model.Tables = append(c.Model.Tables, c.Model.Tables[0])
	c.Model.Tables[1].Name = "emb2"
	for _, s := range [][2]string{
		{"train.batch_size", "512"},
		{"train.shuffle", "false"},
		{"train.progress_every", "10s"},
		{"model.hidden", "64,32"},
		{"model.output.hidden", ""},
		{"kafka.brokers", "[a:1, b:2]"},
		{"model.tables[*].optimizer.lr", "0.02"},
		{"model.tables[1].dim", "8"},
		{"model.output.progressive_every", "3"},
		{"model.dense_optimizer.name", "sgd"},
	} {
		if err := c.Set(s[0], s[1]); err != nil {
			t.Fatalf("Set(%s, %s): %v", s[0], s[1], err)
		}
	}
	if c.Train.BatchSize != 512 || *c.Train.Shuffle || c.Train.ProgressEvery != 10*time.Second ||
		!reflect.DeepEqual(c.Model.Hidden, []int{64, 32}) || len(c.Model.Output.Hidden) != 0 ||
		!reflect.DeepEqual(c.Kafka.Brokers, []string{"a:1", "b:2"}) || *c.Model.Output.ProgressiveEvery != 3 ||
		c.Model.Tables[0].Optimizer.LR != 0.02 || c.Model.Tables[1].Optimizer.LR != 0.02 ||
		c.Model.Tables[0].Dim != 18 || c.Model.Tables[1].Dim != 8 || c.Model.DenseOptimizer.Name != "sgd" {
		t.Fatalf("after Set: %+v", c)
	}
	for _, bad := range [][2]string{
		{"train.batch_sise", "1"},         // no such key
		{"train", "1"},                    // a section
		{"train.batch_size.x", "1"},       // not a section
		{"model.tables[5].dim", "1"},      // out of range
		{"model.tables[x].dim", "1"},      // bad index
		{"model.hidden[0", "1"},           // bad brackets
		{"train.batch_size", "many"},      // not a number
		{"model.pooling[0]", "sum"},       // not a list
		{"train.progress_every", "often"}, // not a duration
	} {
		if err := c.Set(bad[0], bad[1]); err == nil {
			t.Errorf("Set(%s, %s) succeeded", bad[0], bad[1])
		} else if !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("Set(%s, %s): error %q does not name the path", bad[0], bad[1], err)
		}
	}
	if err := c.Set("train.batch_sise", "1"); !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "batch_size") {
		t.Errorf("a misspelt key: %v (want ErrBadPath listing the keys)", err)
	}
}

// TestOverrides: -set and the aliases apply in command-line order, an
// alias may set several keys and fixed values, and every failure is
// reported at once.
func TestOverrides(t *testing.T) {
	var o Overrides
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Bind(fs)
	err := fs.Parse([]string{"-set", "model.output.infer_sparsity=0.5", "-sparsity", "0.1", "-seed", "7",
		"-dim", "4", "-set", "model.tables[0].dim=6", "-epochs", "3"})
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	if err := o.Apply(&c); err != nil {
		t.Fatal(err)
	}
	if c.Model.Output.Sparsity != 0.1 || c.Model.Output.InferSparsity != 0 || c.Model.Seed != 7 ||
		c.Model.Tables[0].Init.Seed != 7 || c.Model.Tables[0].Dim != 6 || c.Train.Epochs != 3 {
		t.Fatalf("after the overrides: %+v", c)
	}
	var bad Overrides
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bad.Bind(fs)
	if err := fs.Parse([]string{"-set", "novalue"}); err == nil {
		t.Fatal("-set without = accepted")
	}
	if err := fs.Parse([]string{"-epochs", "x", "-set", "a.b=1"}); err != nil {
		t.Fatal(err)
	}
	err = bad.Apply(&c)
	if err == nil || !strings.Contains(err.Error(), "-epochs") || !strings.Contains(err.Error(), "-set: a.b=1") {
		t.Fatalf("Apply of two bad changes: %v", err)
	}
}

// TestAliasesName every alias's keys exist, so a renamed key breaks this
// test rather than a user's command line.
func TestAliasesNameKeys(t *testing.T) {
	for _, a := range Aliases {
		for _, p := range a.Paths {
			path, fixed, isFixed := strings.Cut(p, "=")
			v := fixed
			if !isFixed {
				v = sample(t, path)
			}
			c := Default()
			if err := c.Set(path, v); err != nil {
				t.Errorf("-%s: %v", a.Flag, err)
			}
		}
	}
}

// sample returns a value of the right type for the key at path.
func sample(t *testing.T, path string) string {
	c := Default()
	for _, v := range []string{"1", "true", "x", "1s"} {
		if c.Set(path, v) == nil {
			return v
		}
	}
	t.Errorf("no sample value fits %s", path)
	return ""
}

// TestZeroFlags: a zero given on the command line where zero means
// nothing is refused, naming the flag, the key and its default; where zero
// means something it is kept (issue 21, item 4).
func TestZeroFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-batch-size", "0"}, {"-epochs", "0"}, {"-workers", "0"}, {"-lr", "0"}, {"-dense-lr", "0"},
		{"-split-bytes", "0"}, {"-train-samples", "0"}, {"-snapshot-keep", "0"}, {"-snapshot-every", "0s"},
		{"-set", "train.eval_batch_size=0"}, {"-set", "train.shuffle_chunk=0"},
		{"-set", "train.max_inflight_pushes=0"}, {"-set", "model.tables[0].optimizer.lr=0"},
	} {
		var o Overrides
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		c := Default()
		err := o.Apply(&c)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), args[0]+":") ||
			!strings.Contains(err.Error(), "0 is not allowed (leave it out for the default, ") {
			t.Errorf("%v: %v, want a refusal naming the flag and the default", args, err)
		}
	}
	c := Default()
	for _, kv := range [][2]string{{"train.eval_every", "0"}, {"snapshot.every_samples", "0"}, {"model.fields", "0"},
		{"train.prefetch_batches", "0"}, {"train.dense_threads", "0"}, {"model.tables[0].budget.rows", "0"}} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Errorf("Set(%s, %s): %v", kv[0], kv[1], err)
		}
	}
	// Every refused key names a key of the config.
	for path := range zeroRefused {
		if err := c.Set(path, sample(t, path)); err != nil {
			t.Errorf("zeroRefused: %v", err)
		}
	}
}

// TestFormatFromExtension: with no format given, the training files'
// extension names it; -format, -set and the file's train.format override
// it (issue 21, item 7).
// TestValidMetricOfOutput: the validation metric's default is the final
// output kind's, also when a flag or a file changes the kind; a metric
// given stays.
func TestValidMetricOfOutput(t *testing.T) {
	for _, c := range []struct {
		args []string
		file string
		want string
	}{
		{nil, "", "auc"},
		{[]string{"-output", "slide", "-format", "xml"}, "", "p@1"},
		{[]string{"-set", "model.output.kind=slide", "-format", "xml"}, "", "p@1"},
		{[]string{"-output", "slide", "-format", "xml", "-set", "train.valid_metric=p@5"}, "", "p@5"},
		{[]string{"-output", "slide"}, "train: {format: xml}\n", "p@1"},
	} {
		var o Overrides
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Bind(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		file := ""
		if c.file != "" {
			file = filepath.Join(t.TempDir(), "job.yaml")
			if err := os.WriteFile(file, []byte(strings.ReplaceAll(c.file, `\n`, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Build(File(file), &o)
		if err != nil || cfg.Train.ValidMetric != c.want {
			t.Errorf("%v %q: valid_metric %q, %v; want %q", c.args, c.file, cfg.Train.ValidMetric, err, c.want)
		}
	}
}

// loadArgs is Build of file ("": none) and the command line args.
func loadArgs(t *testing.T, file string, args ...string) Config {
	t.Helper()
	var o Overrides
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c, err := Build(File(file), &o)
	if err != nil {
		t.Fatalf("%s %v: %v", file, args, err)
	}
	return c
}

func TestFormatFromExtension(t *testing.T) {
	load := func(file string, args ...string) Config { t.Helper(); return loadArgs(t, file, args...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-train", "a.libfm"}, "libfm"},
		{[]string{"-train", "a.libsvm,b.libsvm"}, "libfm"},
		{[]string{"-train", "d/*.libffm"}, "libffm"},
		{[]string{"-train", "u.group"}, "group"},
		{[]string{"-train", "a.txt"}, "libffm"},
		{[]string{"-train", "a.libfm,b.libffm"}, "libffm"},
		{[]string{"-train", "a.libfm", "-format", "libffm"}, "libffm"},
		{[]string{"-train", "a.libfm", "-set", "train.format=criteo"}, "criteo"},
		{nil, "libffm"},
	} {
		if got := load("", c.args...).Train.Format; got != c.want {
			t.Errorf("%v: format %s, want %s", c.args, got, c.want)
		}
	}
	dir := t.TempDir()
	given := filepath.Join(dir, "given.yaml")
	os.WriteFile(given, []byte("train: {format: libffm}\n"), 0o644)
	if got := load(given, "-train", "a.libfm").Train.Format; got != "libffm" {
		t.Errorf("the file's train.format: %s, want libffm", got)
	}
	inferred := filepath.Join(dir, "inferred.yaml")
	os.WriteFile(inferred, []byte("job: {train: [a.libfm]}\n"), 0o644)
	if got := load(inferred).Train.Format; got != "libfm" {
		t.Errorf("the file's job.train a.libfm: %s, want libfm", got)
	}
}

// TestKindFromAFileOrAFlagMeansTheSame is issue 47's third item: the
// model's kind given in a file or with -set, with the short flags before
// or after it, gives one configuration. `-config` with `model: {kind:
// deepfm}` and `-dim 16` was refused ("table wide has dim 16, the wide
// part's weights need dim 1": the file's defaults had added the wide
// table before -dim set every table's dim), while `-set
// model.kind=deepfm -dim 16` worked.
func TestKindFromAFileOrAFlagMeansTheSame(t *testing.T) {
	dir := t.TempDir()
	load := func(file string, args ...string) string {
		t.Helper()
		c := loadArgs(t, file, args...)
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, kind := range []string{KindDeepFM, KindFM, KindWDL, KindDCNv2, KindMLP, KindLR} {
		file := filepath.Join(dir, kind+".yaml")
		if err := os.WriteFile(file, []byte("model: {kind: "+kind+"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		shape := []string{"-dim", "16", "-lr", "0.02"}
		if kind != KindFM && kind != KindLR {
			shape = append(shape, "-hidden", "64,32")
		}
		want := load("", append([]string{"-set", "model.kind=" + kind}, shape...)...)
		for _, got := range []string{
			load("", append(slices.Clone(shape), "-set", "model.kind="+kind)...),
			load(file, shape...),
		} {
			if got != want {
				t.Errorf("kind %s: the file or the flags' order changed the configuration:\n%s\nwant\n%s", kind, got, want)
			}
		}
	}
}
