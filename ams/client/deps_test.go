package client_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoShardImport checks the dependency rule that the client never
// imports the shard (server) package, directly or through another package
// of the module: it follows the imports of the non-test files of every
// package of the module that the client reaches (all build tags at once).
func TestNoShardImport(t *testing.T) {
	root, module := moduleRoot(t)
	const self, banned = "/ams/client", "/ams/shard"
	seen := map[string]string{module + self: ""} // package -> an importer
	queue := []string{module + self}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, imp := range imports(t, filepath.Join(root, strings.TrimPrefix(pkg, module))) {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if _, ok := seen[imp]; ok {
				continue
			}
			seen[imp] = pkg
			if imp == module+banned {
				chain := imp
				for p := pkg; p != ""; p = seen[p] {
					chain = p + " -> " + chain
				}
				t.Fatalf("the client imports the shard: %s", chain)
			}
			queue = append(queue, imp)
		}
	}
}

// moduleRoot returns the directory of go.mod above the test's directory
// and the module path it declares.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.TrimSpace(rest)
				}
			}
			t.Fatalf("%s/go.mod declares no module", dir)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// imports returns the import paths of the non-test Go files in dir.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Imports {
			p, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}
