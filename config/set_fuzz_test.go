package config

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// setBase is the config FuzzSet changes: the defaults with two tables, so
// that list paths have elements to name.
func setBase() Config {
	c := Default()
	c.Model.Tables = append(c.Model.Tables, c.Model.Tables[0])
	c.Model.Tables[1].Name = "emb2"
	return c
}

// FuzzSet checks -set path=value against the YAML file it stands for
// ("Set sets the key at path to value, as the YAML file would"): no path
// or value panics; a path Set takes without a list index changes the
// config as decoding the YAML document path: value onto it does; and
// model.tables[*].key changes it as setting key on each table in turn.
func FuzzSet(f *testing.F) {
	for _, kv := range [][2]string{
		{"train.batch_size", "512"},
		{"train.progress_every", "10s"},
		{"model.hidden", "64,32"},
		{"model.output.hidden", ""},
		{"kafka.brokers", "[a:1, b:2]"},
		{"model.tables[*].optimizer.lr", "0.02"},
		{"model.tables[1].dim", "8"},
		{"model.tables[*].admission", "{kind: count, n: 3}"},
		{"export.tables", "{emb: int8}"},
		{"train.batch_size", "&a 3"},
		{"model.tables[x].dim", "- 1\n- 2"},
		{"snapshot.every", "null"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, path, value string) {
		c := setBase()
		err := c.Set(path, value)
		if err != nil && !errors.Is(err, ErrInvalid) {
			return // refused; a zero that means nothing is set all the same
		}
		want := setBase()
		if parts := strings.Split(path, "."); !strings.ContainsAny(path, "[]") {
			doc, ok := setDocument(parts, value)
			if !ok {
				t.Fatalf("Set(%q, %q) took a value that is not YAML", path, value)
			}
			if err := doc.Decode(&want); err != nil {
				t.Fatalf("Set(%q, %q) = %v, but the YAML document %s does not decode: %v", path, value, err, mustYAML(t, doc), err)
			}
		} else if before, after, ok := strings.Cut(path, "[*]"); ok && strings.HasSuffix(before, "model.tables") && !strings.ContainsAny(after, "[]") {
			for _, i := range []string{"[0]", "[1]"} {
				if err := want.Set(before+i+after, value); err != nil && !errors.Is(err, ErrInvalid) {
					t.Fatalf("Set(%q, %q) = nil, Set of %s = %v", path, value, i, err)
				}
			}
		} else {
			return
		}
		if got, exp := mustYAML(t, &c), mustYAML(t, &want); !bytes.Equal(got, exp) {
			t.Fatalf("Set(%q, %q) made\n%s\nwant\n%s", path, value, got, exp)
		}
	})
}

// setDocument is the YAML document that sets parts to value: nested
// mappings down to value's node, made as Set makes it (a list's brackets
// optional, an empty value the empty string).
func setDocument(parts []string, value string) (*yaml.Node, bool) {
	if isListKey(parts) && !strings.HasPrefix(strings.TrimSpace(value), "[") {
		value = "[" + value + "]"
	}
	var doc yaml.Node
	if yaml.Unmarshal([]byte(value), &doc) != nil {
		return nil, false
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
	if len(doc.Content) > 0 {
		n = doc.Content[0]
	}
	for i := len(parts) - 1; i >= 0; i-- {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map",
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: parts[i]}, n}}
	}
	return n, true
}

// isListKey reports whether parts name a list of Config.
func isListKey(parts []string) bool {
	v := reflect.ValueOf(&Config{}).Elem()
	for _, p := range parts {
		for v.Kind() == reflect.Pointer {
			v = reflect.New(v.Type().Elem()).Elem()
		}
		if v.Kind() != reflect.Struct {
			return false
		}
		f, ok := field(v, p)
		if !ok {
			return false
		}
		v = f
	}
	t := v.Type()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Slice
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
