package config

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestReadmeDefaults checks the README's configuration file, "every key
// with its default", against the code (issue 21, item 8): every key it
// lists exists, and the value it shows is the default Default() holds
// (kafka's with brokers set, since its defaults apply only then). A
// default changed in the code without the README fails here.
func TestReadmeDefaults(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md: no Configuration section")
	}
	_, block, ok := strings.Cut(after, "```yaml\n")
	if !ok {
		t.Fatal("README.md: no yaml block under Configuration")
	}
	block, _, _ = strings.Cut(block, "```")
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(block), &root); err != nil {
		t.Fatalf("README.md's configuration: %v", err)
	}
	n := 0
	readmeLeaves(root.Content[0], "", func(path, value string) {
		n++
		want, got := readmeDefault(path), readmeDefault(path)
		if err := got.Set(path, value); err != nil {
			t.Errorf("README.md: %s: %v", path, err)
			return
		}
		var a, d []string
		collect(reflect.ValueOf(&got).Elem(), strings.Split(path, "."), &a)
		collect(reflect.ValueOf(&want).Elem(), strings.Split(path, "."), &d)
		if !reflect.DeepEqual(a, d) {
			t.Errorf("README.md says %s: %s; the default is %s", path, value, strings.Join(d, ", "))
		}
	})
	if n < 100 {
		t.Errorf("README.md's configuration has %d keys: not the whole file", n)
	}
}

// readmeDefault is the config whose defaults the README shows for path:
// Default(), with kafka on for the kafka keys and count admission for the
// keys of count admission, whose defaults apply only then.
func readmeDefault(path string) Config {
	var c Config
	if strings.HasPrefix(path, "kafka.") && path != "kafka.brokers" {
		c.Kafka.Brokers = []string{"-"}
	}
	c.EnsureDefaults()
	if strings.HasPrefix(path, "model.tables[0].admission.") && path != "model.tables[0].admission.kind" {
		c.Model.Tables[0].Admission.Kind = "count"
		c.Model.Tables[0].EnsureDefaults()
	}
	return c
}

// readmeLeaves calls fn with the path and the value of every leaf of a
// mapping node: a scalar, or a list of scalars or an empty mapping, as YAML.
func readmeLeaves(node *yaml.Node, prefix string, fn func(path, value string)) {
	switch {
	case node.Kind == yaml.MappingNode && len(node.Content) > 0:
		for i := 0; i+1 < len(node.Content); i += 2 {
			readmeLeaves(node.Content[i+1], strings.TrimPrefix(prefix+"."+node.Content[i].Value, "."), fn)
		}
	case node.Kind == yaml.SequenceNode && len(node.Content) > 0 && node.Content[0].Kind == yaml.MappingNode:
		for i, e := range node.Content {
			readmeLeaves(e, fmt.Sprintf("%s[%d]", prefix, i), fn)
		}
	default:
		bare := *node
		bare.HeadComment, bare.LineComment, bare.FootComment = "", "", ""
		out, err := yaml.Marshal(&bare)
		if err != nil {
			panic(err)
		}
		fn(prefix, strings.TrimSpace(string(out)))
	}
}

// zeroMeansDefault lists the keys whose zero is documented to stand for
// another setting's value (README.md's comment says which).
var zeroMeansDefault = map[string]bool{
	"model.output.infer_sparsity": true, // sparsity
	"model.output.threads":        true, // GOMAXPROCS
}

// TestZeroIsNeverTheDefault (issue 21, item 4): for every number of
// README.md's configuration, a zero a user writes is refused, or kept as
// zero (where zero means something, as its comment says), or documented
// as standing for another setting; it never quietly becomes the default.
func TestZeroIsNeverTheDefault(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(b), "\n## Configuration\n")
	_, block, _ := strings.Cut(after, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(block), &root); err != nil || len(root.Content) == 0 {
		t.Fatalf("README.md's configuration: %v", err)
	}
	n := 0
	readmeLeaves(root.Content[0], "", func(path, value string) {
		_, notNumber := strconv.ParseFloat(value, 64)
		_, notDuration := time.ParseDuration(value)
		if (notNumber != nil && notDuration != nil) || zeroMeansDefault[path] {
			return
		}
		n++
		c := readmeDefault(path)
		if c.Set(path, "0") != nil {
			return // refused
		}
		c.EnsureDefaults()
		var got []string
		collect(reflect.ValueOf(&c).Elem(), strings.Split(path, "."), &got)
		if v := strings.Join(got, ","); v != "0" && v != "0s" {
			t.Errorf("%s: 0 was taken and became %s", path, v)
		}
	})
	if n < 50 {
		t.Errorf("README.md's configuration has %d numbers: not the whole file", n)
	}
}

// TestZeroByKind: a setting whose default depends on another refuses an
// explicit zero only where the default applies: model.cross_layers with
// kind dcnv2 (its default 2), not with mlp (which holds 0).
func TestZeroByKind(t *testing.T) {
	if _, err := Parse([]byte("model: {kind: dcnv2, cross_layers: 0}\n")); err == nil ||
		!strings.Contains(err.Error(), "model.cross_layers 0 is not allowed (leave it out for the default, 2)") {
		t.Errorf("dcnv2 with 0 cross layers: %v", err)
	}
	if _, err := Parse([]byte("model: {kind: mlp, cross_layers: 0}\n")); err != nil {
		t.Errorf("mlp with cross_layers 0 (a printed config): %v", err)
	}
}
