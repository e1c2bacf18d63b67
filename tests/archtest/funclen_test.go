package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function may have, counted from its
// func line to its closing brace (its doc comment not included).
const maxFuncLines = 80

// cmdLineLimit bounds the mains: the non-test files of a command's main
// package (cmd/X) total fewer lines than this (doc comment, imports and
// all). A command's library beneath it (cmd/X/internal/...) is no main.
const cmdLineLimit = 150

// funcExempt lists the functions that may stay over maxFuncLines, each
// with the reason, keyed "path:Func" (path from the module's root; Func is
// "Type.Method" for a method). Generated files are not checked at all.
var funcExempt = map[string]string{
	"densenet/gemm.go:kernel4x2": "GEMM micro-kernel: one unrolled register block, split it and the accumulators leave the registers",
}

// funcSplitting is TEMPORARY: the functions over maxFuncLines that are
// being split now, so that the rule holds for everything else meanwhile.
// An entry must be removed once its function is split (or gone): the test
// fails for an entry whose function no longer exceeds maxFuncLines, so
// this list only shrinks. Do not add to it.
var funcSplitting = map[string]string{} // empty since issue 19: keep it so

// cmdSplitting is TEMPORARY, like funcSplitting: cmd/ packages at or over
// cmdLineLimit that are being shrunk now.
var cmdSplitting = map[string]string{}

// goFiles returns the .go files of the module (paths under root, with
// '/'), tests included, skipping testdata, hidden and "_" directories and
// nested modules.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// funcName is "Func", or "Type.Method" for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) { // a generic type's parameters
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// longFuncs adds to long the functions of file path (its source src) over
// maxFuncLines lines, keyed "path:Func", with their lengths. Generated
// files (*.pb.go, or a "Code generated ... DO NOT EDIT." comment before
// the package clause) add nothing.
func longFuncs(long map[string]int, path string, src []byte) error {
	if strings.HasSuffix(path, ".pb.go") {
		return nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	if ast.IsGenerated(f) {
		return nil
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
			long[path+":"+funcName(fd)] = n
		}
	}
	return nil
}

// funcProblems returns the rule's findings about long (every function over
// maxFuncLines): each one neither exempt nor being split, and each entry
// of exempt or splitting whose function is no longer over the limit.
func funcProblems(long map[string]int, exempt, splitting map[string]string) []string {
	var out []string
	for key, n := range long {
		if exempt[key] == "" && splitting[key] == "" {
			out = append(out, fmt.Sprintf("%s is %d lines, over %d: split it into well-named functions", key, n, maxFuncLines))
		}
	}
	for _, list := range []struct {
		name    string
		entries map[string]string
	}{{"funcExempt", exempt}, {"funcSplitting", splitting}} {
		for key := range list.entries {
			if _, ok := long[key]; !ok {
				out = append(out, fmt.Sprintf("%s lists %s, which no longer exceeds %d lines (or is gone): remove the entry", list.name, key, maxFuncLines))
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestFunctionLength(t *testing.T) {
	long := map[string]int{}
	for _, path := range goFiles(t) {
		src, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if err := longFuncs(long, path, src); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range funcProblems(long, funcExempt, funcSplitting) {
		t.Error(p)
	}
}

// lineCount is the number of lines of src, as wc -l counts them when src
// ends in a newline.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// cmdProblems returns the rule's findings about lines (the total lines of
// each cmd/ package's non-test files): each package at or over
// cmdLineLimit that is not being shrunk, and each entry of splitting that
// is now under the limit or gone.
func cmdProblems(lines map[string]int, splitting map[string]string) []string {
	var out []string
	for pkg, n := range lines {
		if n >= cmdLineLimit && splitting[pkg] == "" {
			out = append(out, fmt.Sprintf("%s has %d lines of non-test Go, want fewer than %d: mains parse flags, wire and handle signals; move the logic to its package", pkg, n, cmdLineLimit))
		}
	}
	for pkg := range splitting {
		if n, ok := lines[pkg]; !ok || n < cmdLineLimit {
			out = append(out, fmt.Sprintf("cmdSplitting lists %s, which has %d lines now, fewer than %d (or is gone): remove the entry", pkg, n, cmdLineLimit))
		}
	}
	sort.Strings(out)
	return out
}

// isMain reports whether file path (from the module's root) is of a
// command's main package, cmd/X: a command's library beneath it
// (cmd/X/internal/...) is no main and the other rules hold it.
func isMain(path string) bool {
	dir := filepath.ToSlash(filepath.Dir(path))
	return strings.HasPrefix(dir, "cmd/") && strings.Count(dir, "/") == 1
}

func TestCmdSize(t *testing.T) {
	lines := map[string]int{}
	for _, path := range goFiles(t) {
		if !isMain(path) || strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		lines[filepath.ToSlash(filepath.Dir(path))] += lineCount(src)
	}
	if len(lines) == 0 {
		t.Fatal("no cmd/ packages found")
	}
	for _, p := range cmdProblems(lines, cmdSplitting) {
		t.Error(p)
	}
}

// TestSizeRulesCatchViolations feeds the size checks synthetic sources and
// counts, so that a check that cannot fail is noticed.
func TestSizeRulesCatchViolations(t *testing.T) {
	body := func(name string, lines int) string { // a function of that many lines
		return "func " + name + " {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	src := "package p\n\ntype T[E any] struct{}\n\n" +
		body("(t *T[E]) Long()", maxFuncLines+1) + body("Limit()", maxFuncLines) + body("Listed()", maxFuncLines+5) +
		body("Exempt()", maxFuncLines+2) + body("Short()", 3)
	long := map[string]int{}
	if err := longFuncs(long, "x/p.go", []byte(src)); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"x/p.go:T.Long": maxFuncLines + 1, "x/p.go:Listed": maxFuncLines + 5, "x/p.go:Exempt": maxFuncLines + 2}
	if fmt.Sprint(long) != fmt.Sprint(want) {
		t.Fatalf("longFuncs = %v, want %v", long, want)
	}
	gen := "// Code generated by hand-test. DO NOT EDIT.\n\n" + src
	if err := longFuncs(long, "x/gen.go", []byte(gen)); err != nil || len(long) != len(want) {
		t.Fatalf("a generated file was checked: %v, %v", long, err)
	}
	if err := longFuncs(long, "x/p.pb.go", []byte(src)); err != nil || len(long) != len(want) {
		t.Fatalf("a .pb.go file was checked: %v, %v", long, err)
	}
	got := funcProblems(long, map[string]string{"x/p.go:Exempt": "r"},
		map[string]string{"x/p.go:Listed": "r", "x/p.go:Limit": "r", "x/gone.go:F": "r"})
	wantProblems := []string{"funcSplitting lists x/gone.go:F", "funcSplitting lists x/p.go:Limit", "x/p.go:T.Long is 81 lines"}
	if len(got) != len(wantProblems) {
		t.Fatalf("funcProblems = %q, want %d problems starting %q", got, len(wantProblems), wantProblems)
	}
	for i, w := range wantProblems {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d = %q, want it to start %q", i, got[i], w)
		}
	}
	if got := funcProblems(map[string]int{}, map[string]string{"x/p.go:Exempt": "r"}, nil); len(got) != 1 {
		t.Errorf("a stale exemption is not reported: %q", got)
	}
	if !isMain("cmd/ams/main.go") || isMain("cmd/pullbench/internal/pullbench/pullbench.go") || isMain("cmdx/a.go") {
		t.Error("isMain takes a command's library for its main, or misses a main")
	}
	if n := lineCount([]byte("a\nb\n")); n != 2 || lineCount([]byte("a\nb")) != 2 {
		t.Errorf("lineCount = %d", n)
	}
	cmd := cmdProblems(map[string]int{"cmd/a": cmdLineLimit, "cmd/b": cmdLineLimit - 1, "cmd/c": 400, "cmd/d": 10},
		map[string]string{"cmd/c": "r", "cmd/d": "r", "cmd/gone": "r"})
	if !slices.EqualFunc(cmd, []string{"cmd/a has", "cmdSplitting lists cmd/d", "cmdSplitting lists cmd/gone"}, strings.HasPrefix) {
		t.Errorf("cmdProblems = %q", cmd)
	}
}
