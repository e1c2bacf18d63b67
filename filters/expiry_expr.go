package filters

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// exprEnv is the environment of an expiry expression: the statistics of
// one row (RowStats, widened to expr's int and float).
type exprEnv struct {
	Hits        int           `expr:"hits"`
	Age         time.Duration `expr:"age"`
	IdleSamples int           `expr:"idle_samples"`
	Norm        float64       `expr:"norm"`
}

// The expiry expression's variables, as ExpirySpec.Expr names them.
const (
	varHits        = "hits"
	varAge         = "age"
	varIdleSamples = "idle_samples"
	varNorm        = "norm"
)

// clockBuiltins are expr's builtins that read the wall clock or the
// time zone database. They are disabled: an expression is a pure function
// of the row's statistics (expiry invariant 2), and age is the row's
// wall-clock age already.
var clockBuiltins = []string{"now", "date", "timezone"}

// exprProgram is a compiled expiry expression.
type exprProgram struct {
	prog *vm.Program
	// norm tells that the expression names the norm variable.
	norm bool
}

// compileExpr compiles an expiry expression: it must type-check to bool
// over exprEnv. A string literal compared with a duration (age > "72h")
// and the argument of duration("72h") must be durations that parseAge
// accepts; they become duration constants at compile time, so a malformed
// one is a compile error, never a run-time one.
func compileExpr(src string) (exprProgram, error) {
	p := &durationPatch{src: src}
	opts := []expr.Option{expr.Env(exprEnv{}), expr.AsBool(), expr.Patch(p)}
	for _, name := range clockBuiltins {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	prog, err := expr.Compile(src, opts...)
	if p.err != nil {
		// Reported first: a literal left unpatched also fails the type
		// check, with a less helpful message.
		return exprProgram{}, p.err
	}
	if err != nil {
		return exprProgram{}, err
	}
	return exprProgram{prog: prog, norm: p.norm}, nil
}

// durationPatch is an expr patcher (a visitor run after a first type
// check, so that nodes carry their types). It turns each string literal
// compared with a duration, and each duration("...") call, into a
// time.Duration constant, keeping the first malformed one as err. It notes
// whether the expression names norm.
type durationPatch struct {
	src  string
	err  error
	norm bool
}

// Visit implements ast.Visitor. ast.Walk visits children first, so
// duration("72h") is a constant by the time its comparison is visited.
func (p *durationPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == varNorm {
			p.norm = true
		}
	case *ast.BuiltinNode:
		if n.Name != "duration" {
			return
		}
		lit, ok := singleString(n.Arguments)
		if !ok {
			p.fail(n.Location(), `duration takes one string literal, as duration("72h")`)
			return
		}
		p.literal(node, lit)
	case *ast.BinaryNode:
		if !isComparison(n.Operator) {
			return
		}
		if lit, ok := n.Right.(*ast.StringNode); ok && isDuration(n.Left) {
			p.literal(&n.Right, lit)
		} else if lit, ok := n.Left.(*ast.StringNode); ok && isDuration(n.Right) {
			p.literal(&n.Left, lit)
		}
	}
}

// literal replaces the node holding lit with its duration, or records
// the parse error.
func (p *durationPatch) literal(node *ast.Node, lit *ast.StringNode) {
	d, err := parseAge(lit.Value)
	if err != nil {
		p.fail(lit.Location(), err.Error())
		return
	}
	ast.Patch(node, &ast.ConstantNode{Value: d})
}

// fail keeps the first problem, located in the source as expr's own
// errors are.
func (p *durationPatch) fail(loc file.Location, msg string) {
	if p.err == nil {
		p.err = (&file.Error{Location: loc, Message: msg}).Bind(file.NewSource(p.src))
	}
}

// singleString returns the literal of a one-argument list holding a
// string literal.
func singleString(args []ast.Node) (*ast.StringNode, bool) {
	if len(args) != 1 {
		return nil, false
	}
	s, ok := args[0].(*ast.StringNode)
	return s, ok
}

func isComparison(op string) bool {
	switch op {
	case "<", "<=", ">", ">=", "==", "!=":
		return true
	}
	return false
}

// isDuration tells whether a checked node is a time.Duration: the age
// variable, a duration constant this patch made (it has no type until the
// next check), or a node the check typed so.
func isDuration(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		if n.Value == varAge {
			return true
		}
	case *ast.ConstantNode:
		_, ok := n.Value.(time.Duration)
		return ok
	}
	return n.Type() == durationType
}

var durationType = reflect.TypeOf(time.Duration(0))

// parseAge parses a duration in Go's syntax (time.ParseDuration: "72h",
// "90m", "1h30m") that may begin with a number of days: "7d", "1.5d",
// "1d12h". It accepts negative durations (the caller refuses them).
func parseAge(s string) (time.Duration, error) {
	body, neg := strings.CutPrefix(s, "-")
	if !neg {
		body, _ = strings.CutPrefix(body, "+")
	}
	daysText, rest, ok := strings.Cut(body, "d")
	if !ok {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (Go's syntax, as \"72h\" or \"90m\", or days, as \"7d\")", s)
		}
		return d, nil
	}
	bad := fmt.Errorf("%q is not a duration (days are a number before d, as \"7d\", \"1.5d\" or \"1d12h\")", s)
	if daysText == "" || strings.Trim(daysText, "0123456789.") != "" {
		return 0, bad
	}
	days, err := strconv.ParseFloat(daysText, 64)
	if err != nil || days*24*float64(time.Hour) >= 1<<63 {
		return 0, bad
	}
	d := time.Duration(days * 24 * float64(time.Hour))
	if rest != "" {
		if strings.Trim(rest[:1], "0123456789.") != "" {
			return 0, bad // a second sign
		}
		r, err := time.ParseDuration(rest)
		if err != nil || r > 1<<63-1-d {
			return 0, bad
		}
		d += r
	}
	if neg {
		d = -d
	}
	return d, nil
}
