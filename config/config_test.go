package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/sparsenet/slide"
)

func TestDefaultsAreValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Model.Tables[0].Dim != 18 || c.Train.BatchSize != 256 || c.Model.Hidden[1] != 80 || !*c.Train.Shuffle {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

// parseCase is a config to parse: check runs on the parsed config, or
// errs are substrings the error must all hold (it wraps ErrInvalid).
type parseCase struct {
	name, yaml string
	check      func(t *testing.T, c Config)
	errs       []string
}

// runParseCases parses each case as a subtest.
func runParseCases(t *testing.T, cases []parseCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if len(tc.errs) > 0 {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				for _, s := range tc.errs {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestParse(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "empty", yaml: "", check: func(t *testing.T, c Config) {
			if c.Model.Tables[0].Name != "emb" {
				t.Fatal(c.Model.Tables)
			}
		}},
		{name: "override", yaml: `
model:
  tables:
    - {name: a, dim: 8, optimizer: {name: sgd, lr: 0.1}}
    - {name: b, dim: 4}
  field_tables: [a, b, a]
  fields: 3
  hidden: [32]
train: {batch_size: 64, epochs: 3, shuffle: false, progress_every: 500ms}
`, check: func(t *testing.T, c Config) {
			if len(c.Model.Tables) != 2 || c.Model.Tables[1].Optimizer.Name != ams.DefaultOptimizer {
				t.Fatalf("tables %+v", c.Model.Tables)
			}
			if c.Train.BatchSize != 64 || c.Train.Epochs != 3 || *c.Train.Shuffle || c.Train.ProgressEvery != 500*time.Millisecond {
				t.Fatalf("train %+v", c.Train)
			}
		}},
		{name: "unknown-key", yaml: "model: {dims: 3}\n", errs: []string{"field dims not found"}},
		{name: "levels", yaml: "model: {fields: 3, field_levels: [1, 0, 9, 0]}\ntrain: {shuffle_chunk: -2}\n",
			errs: []string{"field_levels gives 4 levels for 3 fields", "field_levels[2] = 9", "shuffle_chunk -2"}},
		{name: "group-format", yaml: "model: {field_levels: [1, 1, 0]}\ntrain: {format: group, compress: false, pipeline: false}\n",
			check: func(t *testing.T, c Config) {
				if c.Train.Format != "group" || *c.Train.Compress || *c.Train.Pipeline || !*c.Train.Shuffle || c.Train.ShuffleChunk != 16 {
					t.Fatalf("train %+v", c.Train)
				}
			}},
		{name: "many-problems", yaml: `
model:
  tables: [{name: a, dim: 0}, {name: a, dim: 4}]
  field_tables: [zz]
  pooling: max
  hidden: [0]
train: {batch_size: -1, format: csv, on_error: maybe}
`, errs: []string{"dim 0", "declared twice", `unknown table "zz"`, `pooling "max"`, "hidden[0]", "batch_size -1", `format "csv"`, `on_error: reader: unknown error policy "maybe"`}},
		// Absurd sizes are refused at once (issue 20, item 9), zeros are
		// the documented defaults.
		{name: "absurd-sizes", yaml: `
model: {hidden: [100000000]}
train: {batch_size: 100000000, eval_batch_size: 1000000000, epochs: 1000000000, max_inflight_pushes: 100000, prefetch_batches: 1000}
`, errs: []string{"hidden[0] = 100000000", "batch_size 100000000", "eval_batch_size 1000000000", "epochs 1000000000",
			"max_inflight_pushes 100000", "prefetch_batches 1000"}},
		// A zero written where zero means nothing is refused, as a
		// negative value is, rather than quietly taken for the default
		// (issue 21, item 4).
		{name: "zero-sizes", yaml: `
job: {workers: 0, split_bytes: 0}
model: {tables: [{name: a, dim: 4, optimizer: {lr: 0}}], dense_optimizer: {lr: 0.0}, seed: 0}
train: {batch_size: 0, eval_batch_size: 0, epochs: 0, max_inflight_pushes: 0, shuffle_chunk: 0, progress_every: 0s}
data: {train_samples: 0, vocab: 0}
snapshot: {every: 0s}
`, errs: []string{"job.workers 0 is not allowed (leave it out for the default, 1)", "job.split_bytes 0",
			"model.tables[0].optimizer.lr 0", "model.dense_optimizer.lr 0", "model.seed 0",
			"train.batch_size 0 is not allowed (leave it out for the default, 256)", "train.eval_batch_size 0",
			"train.epochs 0", "train.max_inflight_pushes 0", "train.shuffle_chunk 0", "train.progress_every 0",
			"data.train_samples 0", "data.vocab 0", "snapshot.every 0 is not allowed (leave it out for the default, 10m0s; a negative value takes snapshots only on request)"}},
		// Where zero means something, it is kept; kafka's zeros are
		// refused only with brokers (its defaults apply only then).
		{name: "meaningful-zeros", yaml: `
model: {fields: 0, output: {labels: 0}}
train: {eval_every: 0, dense_threads: 0, prefetch_batches: 0}
snapshot: {every_samples: 0}
kafka: {commit_every: 0s}
`, check: func(t *testing.T, c Config) {
			if c.Train.EvalEvery != 0 || c.Model.Fields != 0 || *c.Train.PrefetchBatches != 0 || c.Snapshot.EverySamples != 0 {
				t.Fatalf("meaningful zeros changed: %+v", c)
			}
		}},
		{name: "kafka-zeros", yaml: "kafka: {brokers: [b:1], topic: t, commit_every: 0s, max_wait: 0s}\n",
			errs: []string{"kafka.commit_every 0 is not allowed (leave it out for the default, 1s)", "kafka.max_wait 0"}},
	})
}

func TestLoadRoundTrip(t *testing.T) {
	c := Default()
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model.Tables[0] != c.Model.Tables[0] || got.Train.ProgressEvery != c.Train.ProgressEvery {
		t.Fatalf("round trip changed the config:\n%+v\n%+v", got, c)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}

// FuzzParse: any YAML gives a valid config or an error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("model: {tables: [{name: a, dim: 8}], hidden: [4]}\ntrain: {batch_size: 3}\n"))
	f.Add([]byte("train: {progress_every: 1h, prefetch_batches: -1}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse returned an invalid config: %v", err)
		}
	})
}

func TestKafkaConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		err  string
	}{
		{"kafka: {brokers: [a:1], topic: ctr}\ntrain: {epochs: 1}", ""},
		{"kafka: {brokers: [a:1]}", "kafka.topic is required"},
		{"kafka: {brokers: [a:1], topic: t}\ntrain: {epochs: 2}", "read once"},
		{"kafka: {topic: t}", "without kafka.brokers"},
	} {
		c, err := Parse([]byte(tc.yaml))
		if tc.err == "" {
			if err != nil {
				t.Fatalf("%q: %v", tc.yaml, err)
			}
			if c.Kafka.CommitEvery != time.Second || c.Kafka.MaxWait != 200*time.Millisecond {
				t.Fatalf("defaults not filled: %+v", c.Kafka)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("%q: error %v, want %q", tc.yaml, err, tc.err)
		}
	}
}

func TestOutputConfig(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "default-logit", yaml: "", check: func(t *testing.T, c Config) {
			o := c.Model.Output
			if o.Kind != OutputLogit || o.Sparsity != 0.005 || o.InferSparsity != 0.005 || o.Family != slide.KindDWTA ||
				o.LearningRate != 0.001 || o.Eval != "both" || *o.ProgressiveEvery != 4 || o.Hidden == nil || len(o.Hidden) != 0 {
				t.Fatalf("output defaults %+v", o)
			}
		}},
		{name: "slide", yaml: `
model:
  tables: [{name: emb, dim: 128}]
  output: {kind: slide, labels: 670091, hidden: [256], sparsity: 0.01, hash: simhash, k: 12, l: 50, progressive_every: 0}
train: {format: xml}
`, check: func(t *testing.T, c Config) {
			o := c.Model.Output
			if o.Kind != OutputSLIDE || o.Labels != 670091 || o.Hidden[0] != 256 || o.InferSparsity != 0.01 ||
				o.Family != slide.KindSimHash || o.K != 12 || o.L != 50 || *o.ProgressiveEvery != 0 {
				t.Fatalf("output %+v", o)
			}
		}},
		{name: "slide-needs-xml", yaml: "model: {output: {kind: slide}}\n", errs: []string{`train.format is "libffm", want xml`}},
		{name: "bad-kind", yaml: "model: {output: {kind: softmax}}\n", errs: []string{`model.output.kind "softmax"`}},
		{name: "many-problems", yaml: `
model:
  tables: [{name: a, dim: 8}, {name: b, dim: 8}]
  output: {kind: slide, labels: -1, hidden: [0], sparsity: 1.5, hash: md5, k: 30, lr: -1, rehash_base: -2,
           threads: -1, eval: maybe, eval_limit: -1, progressive_every: -1}
train: {format: xml}
kafka: {brokers: [a:1], topic: t}
`, errs: []string{"does not train from Kafka", "labels -1", "hidden[0] = 0", "Sparsity 1.5", `hash: slide: bad config: hash family "md5"`, "K 30",
			"LearningRate -1", "RehashBase -2", "Threads -1", `eval "maybe"`, "eval_limit -1", "progressive_every -1",
			"one embedding table"}},
	})
}

// TestParseReportsKeysAndValuesAtOnce: an unknown key and bad values are
// all reported in one run (issue 48: the values' errors came only once
// the keys were fixed).
func TestParseReportsKeysAndValuesAtOnce(t *testing.T) {
	_, err := Parse([]byte("train: {epochz: 3, batch_size: -5}\nmodel: {hidden: [0]}\n"))
	for _, want := range []string{"field epochz not found", "batch_size -5", "hidden[0] = 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: %v, want it to say %q", err, want)
		}
	}
}
