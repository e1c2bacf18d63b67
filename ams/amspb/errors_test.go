package amspb_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// TestErrorTableCoversEverySentinel reads the sources of the AMS packages:
// every exported Err* variable must be declared in package ams and have
// an entry in the error table, named by its reason (and, for an
// errors.New sentinel, with its message), so that a new sentinel without
// an entry fails here.
func TestErrorTableCoversEverySentinel(t *testing.T) {
	byReason := map[string]amspb.ErrorCode{}
	for _, e := range amspb.Errors {
		byReason[e.Reason] = e
	}
	found := 0
	for _, dir := range []string{"..", ".", "../client", "../shard"} {
		for name, lit := range sentinels(t, dir) {
			if dir != ".." {
				t.Errorf("%s declares %s: declare the AMS packages' sentinels in package ams (ams/errors.go)", dir, name)
				continue
			}
			found++
			e, ok := byReason[reason(name)]
			switch {
			case !ok:
				t.Errorf("ams.%s has no entry in amspb.Errors (reason %s)", name, reason(name))
			case lit != "" && e.Err.Error() != lit:
				t.Errorf("the entry of reason %s is %q, but ams.%s is %q", e.Reason, e.Err, name, lit)
			}
		}
	}
	if found == 0 {
		t.Fatal("found no sentinel in package ams: is the test reading the right directories?")
	}
}

// TestErrorTableWellFormed: each sentinel and each reason once, a code
// that is an error's, and at most one bare entry per code.
func TestErrorTableWellFormed(t *testing.T) {
	reasons, bare := map[string]bool{}, map[codes.Code]bool{}
	for i, e := range amspb.Errors {
		if e.Err == nil || e.Code == codes.OK || e.Reason == "" {
			t.Errorf("entry %d is incomplete: %+v", i, e)
		}
		if reasons[e.Reason] {
			t.Errorf("reason %s twice", e.Reason)
		}
		reasons[e.Reason] = true
		if e.Bare && bare[e.Code] {
			t.Errorf("two bare entries for code %v", e.Code)
		}
		bare[e.Code] = bare[e.Code] || e.Bare
		for _, f := range amspb.Errors[:i] {
			if f.Err == e.Err {
				t.Errorf("%v twice", e.Err)
			}
		}
	}
}

// TestStatusRoundTrip turns each entry's sentinel, wrapped, into a status
// and back, without a network: the result matches the sentinel, keeps
// the message and carries the entry's code. A status the table does not
// know stays as it is.
func TestStatusRoundTrip(t *testing.T) {
	for _, e := range amspb.Errors {
		sent := fmt.Errorf("shard x: %w", e.Err)
		st := amspb.ToStatus(sent)
		if got := status.Code(st); got != e.Code {
			t.Errorf("%s: code %v, want %v", e.Reason, got, e.Code)
		}
		back := amspb.FromStatus(st)
		if !errors.Is(back, e.Err) || back.Error() != sent.Error() || status.Code(back) != e.Code {
			t.Errorf("%s: back as %q (code %v), want a match of %v with message %q", e.Reason, back, status.Code(back), e.Err, sent)
		}
	}
	other := status.Error(codes.Unimplemented, "no such method")
	if got := amspb.FromStatus(other); got != other {
		t.Errorf("FromStatus of a foreign status = %v, want it unchanged", got)
	}
	// A status of gRPC itself, naming no entry, is the bare entry of its
	// code: a message over the size limit is ams.ErrTooLarge, and thereby
	// ams.ErrBadRequest.
	big := status.Error(codes.ResourceExhausted, "grpc: received message larger than max (9 vs. 8)")
	if got := amspb.FromStatus(big); !errors.Is(got, ams.ErrTooLarge) || !errors.Is(got, ams.ErrBadRequest) || status.Code(got) != codes.ResourceExhausted {
		t.Errorf("FromStatus of gRPC's size refusal = %v (code %v), want ams.ErrTooLarge and ams.ErrBadRequest", got, status.Code(got))
	}
	plain := errors.New("plain")
	if got := amspb.FromStatus(plain); got != plain {
		t.Errorf("FromStatus of a plain error = %v, want it unchanged", got)
	}
	if got := status.Code(amspb.ToStatus(plain)); got != codes.Internal {
		t.Errorf("ToStatus of an unknown error: code %v, want Internal", got)
	}
}

// sentinels returns the exported Err* variables declared in the non-test
// files of dir, with the message of those made by errors.New("...").
func sentinels(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, file := range names {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Err") || !n.IsExported() || len(n.Name) == 3 || !unicode.IsUpper(rune(n.Name[3])) {
						continue
					}
					out[n.Name] = ""
					if i < len(vs.Values) {
						out[n.Name] = newMessage(vs.Values[i])
					}
				}
			}
		}
	}
	return out
}

// newMessage returns s of an expression errors.New("s"), else "".
func newMessage(x ast.Expr) string {
	call, ok := x.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "New" {
		return ""
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

// reason is the reason of sentinel name: ErrStaleVersion -> STALE_VERSION.
func reason(name string) string {
	var b strings.Builder
	for i, r := range strings.TrimPrefix(name, "Err") {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
