package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestZeroTagsAreTheList: the zero:"refused" tags of the config structs
// name exactly the keys of the list they replaced, with the same hints.
func TestZeroTagsAreTheList(t *testing.T) {
	tagged := taggedZeros(reflect.TypeFor[Config](), "", nil)
	for _, p := range slices.Sorted(maps.Keys(listedZeros)) {
		if hint, ok := tagged[p]; !ok {
			t.Errorf("%s: listed, not tagged", p)
		} else if hint != listedZeros[p] {
			t.Errorf("%s: tagged with the hint %q, listed with %q", p, hint, listedZeros[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(tagged)) {
		if _, ok := listedZeros[p]; !ok {
			t.Errorf("%s: tagged, not listed", p)
		}
	}
}

// TestZeroRefusedEverywhere: every key the list of refused zeros held
// refuses a zero given by Set (-set, the short flags) and by a YAML file,
// with the message the list gave: the key, its default and its hint.
func TestZeroRefusedEverywhere(t *testing.T) {
	for _, pattern := range slices.Sorted(maps.Keys(listedZeros)) {
		path := strings.ReplaceAll(pattern, "[*]", "[0]")
		hint := ""
		if h := listedZeros[pattern]; h != "" {
			hint = "; " + h
		}
		want := fmt.Sprintf("%s 0 is not allowed (leave it out for the default, %s%s)", path, defaultOf(pattern), hint)
		c := readmeDefault(path)
		if pattern == "model.cross_layers" {
			c.Model.Kind = KindDCNv2
		}
		zero := zeroText(c, path)
		if err := c.Set(path, zero); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%s, %s): %v, want %q", path, zero, err, want)
		}
		doc := zeroDocument(t, path, zero)
		if _, err := Parse(doc); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "cannot unmarshal") {
			t.Errorf("a file giving %s 0:\n%s: %v, want %q", path, doc, err, want)
		}
	}
}

// zeroText is the zero of the key at path in c, as a user writes it.
func zeroText(c Config, path string) string {
	zero := "0"
	walk(reflect.ValueOf(&c).Elem(), nil, strings.Split(path, "."), "", func(v reflect.Value, _ string) {
		if v.Type() == reflect.TypeFor[time.Duration]() {
			zero = "0s"
		}
	})
	return zero
}

// zeroDocument is a YAML document that gives the key at path as zero, with
// what the rule on zeros needs to apply to it: kafka's brokers and topic,
// kind dcnv2 for its cross layers, count admission for the admission keys.
func zeroDocument(t *testing.T, path, zero string) []byte {
	t.Helper()
	doc := map[string]any{}
	switch {
	case strings.HasPrefix(path, "kafka."):
		doc["kafka"] = map[string]any{"brokers": []string{"b:1"}, "topic": "t"}
	case path == "model.cross_layers":
		doc["model"] = map[string]any{"kind": KindDCNv2}
	}
	m := doc
	parts := strings.Split(path, ".")
	for i, part := range parts {
		if i == len(parts)-1 {
			m[part] = any(zero)
			if zero == "0" {
				m[part] = 0 // a number, not the string "0"
			}
			break
		}
		name, index, _ := strings.Cut(part, "[")
		next, _ := m[name].(map[string]any)
		if next == nil {
			next = map[string]any{}
		}
		if index != "" { // model.tables[0]: one table, the list's element
			next = map[string]any{"name": "emb", "dim": 4}
			if strings.Contains(path, ".admission.") {
				next["admission"] = map[string]any{"kind": "count"}
			}
			m[name] = []any{next}
		} else {
			m[name] = next
		}
		m = next
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// listedZeros is the table of refused zeros that config/zero.go held
// before the tags replaced it (commit ff7339f), as it was: the keys (YAML
// paths, [*] for every element of a list) whose explicit zero is refused,
// each with a hint of what to write instead ("" for none beyond the
// default).
var listedZeros = map[string]string{
	"autotune.trials":              "",
	"autotune.seed":                "",
	"job.workers":                  "",
	"job.split_bytes":              "",
	"model.tables[*].optimizer.lr": "",
	"model.dense_optimizer.lr":     "",
	"model.seed":                   "",
	"train.batch_size":             "",
	"train.epochs":                 "",
	"train.shuffle_chunk":          "",
	"train.shuffle_window":         "",
	"train.memory_limit":           "",
	"train.eval_batch_size":        "",
	"train.max_inflight_pushes":    "",
	"train.progress_every":         "",
	"data.train_samples":           "",
	"data.test_samples":            "",
	"data.fields":                  "",
	"data.user_fields":             "",
	"data.mean_bag":                "",
	"data.vocab":                   "",
	"data.zipf_s":                  "",
	"data.samples_per_user":        "",
	"data.users":                   "",
	"data.seed":                    "",
	"data.world_seed":              "",
	"data.ctr":                     "",
	"data.logit_std":               "",
	"data.rank_scale":              "",
	"data.interaction_share":       "",
	"kafka.commit_every":           "",
	"kafka.max_wait":               "",
	"snapshot.every":               "a negative value takes snapshots only on request",
	"snapshot.keep":                "",
	"export.every":                 "a negative value takes exports only on request",
	"export.full_every":            "",
	"export.keep":                  "",
	"model.tables[*].init.scale":   "for rows that start at zero use init.kind zeros",
	"model.tables[*].admission.false_positive_rate": "",
	"model.tables[*].admission.max_partition_bytes": "",
	"model.tables[*].admission.generations":         "",
	"model.tables[*].expiry.max_expire_fraction":    "",
	"model.tables[*].nonfinite_bound":               "a tiny value such as 1e-12 clips an Inf to nearly 0",
	"model.output.sparsity":                         "1 is dense training",
	"model.output.lr":                               "",
	"model.output.rehash_base":                      "",
	"model.output.redraw_period":                    "",
	"model.cross_layers":                            "",
	"model.sequence.max_len":                        "",
	"model.output.owners":                           "",
	"model.output.infer_tune.agreement":             "",
	"model.output.infer_tune.samples":               "",
}

// listedOptimizerZeros are the optimizer settings (of every table's and
// of the dense optimizer) whose explicit zero is refused, with hints.
var listedOptimizerZeros = map[string]string{
	"initial_accumulator": "a tiny value such as 1e-12 starts the accumulator near zero",
	"eps":                 "",
	"beta1":               "a tiny value such as 1e-12 is Adam without momentum",
	"beta2":               "",
	"beta":                "a tiny value such as 1e-12",
	"momentum":            "for no momentum use the optimizer sgd",
}

func init() {
	for k, hint := range listedOptimizerZeros {
		listedZeros["model.tables[*].optimizer."+k] = hint
		listedZeros["model.dense_optimizer."+k] = hint
	}
}
