package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sleepAllowed lists the test functions that may call time.Sleep, keyed
// "path:Func" as funcExempt is, each with its reason (issue 51: a test
// waits for what it can observe, by progress or a hook, never by a guess
// of how long something takes on this machine). A reason is one of:
//   - poll: the sleep paces a loop that checks an observable condition
//     until a deadline (testutil.Eventually is the one to use in new code);
//   - pace: the sleep spreads load the test produces (messages into a
//     topic) so that the code under test sees it arrive over time; the
//     test's verdict does not depend on the pace;
//   - model: the sleep is part of what the test plays (a supervisor's
//     restart delay);
//   - negative: the test checks that something does NOT happen within a
//     while, which no event can show.
//
// The test fails for a call outside the list and for an entry whose
// function no longer sleeps, so the list only shrinks.
var sleepAllowed = map[string]string{
	"tests/testutil/testutil.go:Eventually":                                  "poll: the poll every other test uses",
	"tests/testutil/testutil.go:Reaches":                                     "poll: a count until it stops moving (no fixed deadline)",
	"reader/kafkasrc/source_test.go:TestStreamingKeepsUpAndLagReturnsToZero": "pace: messages produced while the source reads",
	"cluster/membership/membership_test.go:TestKeep":                         "poll: until registered again, 30 s deadline",
	"job/ctrtrain/kafka_test.go:TestKafkaStreaming":                          "pace and poll: messages produced while the job reads; positions polled until a deadline",
	"job/ctrtrain/gate_test.go:waitLiveApplied":                              "poll: the checkpoints' applied counts, 1 m deadline",
	"cluster/scheduler/exports_test.go:TestExportEverySamples":               "pace: applied counts grow between the scheduler's ticks",
	"cluster/scheduler/election_test.go:TestStandbyTakesOver":                "negative: the standby stays a standby while the leader lives",
	"internal/cli/cli_test.go:TestReadyUntilSignal":                          "poll: /readyz after the signal",
	"tests/e2e/fault_test.go:faultCluster.supervise":                         "model: a supervisor's restart delay",
	"tests/e2e/fault_test.go:faultJob.waitFor":                               "poll: a cluster condition, with a deadline",
	"tests/e2e/prometheus_test.go:waitQuery":                                 "poll: PromQL until a positive answer",
	"tests/e2e/readme_test.go:walkthrough.waitOutput":                        "poll: a process's output",
	"tests/e2e/readme_test.go:walkthrough.waitHTTP":                          "poll: /healthz",
	"tests/e2e/recovery_bench_test.go:recCluster.awaitPush":                  "poll: a push seen in etcd, with a deadline",
	"tests/e2e/recovery_bench_test.go:recProc.awaitFunc":                     "poll: a process's output",
	"tests/e2e/recovery_bench_test.go:recWatch.await":                        "poll: etcd's events",
}

// sleepCalls adds to calls the time.Sleep calls of file path (source
// src), counted per enclosing function, keyed "path:Func".
func sleepCalls(calls map[string]int, path string, src []byte) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sleep" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" {
					calls[path+":"+funcName(fd)]++
				}
			}
			return true
		})
	}
	return nil
}

// sleepProblems returns the rule's findings: calls outside allowed, and
// entries of allowed whose function no longer sleeps.
func sleepProblems(calls map[string]int, allowed map[string]string) []string {
	var out []string
	for k, n := range calls {
		if _, ok := allowed[k]; !ok {
			out = append(out, fmt.Sprintf("%s calls time.Sleep %d times: wait for what the test can observe (testutil.Eventually, a hook, progress), or list it in sleepAllowed with its reason", k, n))
		}
	}
	for k := range allowed {
		if calls[k] == 0 {
			out = append(out, fmt.Sprintf("sleepAllowed lists %s, which no longer calls time.Sleep: remove the entry", k))
		}
	}
	slices.Sort(out)
	return out
}

// TestNoSleepInTests holds the rule of sleepAllowed over every test file
// of the module and the test helpers of tests/testutil.
func TestNoSleepInTests(t *testing.T) {
	calls := map[string]int{}
	for _, rel := range goFiles(t) {
		if !strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, "tests/testutil/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := sleepCalls(calls, rel, src); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range sleepProblems(calls, sleepAllowed) {
		t.Error(p)
	}
}

func TestSleepRuleCatchesViolations(t *testing.T) {
	calls := map[string]int{}
	src := []byte("package p\nimport \"time\"\nfunc TestX() { go func() { time.Sleep(time.Second) }() }\nfunc TestY() {}\n")
	if err := sleepCalls(calls, "p/x_test.go", src); err != nil {
		t.Fatal(err)
	}
	if calls["p/x_test.go:TestX"] != 1 || len(calls) != 1 {
		t.Fatalf("calls = %v, want TestX's one", calls)
	}
	got := sleepProblems(calls, map[string]string{"p/x_test.go:TestY": "gone"})
	if len(got) != 2 || !strings.Contains(got[0], "TestX calls time.Sleep") || !strings.Contains(got[1], "TestY, which no longer") {
		t.Fatalf("problems = %q, want TestX's call and TestY's stale entry", got)
	}
}
