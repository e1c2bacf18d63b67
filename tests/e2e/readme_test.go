package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeBlocks runs every ```sh block of README.md that runs on one
// machine, in order, in one working directory (issue 57: blocks named
// files no earlier line made, and settings that misled), in the shortened
// form its plan gives where a block is long: the plan's edits are the only
// changes to the README's lines, besides free ports for 127.0.0.1 ports,
// a directory of the test's for /tmp, and the built binaries for `go run
// ./cmd/NAME`. Every line must succeed; a background job still running at
// its block's end is stopped: a streaming worker with Ctrl-C once it has
// trained, which must then save its model and exit 0, any other with
// SIGTERM. A block without a plan fails the test, so a new block gets
// one: run, or a reason why it cannot run here.
func TestReadmeBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's blocks")
	}
	root := moduleRoot(t)
	blocks := readmeBlocks(t, filepath.Join(root, "README.md"))
	w := &walkthrough{t: t, root: root, dir: t.TempDir(), ports: map[string]string{}, funcs: map[string]string{}}
	w.linkBin()
	for _, b := range blocks {
		plan, ok := readmePlans[b.key()]
		if !ok {
			t.Errorf("README block %s has no plan in readmePlans: give it one (its edits, or why it cannot run here)", b.key())
			continue
		}
		if plan.skip != "" {
			t.Logf("block %s: not run here: %s", b.key(), plan.skip)
			continue
		}
		if plan.needs != "" {
			if _, err := os.Stat(filepath.Join(root, plan.needs)); err != nil {
				t.Logf("block %s: skipped: it needs %s (../shared/data, absent here)", b.key(), plan.needs)
				continue
			}
		}
		t.Logf("block %s", b.key())
		begun := time.Now()
		w.jobs = nil // a block is a shell of its own: %1 is its first background job
		for _, line := range plan.before {
			w.run(line)
		}
		for _, line := range b.lines {
			if edited, ok := plan.edit(line); ok {
				w.run(edited)
			}
		}
		if !plan.keep { // else they are the next block's too
			w.stopBlock()
			w.blockJobs = nil
		}
		if plan.check != nil {
			plan.check(t, w)
		}
		t.Logf("block %s ran in %v", b.key(), time.Since(begun).Round(time.Second))
	}
}

// shBlock is one ```sh block of the README: the heading it is under
// and its place among that heading's blocks, its lines joined where they
// end in \ and without comments.
type shBlock struct {
	heading string
	n       int
	lines   []string
}

func (b shBlock) key() string { return fmt.Sprintf("%s #%d", b.heading, b.n) }

// readmeBlocks returns every ```sh block of the file at path.
func readmeBlocks(t *testing.T, path string) []shBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []shBlock
	var heading, cont string
	count := map[string]int{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "#"):
			heading = line
		case !in && line == "```sh":
			in = true
			count[heading]++
			out = append(out, shBlock{heading: heading, n: count[heading]})
		case in && line == "```":
			in = false
		case in:
			b := &out[len(out)-1]
			if i := strings.Index(line, " #"); i >= 0 && !strings.Contains(line[:i], "'") {
				line = line[:i]
			}
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "#") {
				continue
			}
			if l, ok := strings.CutSuffix(line, `\`); ok {
				cont += l + " "
				continue
			}
			if line = strings.TrimSpace(cont + line); line != "" {
				b.lines = append(b.lines, line)
			}
			cont = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readmePlan is how TestReadmeBlocks runs a block.
type readmePlan struct {
	// skip says why the block does not run here (empty: it runs).
	skip string
	// needs is a path under the module root the block reads (the shared
	// data): without it the block is skipped, saying so.
	needs string
	// edits shorten the block: a line starting with a key gets the
	// value appended (or, when the value starts with "=", replaced by the
	// rest); a key whose value is "" drops the line.
	edits map[string]string
	// before are lines run first: what an earlier block that does not
	// run in this test (its plan skips it) made for this one.
	before []string
	// keep leaves the block's background jobs running for the next
	// block, which stops them at its end.
	keep bool
	// check runs after the block.
	check func(t *testing.T, w *walkthrough)
}

// edit returns line as the plan runs it, and false when it drops it.
func (p readmePlan) edit(line string) (string, bool) {
	for prefix, v := range p.edits {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		switch {
		case v == "":
			return "", false
		case strings.HasPrefix(v, "="):
			return v[1:], true
		}
		background := strings.HasSuffix(line, " &")
		line = strings.TrimSuffix(line, " &") + " " + v
		if background {
			line += " &"
		}
		return line, true
	}
	return line, true
}

// short is the edit that shortens the generated CTR data of a -local
// worker or of ctrgen.
const (
	shortLocal   = "-set data.train_samples=30000 -set data.test_samples=3000"
	shortCtrgen  = "-train-samples 20000 -test-samples 2000"
	fastProgress = "-set train.progress_every=100ms"
)

// readmePlans are the plans of the README's blocks, by shBlock.key.
var readmePlans = map[string]readmePlan{
	"## Set up on a fresh machine #1": {edits: map[string]string{
		"go run ./cmd/worker -local": shortLocal,
		"./test.sh":                  "", // the test command itself
	}, check: wantOutput("worker-0: the model is saved: snapshot")},
	"## Set up on a fresh machine #2": {needs: "../shared/data/ml-100k",
		check: wantOutput("worker-0: test AUC 0.")},
	"## Running the processes separately #1": {skip: "TestReadmeWalkthrough runs it as written"},
	"### TLS #1": {before: []string{"go build -o bin/ ./cmd/...", "bin/ctrgen -train train.libffm -test test.libffm " + shortCtrgen},
		check: wantOutput("exactly-once, by the shards' records")},
	"### TLS #2": {before: []string{"go build -o bin/ ./cmd/...", "bin/ctrgen -train train.libffm -test test.libffm " + shortCtrgen},
		check: wantOutput("exactly-once, by the shards' records")},
	"## Containers, Compose and Kubernetes #1": {skip: "charts/test's TestCompose runs deploy/compose (Docker images) and its predict request"},
	"## Containers, Compose and Kubernetes #2": {skip: "needs a Kubernetes cluster and a registry (issue 56)"},
	"## Training from Kafka #1": {keep: true, edits: map[string]string{
		"bin/ctrgen": shortCtrgen,
		"bin/worker": fastProgress,
	}},
	"## Online learning for months: admission, expiry, a memory budget #1": {edits: map[string]string{
		"bin/worker": fastProgress,
	}},
	"### Tables larger than memory: `storage: tiered` #1": {edits: map[string]string{
		"go run ./cmd/worker": shortLocal,
	}, check: wantOutput("worker-0: the model is saved")},
	"## Export to serving #1": {keep: true, edits: map[string]string{
		"bin/worker": shortLocal,
	}, check: wantOutput(`{"version":`, `"scores":[`)},
	"## Export to serving #2": {edits: map[string]string{
		"bin/ctrgen": "=bin/ctrgen -train new-day.libffm -train-samples 20000 -seed 2",
	}, check: wantOutput("warm start: loaded export", "the model holds")},
	"## Training from HDFS #1": {edits: map[string]string{
		"bin/ctrgen": shortCtrgen,
	}, check: wantOutput("hdfs://")},
	"## Behaviour sequences: DIN and DIEN #1": {edits: map[string]string{
		"go run ./cmd/ctrgen": "=go run ./cmd/ctrgen -seq -format group -train /tmp/seq.group -test /tmp/seq-test.group -train-samples 20000 -test-samples 2000",
		"go run ./cmd/worker": "-epochs 1",
	}, check: wantOutput("worker-0: test AUC 0.")},
	"## Python #1": {skip: "test.sh's python step makes such a venv and installs the package into it"},
	"### Parquet #1": {edits: map[string]string{
		"go run ./cmd/ctrgen": shortCtrgen,
	}, check: wantOutput("format parquet", "exactly-once")},
	"## Validation and early stopping #1": {edits: map[string]string{
		"go run ./cmd/ctrgen -train train.libffm": shortCtrgen,
		"go run ./cmd/ctrgen -train valid.libffm": "=go run ./cmd/ctrgen -train valid.libffm -train-samples 4000 -seed 3",
		"go run ./cmd/worker":                     "-epochs 4 -patience 1",
	}, check: wantOutput("validation")},
	"## Autotuning: `train.autotune` #1": {edits: map[string]string{
		"go run ./cmd/worker": "-set autotune.trials=3 -epochs 1",
	}, check: wantOutput("autotune: the winner is setting", "exactly-once")},
	"## Extreme classification with a SLIDE output layer #1": {needs: "../shared/data/bibtex", edits: map[string]string{
		"go run ./cmd/worker -local -config bench/configs/xc_bibtex.yaml": "-epochs 2",
		"go run ./cmd/xcgen":                  "=go run ./cmd/xcgen -out /tmp/a670.train -samples 2000 -test-out /tmp/a670.test -test-samples 200 -labels 2000",
		"go run ./cmd/worker -etcd HOST:2379": "", // a template for a cluster of its own
	}, check: wantOutput("P@1")},
	"## Snapshots, recovery and sync mode #1": {edits: map[string]string{
		"bin/worker": "-epochs 1",
	}, check: wantOutput("the model is saved already", "the model is saved: snapshot")},
	"### Use it from Go #1": {skip: "test.sh runs it (examples/ is a module of its own)"},
	"### Use it from Go #2": {skip: "test.sh runs it (examples/ownmodel, in the module of examples/)"},
}

// wantOutput checks that the block's commands together said each of want.
func wantOutput(want ...string) func(t *testing.T, w *walkthrough) {
	return func(t *testing.T, w *walkthrough) {
		t.Helper()
		var all strings.Builder
		for _, p := range w.all {
			all.WriteString(p.output())
		}
		for _, s := range want {
			if !strings.Contains(all.String(), s) {
				t.Errorf("the README's commands never said %q", s)
			}
		}
	}
}

// stopBlock stops the block's background jobs still running: streaming
// workers first, with Ctrl-C once they trained (they must save their
// model and exit 0), then the others with SIGTERM, the last started first.
func (w *walkthrough) stopBlock() {
	t := w.t
	running := func(p *proc) bool {
		select {
		case err := <-p.done:
			p.done <- err
			return false
		default:
			return true
		}
	}
	for _, p := range w.blockJobs {
		if !running(p) || !strings.Contains(p.name, "-streaming true") {
			continue
		}
		w.waitOutput(p, " samples/s", 2*time.Minute)
		p.cmd.Process.Signal(syscall.SIGINT)
		if err := p.exit(t, 3*time.Minute); err != nil || !strings.Contains(p.output(), "saved the final model: snapshot") {
			t.Fatalf("%s stopped with Ctrl-C: exit %v, want 0 and its model saved:\n%s", p.name, err, p.output())
		}
	}
	for i := len(w.blockJobs) - 1; i >= 0; i-- {
		if p := w.blockJobs[i]; running(p) {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.exit(t, 2*time.Minute)
		}
	}
}

// waitOutput waits until p has said s.
func (w *walkthrough) waitOutput(p *proc, s string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.output(), s) {
		if time.Now().After(deadline) {
			w.t.Fatalf("%s did not say %q in %v:\n%s", p.name, s, timeout, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// define records a shell function of the form `name() { echo WORDS; }`
// (WORDS may use $1) and reports whether line was one.
func (w *walkthrough) define(line string) bool {
	m := shellFunc.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	w.funcs[m[1]] = m[2]
	return true
}

var shellFunc = regexp.MustCompile(`^(\w+)\(\) \{ echo (.*); \}$`)

// shellWords splits line into words as a shell would for the README's
// simple commands: single and double quotes, and $(name arg) of a
// function funcs defines; a pipe, redirection, ; or && is an error.
func shellWords(line string, funcs map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				return nil, errors.New("an unclosed quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '$' && strings.HasPrefix(line[i:], "$("):
			j := strings.IndexByte(line[i:], ')')
			if j < 0 {
				return nil, errors.New("an unclosed $(")
			}
			call := strings.Fields(line[i+2 : i+j])
			body, ok := funcs[call[0]]
			if !ok || len(call) != 2 {
				return nil, fmt.Errorf("$(%s): not a function of one argument the block defined", line[i+2:i+j])
			}
			words = append(words, strings.Fields(strings.ReplaceAll(body, "$1", call[1]))...)
			i += j
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("|;<>$`\\", rune(c)) || strings.HasPrefix(line[i:], "&&"):
			return nil, fmt.Errorf("%q is beyond the README test's shell", string(c))
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("no command")
	}
	return words, nil
}

// linkBin makes the directory's bin/ the package's commands (build): the
// README's `go build -o bin/ ./cmd/...` is what build ran, and its `go run
// ./cmd/NAME` runs bin/NAME, so neither links the commands again.
func (w *walkthrough) linkBin() {
	if err := os.Symlink(build(w.t), filepath.Join(w.dir, "bin")); err != nil {
		w.t.Fatal(err)
	}
}

// built reports whether args is `go build -o bin/ ./cmd/...` with bin/
// built already (by an earlier block): it is not run again.
func (w *walkthrough) built(args []string) bool {
	if strings.Join(args, " ") != "go build -o bin/ ./cmd/..." {
		return false
	}
	_, err := os.Stat(filepath.Join(w.dir, "bin", "worker"))
	return err == nil
}

// command is args as the test runs them: `go run ./cmd/NAME ...` runs
// bin/NAME (built when missing); paths into the module (bench/, deploy/,
// ../shared/) are made absolute and /tmp/ is a directory of the test's.
// `go build` stays as it is (start runs it in the module root).
func (w *walkthrough) command(args []string) []string {
	if args[0] == "go" && len(args) > 2 && args[1] == "run" && strings.HasPrefix(args[2], "./cmd/") {
		name := strings.TrimPrefix(args[2], "./cmd/")
		bin := filepath.Join(w.dir, "bin", name)
		if _, err := os.Stat(bin); err != nil {
			cmd := exec.Command("go", "build", "-o", filepath.Join(w.dir, "bin")+string(filepath.Separator), "./cmd/...")
			cmd.Dir = w.root
			if out, err := cmd.CombinedOutput(); err != nil {
				w.t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
			}
		}
		args = append([]string{bin}, args[3:]...)
	}
	if args[0] == "go" {
		return args
	}
	out := make([]string, len(args))
	tmp := filepath.Join(w.dir, "tmp") + "/"
	for i, a := range args {
		switch {
		case i == 0 && strings.HasPrefix(a, w.dir): // a built binary
		case readmeTmp.MatchString(a): // the README's /tmp, before paths into the module are made absolute (the module may lie under /tmp)
			os.MkdirAll(tmp, 0o755)
			a = readmeTmp.ReplaceAllString(a, "${1}"+tmp)
		}
		for _, p := range []string{"bench/", "deploy/", "../shared/"} {
			if strings.HasPrefix(a, p) {
				a = filepath.Join(w.root, a)
			}
		}
		out[i] = a
	}
	return out
}

// readmeTmp is a README path under /tmp: a word, or a flag's or list's
// value, starting there.
var readmeTmp = regexp.MustCompile(`(^|[=,])/tmp/`)

// waitHTTP waits, before a curl line, until the server it asks answers
// GET /healthz with 200 (a user runs curl once serve has loaded the
// model).
func (w *walkthrough) waitHTTP(args []string) {
	m := loopbackAddr.FindString(strings.Join(args, " "))
	if m == "" {
		return
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + m + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s never answered /healthz with 200 (last: %v)", m, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
