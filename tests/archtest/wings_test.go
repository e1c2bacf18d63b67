package archtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The wings of the house (issue 49): internal/ holds what the commands
// share (flags, logging, signals) and no public package imports it; tests/ is the testing wing (test servers,
// fakes, helpers and the tests of the whole); cmd/ the commands, each
// with its own library beneath it (cmd/X/internal/) when it has one;
// everything else is public.

// public reports whether pkg is a public package: under neither
// internal/, cmd/ nor tests/.
func public(pkg string) bool {
	return !under(pkg, "internal") && !under(pkg, "cmd") && !under(pkg, "tests")
}

// testsImporters lists the packages outside tests/ whose non-test files
// import the testing wing ("from -> to"): the test servers' own
// commands. Test files import it freely; nothing else does.
var testsImporters = []string{
	"cmd/hdfsd -> tests/hdfstest",
	"cmd/kafkad -> tests/kafkatest",
}

// wingViolations lists how g breaks the rules of the wings: any arrow
// from a public package into internal/ (a public package is built on
// public ones only, so that a program outside the module can do what it
// does), an arrow from a package outside tests/ into tests/ not in
// intoTests, and each entry of intoTests that g no longer has.
func wingViolations(g graph, intoTests []string) []string {
	var out []string
	seen := map[string]bool{}
	for pkg, imports := range g {
		for _, im := range imports {
			to, ok := local(im)
			if !ok {
				continue
			}
			arrow := pkg + " -> " + to
			switch {
			case public(pkg) && under(to, "internal"):
				out = append(out, fmt.Sprintf("%s: a public package imports internal/, an arrow back up (a public package is built on public ones only)", arrow))
			case !under(pkg, "tests") && under(to, "tests"):
				seen[arrow] = true
				if !slices.Contains(intoTests, arrow) {
					out = append(out, fmt.Sprintf("%s: only test files and the test servers' commands import the testing wing", arrow))
				}
			}
		}
	}
	for _, arrow := range intoTests {
		if !seen[arrow] {
			out = append(out, fmt.Sprintf("testsImporters lists %s, which no package has any more: remove the entry", arrow))
		}
	}
	slices.Sort(out)
	return out
}

func TestWings(t *testing.T) {
	for _, v := range wingViolations(loadGraph(t), testsImporters) {
		t.Error(v)
	}
}

// maxInternalShare is the largest share of the house's non-generated Go
// lines that may lie under the top-level internal/ (issue 49; it was 38%
// before the wings): what leaves it goes beside its one command, to the
// testing wing or to its public home, never to a new name for the same
// bag.
const maxInternalShare = 0.25

// generatedLine marks a generated Go file when it comes before the
// package clause (go generate's convention).
var generatedLine = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// generated reports whether the Go file at path is generated: a .pb.go
// file, or one marked so before its package clause.
func generated(t *testing.T, path string) bool {
	t.Helper()
	if strings.HasSuffix(path, ".pb.go") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if generatedLine.MatchString(line) {
			return true
		}
		if strings.HasPrefix(line, "package ") {
			break
		}
	}
	return false
}

// houseLines counts the lines of the non-generated Go files of the house
// (every .go file under root but in hidden directories: nested modules
// and testdata included, as `git ls-files '*.go'` lists them in a clean
// checkout) and of those under the top-level internal/.
func houseLines(t *testing.T) (internal, all int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || generated(t, path) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := lineCount(src)
		all += n
		if rel, _ := filepath.Rel(root, path); under(filepath.ToSlash(rel), "internal") {
			internal += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return internal, all
}

// TestInternalShare holds the top-level internal/ to maxInternalShare of
// the house's non-generated Go lines, and prints the figure.
func TestInternalShare(t *testing.T) {
	internal, all := houseLines(t)
	if all == 0 {
		t.Fatal("no Go lines found")
	}
	share := float64(internal) / float64(all)
	t.Logf("internal/ holds %d of the house's %d non-generated Go lines: %.2f%% (at most %.0f%%)", internal, all, 100*share, 100*maxInternalShare)
	if share > maxInternalShare {
		t.Errorf("internal/ holds %d of %d non-generated Go lines, %.2f%%, over %.0f%%: sort what is no runtime part of the module out of it (beside its one command, to tests/, or to its public home)",
			internal, all, 100*share, 100*maxInternalShare)
	}
}

// TestWingRulesCatchViolations feeds wingViolations a graph that breaks
// each rule once, so that a check that cannot fail is noticed.
func TestWingRulesCatchViolations(t *testing.T) {
	if !public("reader/synth/datagen") || !public(".") || public("internal/x") || public("cmd/x/internal/y") || public("tests/e2e") {
		t.Fatal("public")
	}
	bad := graph{
		"reader":           {module + "/internal/hashmix", module + "/internal/new", "math"},
		"cmd/hdfsd":        {module + "/tests/hdfstest"},
		"cmd/serve":        {module + "/tests/testutil", module + "/internal/cli"},
		"job/ctrtrain":     {module + "/tests/testutil"},
		"tests/e2e":        {module + "/internal/worker", module + "/tests/testutil"},
		"cmd/x/internal/y": {module + "/internal/hashmix"},
	}
	got := wingViolations(bad, []string{"cmd/hdfsd -> tests/hdfstest", "cmd/kafkad -> tests/kafkatest"})
	want := []string{
		"cmd/serve -> tests/testutil: only test files",
		"job/ctrtrain -> tests/testutil: only test files",
		"reader -> internal/hashmix: a public package imports internal/",
		"reader -> internal/new: a public package imports internal/",
		"testsImporters lists cmd/kafkad -> tests/kafkatest",
	}
	if !slices.EqualFunc(got, want, strings.HasPrefix) {
		t.Errorf("wingViolations = %q, want problems starting %q", got, want)
	}
	if v := wingViolations(graph{"reader": {module + "/model/hashmix"}, "cmd/ams": {module + "/internal/cli"}}, nil); v != nil {
		t.Errorf("wingViolations of a graph within the rules: %q", v)
	}
	dir := t.TempDir()
	files := map[string]string{
		"gen.go":  "// Code generated by x. DO NOT EDIT.\n\npackage p\n",
		"hand.go": "package p\n\n// Code generated by x. DO NOT EDIT.\n", // after the clause: no mark
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !generated(t, filepath.Join(dir, "gen.go")) || generated(t, filepath.Join(dir, "hand.go")) || !generated(t, filepath.Join(dir, "x.pb.go")) {
		t.Error("generated misjudges a file")
	}
}
