package archtest

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/xdlgo/xps"

// root is the module's directory, from this package's.
const root = "../.."

// graph maps each package of the module (its path under the module, "."
// for none) to the import paths of its non-test files.
type graph map[string][]string

// loadGraph parses the imports of every non-test .go file of the module
// (goFiles: testdata, hidden directories and nested modules skipped).
func loadGraph(t *testing.T) graph {
	t.Helper()
	g := graph{}
	fset := token.NewFileSet()
	for _, rel := range goFiles(t) {
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		pkg := path.Dir(rel)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !slices.Contains(g[pkg], p) {
				g[pkg] = append(g[pkg], p)
			}
		}
		if _, ok := g[pkg]; !ok {
			g[pkg] = nil
		}
	}
	return g
}

// local returns the package path under the module of import path p, and
// false for imports from outside the module.
func local(p string) (string, bool) {
	if p == module {
		return ".", true
	}
	rest, ok := strings.CutPrefix(p, module+"/")
	return rest, ok
}

var row = regexp.MustCompile("^\\| *([0-9]+) *\\| *`([^`]+)` *\\| *(.+?) *\\|$")

// loadLayers reads the table of ARCHITECTURE.md.
func loadLayers(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layers := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if _, dup := layers[m[2]]; dup {
			t.Errorf("ARCHITECTURE.md lists %s twice", m[2])
		}
		if strings.TrimSpace(m[3]) == "" {
			t.Errorf("ARCHITECTURE.md: %s has no sentence", m[2])
		}
		layers[m[2]] = n
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(layers) == 0 {
		t.Fatal("ARCHITECTURE.md has no layer table")
	}
	return layers
}

func TestEveryPackageListed(t *testing.T) {
	g, layers := loadGraph(t), loadLayers(t)
	for pkg := range g {
		if _, ok := layers[pkg]; !ok {
			t.Errorf("package %s is not in ARCHITECTURE.md's table: give it a layer and a sentence", pkg)
		}
	}
	for pkg := range layers {
		if _, ok := g[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md lists %s, which has no Go files", pkg)
		}
	}
}

func TestNoImportUp(t *testing.T) {
	g, layers := loadGraph(t), loadLayers(t)
	for pkg, imports := range g {
		from, ok := layers[pkg]
		if !ok {
			continue // TestEveryPackageListed reports it
		}
		for _, p := range imports {
			to, ok := local(p)
			if !ok {
				continue
			}
			if l, ok := layers[to]; ok && l > from {
				t.Errorf("%s (layer %d) imports %s (layer %d)", pkg, from, to, l)
			}
		}
	}
}

// deps returns every package of the module that pkg links, pkg included.
func (g graph) deps(pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, im := range g[p] {
			if l, ok := local(im); ok {
				walk(l)
			}
		}
	}
	walk(pkg)
	return seen
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// commandLibrary reports whether package to is a library of a command
// (cmd/X/internal/...) and pkg is of that command's tree (cmd/X, or
// another of its libraries): a tool's library used by its one command
// lives beside it, and Go lets nothing else import it.
func commandLibrary(pkg, to string) bool {
	parts := strings.Split(to, "/")
	if len(parts) < 4 || parts[0] != "cmd" || parts[2] != "internal" {
		return false
	}
	return under(pkg, "cmd/"+parts[1])
}

func TestDesignRules(t *testing.T) {
	g := loadGraph(t)
	for pkg, imports := range g {
		for _, p := range imports {
			to, isLocal := local(p)
			switch {
			case under(pkg, "ams") && isLocal && (under(to, "reader") || under(to, "compress") || under(to, "sparsenet") || under(to, "densenet")):
				t.Errorf("%s imports the worker side (%s): ams talks to workers only through its protocol", pkg, to)
			case under(pkg, "sparsenet") && isLocal && under(to, "ams"):
				t.Errorf("%s imports %s: the worker's layers share the update rules of model/optim, not the table core", pkg, to)
			case pkg == "snapshot" && isLocal && under(to, "ams"):
				t.Errorf("snapshot imports %s: snapshot defines formats and stores and never imports ams", to)
			case pkg == "densenet" && (isLocal || strings.Contains(p, "grpc") || strings.Contains(p, "etcd")):
				t.Errorf("densenet imports %s: it is math only", p)
			case pkg == "filters" && (isLocal && to != "model/hashmix" || strings.Contains(p, "grpc") ||
				strings.Contains(p, "etcd") || p == "os" || p == "io/fs" || p == "net" || strings.HasPrefix(p, "net/")):
				t.Errorf("filters imports %s: admission is pure logic, without RPC, etcd or files", p)
			case isLocal && under(to, "cmd") && !commandLibrary(pkg, to):
				t.Errorf("%s imports the command %s", pkg, to)
			}
		}
	}
	for p := range g.deps("cmd/ams") {
		if under(p, "reader") {
			t.Errorf("cmd/ams links %s: the AMS binary must not link the sample reader", p)
		}
	}
	if g.deps("ams/client")["ams/shard"] {
		t.Errorf("ams/client reaches ams/shard: the client never imports the shard (server) package; in-process calls go through an interface the client defines")
	}
}

// servePkgs are the packages of the prediction server: its library and
// its binary.
var servePkgs = []string{"serve", "cmd/serve"}

// serveForbidden are the packages of the module that the prediction
// server must not link (serve depends on the model, the export format and
// its protocol only): the job lifecycle and everything under it, the two
// trainers (job/ctrtrain, job/xctrain) included.
var serveForbidden = []string{"job"}

// serveForbiddenExternal are the import path prefixes of outside modules
// the prediction server must not link: etcd (its client) and Kafka.
var serveForbiddenExternal = []string{"go.etcd.io/etcd/", "github.com/segmentio/kafka-go"}

// serveViolations lists how the packages of servePkgs break the serving
// rule: a package of serveForbidden among their dependencies in the
// module, or a package of theirs importing an outside package of
// serveForbiddenExternal. Outside modules are not followed: an etcd or
// Kafka import reaches the server through a package of the module.
func serveViolations(g graph) []string {
	var out []string
	for _, root := range servePkgs {
		for p := range g.deps(root) {
			for _, f := range serveForbidden {
				if under(p, f) {
					out = append(out, fmt.Sprintf("%s links %s: the prediction server never links the job lifecycle or a trainer", root, p))
				}
			}
			for _, im := range g[p] {
				for _, f := range serveForbiddenExternal {
					if strings.HasPrefix(im, f) {
						out = append(out, fmt.Sprintf("%s links %s (imported by %s): the prediction server never links etcd or Kafka", root, im, p))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// modelViolations lists how the model floor (model/...) breaks its rule:
// a package of it imports internal/ (public packages never import back
// up into it) or reaches a trainer, the job lifecycle or package xps.
func modelViolations(g graph) []string {
	var out []string
	for pkg, imports := range g {
		if !under(pkg, "model") {
			continue
		}
		for _, im := range imports {
			if to, ok := local(im); ok && under(to, "internal") {
				out = append(out, fmt.Sprintf("%s imports %s: the model floor is public and never imports internal/", pkg, to))
			}
		}
		for p := range g.deps(pkg) {
			if p == "." || under(p, "job") { // the lifecycle and the trainers under it
				out = append(out, fmt.Sprintf("%s reaches %s: the model never depends on a trainer or the job lifecycle", pkg, p))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestServeAndModelRules enforces the rules of the model floor and the
// prediction server (serveViolations, modelViolations).
func TestServeAndModelRules(t *testing.T) {
	g := loadGraph(t)
	for _, v := range serveViolations(g) {
		t.Error(v)
	}
	for _, v := range modelViolations(g) {
		t.Error(v)
	}
	if _, ok := g["model/ctr"]; !ok {
		t.Error("no package model/ctr: the rule of the model floor checks nothing")
	}
}

// TestRulesCatchViolations feeds the checks a graph that breaks each rule
// once, so that a check that cannot fail is noticed.
func TestRulesCatchViolations(t *testing.T) {
	g := graph{"cmd/ams": {module + "/internal/x"}, "internal/x": {module + "/reader"}, "reader": nil}
	if !g.deps("cmd/ams")["reader"] {
		t.Fatal("deps misses a transitive import")
	}
	if to, ok := local(module + "/ams/shard"); !ok || to != "ams/shard" {
		t.Fatalf("local = %q, %v", to, ok)
	}
	if _, ok := local("github.com/xdlgo/xpsother/x"); ok {
		t.Fatal("local took another module's path for ours")
	}
	if !under("ams/client", "ams") || under("amsx", "ams") {
		t.Fatal("under")
	}
	for _, c := range []struct {
		pkg, to string
		ok      bool
	}{
		{"cmd/pullbench", "cmd/pullbench/internal/pullbench", true},
		{"cmd/pullbench/internal/x", "cmd/pullbench/internal/pullbench", true},
		{"cmd/serve", "cmd/pullbench/internal/pullbench", false}, // another command's library
		{"serve", "cmd/pullbench/internal/pullbench", false},
		{"cmd/pullbenchx", "cmd/pullbench/internal/pullbench", false},
		{"cmd/serve", "cmd/pullbench", false}, // a main
	} {
		if got := commandLibrary(c.pkg, c.to); got != c.ok {
			t.Errorf("commandLibrary(%s, %s) = %v", c.pkg, c.to, got)
		}
	}
	if m := row.FindStringSubmatch("| 3 | `cluster/controlplane` | the control plane |"); m == nil || m[2] != "cluster/controlplane" {
		t.Fatalf("row does not parse a table line: %v", m)
	}
	bad := graph{
		"cmd/serve": {module + "/serve"}, "serve": {module + "/model/ctr", module + "/internal/x"},
		"internal/x": {module + "/job", "go.etcd.io/etcd/client/v3"}, "job": {"github.com/segmentio/kafka-go"},
		"model/ctr": {module + "/job/ctrtrain", module + "/internal/x"}, "job/ctrtrain": nil,
	}
	if v := serveViolations(bad); len(v) != 8 { // job, job/ctrtrain (through model/ctr), etcd, kafka-go; from serve and from cmd/serve
		t.Fatalf("serveViolations of a server linking job, a trainer, etcd and Kafka: %q", v)
	}
	if v := modelViolations(bad); len(v) != 3 { // imports internal/, reaches the trainer and the lifecycle
		t.Fatalf("modelViolations of a model importing the trainer: %q", v)
	}
	if v := serveViolations(graph{"cmd/serve": {module + "/serve"}, "serve": {module + "/model/ctr"}, "model/ctr": {"math"}}); v != nil {
		t.Fatalf("serveViolations of a clean server: %q", v)
	}
}
