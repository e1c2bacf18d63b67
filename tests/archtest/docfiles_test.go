package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// docFilesPending is TEMPORARY: the packages (directories from the
// module's root) whose doc.go does not yet hold a true "# Files" section,
// each with the reason. An entry must be removed once its package's doc.go
// is written (or the package is gone): the test fails for an entry whose
// package passes the check, so this list only shrinks. Do not add to it.
var docFilesPending = map[string]string{} // empty since issue 49 item 6: keep it so

// docPkg is what the file-list rule knows of one package: the files its
// doc.go must list and what the doc.go says.
type docPkg struct {
	files  []string // the non-test, non-generated .go files but doc.go; the _test.go files of a package with no other
	hasDoc bool     // the directory has a doc.go
	doc    string   // doc.go's package comment, as ast.CommentGroup.Text gives it
	isMain bool     // a command: no doc.go needed
}

// docItem is a line of a "# Files" section: "  - name.go: what it holds".
var docItem = regexp.MustCompile(`^\s+- (\S+\.go)(:\s+\S.*)?$`)

// docFileList returns the names a package comment's "# Files" section
// lists, whether it has the section, and its malformed lines (a list item
// without ": what it holds"). The section runs from its heading to the next
// heading or the end of the comment.
func docFileList(doc string) (names []string, found bool, bad []string) {
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "# ") {
			in = line == "# Files"
			found = found || in
			continue
		}
		if !in {
			continue
		}
		m := docItem.FindStringSubmatch(line)
		switch {
		case m == nil:
		case m[2] == "":
			bad = append(bad, strings.TrimSpace(line))
		default:
			names = append(names, m[1])
		}
	}
	return names, found, bad
}

// docFileProblems returns the rule's findings about pkgs (directory from the
// module's root to what is known of it): every non-main package has a
// doc.go whose "# Files" section names exactly its files, once each, unless
// pending lists it; an entry of pending whose package passes, or is gone,
// is a finding too.
func docFileProblems(pkgs map[string]docPkg, pending map[string]string) []string {
	var out []string
	for dir, p := range pkgs {
		if p.isMain {
			if pending[dir] != "" {
				out = append(out, fmt.Sprintf("docFilesPending lists %s, a command: remove the entry", dir))
			}
			continue
		}
		probs := docPkgProblems(dir, p)
		switch {
		case pending[dir] != "" && len(probs) == 0:
			out = append(out, fmt.Sprintf("docFilesPending lists %s, whose doc.go's file list is true: remove the entry", dir))
		case pending[dir] == "":
			out = append(out, probs...)
		}
	}
	for dir := range pending {
		if _, ok := pkgs[dir]; !ok {
			out = append(out, fmt.Sprintf("docFilesPending lists %s, which is gone: remove the entry", dir))
		}
	}
	sort.Strings(out)
	return out
}

// docPkgProblems returns what is wrong with the doc.go of the package in
// dir: missing, no "# Files" section (unless the package has no file to
// list: its code is all generated), malformed, missing or stale names.
func docPkgProblems(dir string, p docPkg) []string {
	if !p.hasDoc {
		return []string{fmt.Sprintf("%s has no doc.go: write one with the package doc and a # Files section", dir)}
	}
	names, found, bad := docFileList(p.doc)
	if !found && len(p.files) == 0 { // only generated code: nothing to list
		return nil
	}
	if !found {
		return []string{fmt.Sprintf("%s/doc.go has no \"# Files\" section in its package doc (see ARCHITECTURE.md)", dir)}
	}
	var out []string
	for _, line := range bad {
		out = append(out, fmt.Sprintf("%s/doc.go: %q says nothing of the file: write \"- name.go: what it holds\"", dir, line))
	}
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case seen[n]:
			out = append(out, fmt.Sprintf("%s/doc.go lists %s twice", dir, n))
		case !slices.Contains(p.files, n):
			out = append(out, fmt.Sprintf("%s/doc.go lists %s, which is not a hand-written file of the package: remove it", dir, n))
		}
		seen[n] = true
	}
	for _, f := range p.files {
		if !seen[f] {
			out = append(out, fmt.Sprintf("%s/doc.go does not list %s: add a line saying what it holds", dir, f))
		}
	}
	return out
}

// readDocPkgs returns what the file-list rule knows of every package of
// files (paths from the module's root, as goFiles gives them).
func readDocPkgs(t *testing.T, files []string) map[string]docPkg {
	t.Helper()
	pkgs := map[string]docPkg{}
	tests := map[string][]string{}
	for _, rel := range files {
		dir, name := path.Split(rel)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" {
			dir = "."
		}
		if strings.HasSuffix(name, "_test.go") {
			tests[dir] = append(tests[dir], name)
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		p := pkgs[dir]
		p.isMain = p.isMain || f.Name.Name == "main"
		switch {
		case name == "doc.go":
			p.hasDoc = true
			p.doc = f.Doc.Text()
		case strings.HasSuffix(name, ".pb.go") || ast.IsGenerated(f):
		default:
			p.files = append(p.files, name)
		}
		pkgs[dir] = p
	}
	for dir, p := range pkgs {
		if len(p.files) == 0 { // a package that is only its tests lists them
			p.files = tests[dir]
			pkgs[dir] = p
		}
	}
	return pkgs
}

func TestDocFileLists(t *testing.T) {
	pkgs := readDocPkgs(t, goFiles(t))
	if len(pkgs) < 10 {
		t.Fatalf("found %d packages: is root right?", len(pkgs))
	}
	for _, p := range docFileProblems(pkgs, docFilesPending) {
		t.Error(p)
	}
}

// TestDocFileListsCatchViolations feeds the file-list check synthetic
// package docs, so that a check that cannot fail is noticed.
func TestDocFileListsCatchViolations(t *testing.T) {
	doc := "Package p does things.\n\n# Files\n\n  - a.go: the A type\n  - b.go: the B type\n  - c.go\n\n# Other\n\n  - d.go: not in the section\n"
	names, found, bad := docFileList(doc)
	if !found || !slices.Equal(names, []string{"a.go", "b.go"}) || !slices.Equal(bad, []string{"- c.go"}) {
		t.Fatalf("docFileList = %q, %v, %q", names, found, bad)
	}
	if _, found, _ := docFileList("Package p.\n\nFiles:\n\n  - a.go: x\n"); found {
		t.Error("a \"Files:\" line taken for the # Files heading")
	}
	good := "Package p.\n\n# Files\n\n  - a.go: the A type\n  - b.go: the B type\n"
	pkgs := map[string]docPkg{
		"ok":       {files: []string{"a.go", "b.go"}, hasDoc: true, doc: good},
		"nodoc":    {files: []string{"a.go"}},
		"nosect":   {files: []string{"a.go"}, hasDoc: true, doc: "Package p.\n"},
		"missing":  {files: []string{"a.go", "b.go", "m.go"}, hasDoc: true, doc: good},
		"stale":    {files: []string{"a.go"}, hasDoc: true, doc: good},
		"twice":    {files: []string{"a.go", "b.go"}, hasDoc: true, doc: good + "  - a.go: again\n"},
		"bad":      {files: []string{"a.go", "b.go"}, hasDoc: true, doc: good + "  - c.go\n"},
		"cmd/x":    {files: []string{"main.go"}, isMain: true},
		"pend":     {files: []string{"a.go"}},
		"donepend": {files: []string{"a.go", "b.go"}, hasDoc: true, doc: good},
	}
	got := docFileProblems(pkgs, map[string]string{"pend": "r", "donepend": "r", "gone": "r", "cmd/x": "r"})
	want := []string{
		"bad/doc.go: \"- c.go\" says nothing",
		"docFilesPending lists cmd/x, a command",
		"docFilesPending lists donepend, whose doc.go's file list is true",
		"docFilesPending lists gone, which is gone",
		"missing/doc.go does not list m.go",
		"nodoc has no doc.go",
		"nosect/doc.go has no \"# Files\" section",
		"stale/doc.go lists b.go, which is not a hand-written file",
		"twice/doc.go lists a.go twice",
	}
	if !slices.EqualFunc(got, want, strings.HasPrefix) {
		t.Errorf("docFileProblems =\n%s\nwant lines starting\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
