package config

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// TestWide: the wide part is on for fm, deepfm and wdl unless told off,
// given by flags or a file alike, with its dim-1 table added; bad
// combinations are refused with messages naming them.
func TestWide(t *testing.T) {
	load := func(args ...string) (Config, error) {
		var o Overrides
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return Build(&o)
	}
	for kind, wide := range map[string]bool{KindMLP: false, KindLR: false, KindFM: true, KindDeepFM: true, KindWDL: true, KindDCNv2: false} {
		c, err := load("-set", "model.kind="+kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		i := c.Model.TableIndex(WideTable)
		if c.Model.HasWide() != wide || (i >= 0) != wide || wide && (c.Model.Tables[i].Dim != 1 || c.Model.Tables[i].Optimizer != c.Model.Tables[0].Optimizer) {
			t.Errorf("%s: wide %v, tables %+v", kind, c.Model.HasWide(), c.Model.Tables)
		}
	}
	if c, err := load("-set", "model.kind=deepfm", "-set", "model.wide=false"); err != nil || c.Model.HasWide() || c.Model.TableIndex(WideTable) >= 0 {
		t.Errorf("deepfm without the wide part: %v, %+v", err, c.Model.Tables)
	}
	if c, err := Parse([]byte("model: {kind: fm}\n")); err != nil || !c.Model.HasWide() {
		t.Errorf("a file's fm: %v, wide %v", err, c.Model.HasWide())
	}
	// A file's kind overridden by a flag: the wide part follows the flag's
	// kind, unless the file or a flag says otherwise.
	dir := t.TempDir()
	for body, want := range map[string]bool{"model: {hidden: [8]}\n": true, "model: {hidden: [8], wide: false}\n": false} {
		path := dir + "/job.yaml"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		var o Overrides
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.Bind(fs)
		if err := fs.Parse([]string{"-set", "model.kind=deepfm"}); err != nil {
			t.Fatal(err)
		}
		c, err := Build(File(path), &o)
		if err != nil || c.Model.HasWide() != want {
			t.Errorf("file %q with -set model.kind=deepfm: %v, wide %v, want %v", body, err, c.Model.HasWide(), want)
		}
	}
	for args, want := range map[string]string{
		"model.kind=wdl model.wide=false": "Wide & Deep is the MLP plus the wide part",
		"model.kind=lr model.wide=true":   "logistic regression is the wide part itself",
	} {
		var flags []string
		for _, kv := range strings.Fields(args) {
			flags = append(flags, "-set", kv)
		}
		if _, err := load(flags...); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	if _, err := Parse([]byte("model:\n  kind: wdl\n  tables: [{name: emb, dim: 8}, {name: wide, dim: 2}]\n")); err == nil ||
		!strings.Contains(err.Error(), "need dim 1") {
		t.Errorf("a wide table of dim 2: %v", err)
	}
}
