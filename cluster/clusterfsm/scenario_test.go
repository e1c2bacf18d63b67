package clusterfsm

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// TestScenarios runs every script under testdata/ (see script_test.go for
// the format).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripts under testdata/")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := parseScript(string(src))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var r runner
			var out strings.Builder
			for _, b := range sc.blocks {
				got := r.run(b)
				if *rewrite {
					out.WriteString(b.pre + b.input + "----\n" + got + "\n")
					continue
				}
				if got != b.want {
					t.Errorf("%s:%d:\n%s----\ngot:\n%s\nwant:\n%s", file, b.line, b.input, got, b.want)
				}
			}
			if *rewrite {
				out.WriteString(sc.trailer)
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// FuzzParseScript checks that whatever parses formats back to the same
// commands, and that running it never panics.
func FuzzParseScript(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Add("new shards=2 workers=1 every=1m keep=2 snapshots=3,5 last-snapshot=9 last-version=4 no-initial-snapshot\n----\n")
	f.Add("new shards=2 adopt=4 adopt-shards=ams-1,ams-0 adopt-workers=worker-0,worker-1 adopt-left=worker-1 adopt-serving adopt-max-incarnation=9\n----\n" +
		"join ams-0#3 ams-1#9 worker-0#2; tick 0s\n----\n")
	f.Add("join ams/x#2 worker/ams-0 sched-1; expire ams-0\n----\nfoo\n\n# c\n")
	f.Add("restored ams-0 ams-1 snap-3 v2 fail; done snap-1 fail; tick -1h2m\n----\n")
	f.Fuzz(func(t *testing.T, src string) {
		sc, err := parseScript(src)
		if err != nil {
			return
		}
		text := formatScript(sc)
		sc2, err := parseScript(text)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, text)
		}
		if len(sc2.blocks) != len(sc.blocks) {
			t.Fatalf("%d blocks, reparsed %d\n%s", len(sc.blocks), len(sc2.blocks), text)
		}
		for i := range sc.blocks {
			a, b := sc.blocks[i], sc2.blocks[i]
			if !reflect.DeepEqual(a.cmds, b.cmds) || a.want != b.want {
				t.Fatalf("block %d changed:\n%#v\n%q\nreparsed:\n%#v\n%q", i, a.cmds, a.want, b.cmds, b.want)
			}
			for _, c := range a.cmds {
				if c.verb == "new" && c.opts.Shards > 64 {
					return // keep runs small
				}
			}
		}
		var r runner
		for _, b := range sc.blocks {
			r.run(b)
		}
	})
}
