package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/ams"
)

// TestKindChangedOverAFile: a flag that changes the kind a file gives (or
// leaves to its default) gets the defaults of the flag's kind, as without
// the file: a file plus -set model.kind=fm kept mlp's hidden layers and was
// refused ("model.kind fm has no hidden layers"), a dcnv2 file plus -set
// model.kind=mlp kept dcnv2's cross layers.
func TestKindChangedOverAFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ file, kind string }{
		{"train: {epochs: 2}\n", KindFM},
		{"train: {epochs: 2}\n", KindLR},
		{"train: {epochs: 2}\nmodel: {kind: dcnv2}\n", KindMLP},
		{"train: {epochs: 2}\nmodel: {kind: fm}\n", KindDCNv2},
		{"train: {epochs: 2}\nmodel: {kind: lr}\n", KindDeepFM},
	} {
		file := filepath.Join(dir, "job.yaml")
		if err := os.WriteFile(file, []byte(c.file), 0o644); err != nil {
			t.Fatal(err)
		}
		got := mustYAML(t, loadArgs(t, file, "-set", "model.kind="+c.kind))
		want := mustYAML(t, loadArgs(t, "", "-epochs", "2", "-set", "model.kind="+c.kind))
		if string(got) != string(want) {
			t.Errorf("file %q with -set model.kind=%s:\n%s\nwant\n%s", c.file, c.kind, got, want)
		}
	}
}

// TestBuildValidatesOnce: Build validates once, however many sources it
// takes (Parse validated a file, then LoadWith the file with the flags'
// changes), and reports every source's problems with the whole's.
func TestBuildValidatesOnce(t *testing.T) {
	calls := 0
	validated = func() { calls++ }
	defer func() { validated = nil }()
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte("train: {epochs: 2, batch_sise: 3}\nmodel: {kind: fm, seed: 0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var o Overrides
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Bind(fs)
	if err := fs.Parse([]string{"-set", "train.batch_size=-1", "-set", "model.hidn=3", "-lr", "0"}); err != nil {
		t.Fatal(err)
	}
	_, err := Build(File(file), &o)
	for _, want := range []string{
		file + ": config: invalid: yaml: unmarshal errors:\n  line 1: field batch_sise not found", // the file's key,
		file + ": config: invalid: model.seed 0 is not allowed",                                   // its zero,
		`-set: model.hidn=3: config: no such key: "hidn"`,                                         // a change's key,
		"-lr: config: invalid: model.tables[*].optimizer.lr 0 is not allowed",                     // its zero
		"config: invalid: train.batch_size -1 is not in [1, 262144]",                              // and the whole's
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Build: %v\nwant it to say %q", err, want)
		}
	}
	if calls != 1 {
		t.Errorf("Build of a file and changes validated %d times, want 1", calls)
	}
	calls = 0
	if c, err := Build(File(file)); err == nil || calls != 1 || c.Built() {
		t.Errorf("Build of a bad file: %v, %d validations, built %v; want an error, 1 validation, not built", err, calls, c.Built())
	}
	calls = 0
	if c, err := Parse([]byte("model: {kind: fm}\n")); err != nil || calls != 1 || !c.Built() {
		t.Errorf("Parse: %v, %d validations, built %v; want 1 validation, built", err, calls, c.Built())
	}
}

// TestBuildFromGo: a Config made in Go is a source whose zero fields mean
// their defaults (no zero is refused), under a file's keys and the
// command line's changes; Build leaves the caller's Config as it was.
func TestBuildFromGo(t *testing.T) {
	var g Config
	g.Model.Kind = KindFM
	g.Model.Tables = []ams.TableSpec{{Name: "a", Dim: 4}}
	g.Train.Epochs = 3
	c, err := Build(g)
	if err != nil || !c.Built() || g.Built() {
		t.Fatalf("Build(Go): %v, built %v, the caller's built %v", err, c.Built(), g.Built())
	}
	if c.Train.BatchSize != 256 || c.Train.Epochs != 3 || len(c.Model.Hidden) != 0 || !c.Model.HasWide() ||
		len(c.Model.Tables) != 2 || c.Model.Tables[0].Optimizer.LR != ams.DefaultLR {
		t.Errorf("Build(Go): %+v", c)
	}
	if len(g.Model.Tables) != 1 || g.Model.Tables[0].Optimizer.Name != "" || g.Model.Wide != nil {
		t.Errorf("Build changed the caller's Config: %+v", g.Model)
	}
	want := c
	want.built = false
	want.EnsureDefaults()
	if err := want.Validate(); err != nil || string(mustYAML(t, &want)) != string(mustYAML(t, &c)) {
		t.Errorf("Build(Go) is not EnsureDefaults: %v\n%s\nwant\n%s", err, mustYAML(t, &c), mustYAML(t, &want))
	}
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte("train: {epochs: 5, batch_size: 64}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var o Overrides
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Bind(fs)
	if err := fs.Parse([]string{"-epochs", "7"}); err != nil {
		t.Fatal(err)
	}
	if c, err := Build(g, File(file), &o); err != nil || c.Train.Epochs != 7 || c.Train.BatchSize != 64 || c.Model.Kind != KindFM {
		t.Errorf("Build(Go, file, changes): %v, epochs %d batch %d kind %s; want 7, 64, fm", err, c.Train.Epochs, c.Train.BatchSize, c.Model.Kind)
	}
}
