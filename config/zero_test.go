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
// name exactly the keys of zeroRefused, with the same hints.
func TestZeroTagsAreTheList(t *testing.T) {
	tagged := taggedZeros(reflect.TypeFor[Config](), "", nil)
	for _, p := range slices.Sorted(maps.Keys(zeroRefused)) {
		if hint, ok := tagged[p]; !ok {
			t.Errorf("%s: listed, not tagged", p)
		} else if hint != zeroRefused[p] {
			t.Errorf("%s: tagged with the hint %q, listed with %q", p, hint, zeroRefused[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(tagged)) {
		if _, ok := zeroRefused[p]; !ok {
			t.Errorf("%s: tagged, not listed", p)
		}
	}
}

// TestZeroRefusedEverywhere: every key of zeroRefused refuses a zero given
// by Set (-set, the short flags) and by a YAML file, with the message that
// names the key, its default and its hint.
func TestZeroRefusedEverywhere(t *testing.T) {
	for _, pattern := range slices.Sorted(maps.Keys(zeroRefused)) {
		path := strings.ReplaceAll(pattern, "[*]", "[0]")
		hint := ""
		if h := zeroRefused[pattern]; h != "" {
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
