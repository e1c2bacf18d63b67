package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdlgo/xps/tests/testutil"
)

// walkthroughHeading is the README section whose first sh block
// TestReadmeWalkthrough runs.
const walkthroughHeading = "## Running the processes separately"

// TestReadmeWalkthrough runs the README's separate-process walkthrough
// line by line as written, from a temporary directory, with every
// 127.0.0.1:PORT made a free port: `go build -o bin/ ...` is run in the
// module root into the directory's bin/, a line ending in & starts a
// background job (%1, %2, ... in order), `kill %N ...` sends SIGTERM, `wait
// %N ...` waits for those jobs, and any other line runs to its end. Every
// line must succeed and every job exit 0; both workers must train a part
// of the generated file, the parts adding up to it.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process walkthrough")
	}
	root := moduleRoot(t)
	lines := readmeBlock(t, filepath.Join(root, "README.md"), walkthroughHeading)
	w := &walkthrough{t: t, root: root, dir: t.TempDir(), ports: map[string]string{}}
	w.linkBin()
	for _, line := range lines {
		w.run(line)
	}
	for i, p := range w.jobs {
		select {
		case err := <-p.done:
			p.done <- err
			if err != nil {
				t.Fatalf("job %%%d (%s) exited with %v:\n%s", i+1, p.name, err, p.output())
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("job %%%d (%s) still runs after the walkthrough's last line:\n%s", i+1, p.name, p.output())
		}
	}
	w.checkTraining()
	// A finished job, then an orderly stop: nothing is an error.
	for _, p := range w.all {
		if strings.Contains(p.output(), "level=ERROR") {
			t.Errorf("%s logged an ERROR:\n%s", p.name, p.output())
		}
	}
}

// readmeBlock returns the lines of the first ```sh block after heading.
func readmeBlock(t *testing.T, path, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no heading %q", path, heading)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: no sh block under %q", path, heading)
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// walkthrough runs a README block's lines.
type walkthrough struct {
	t         *testing.T
	root, dir string
	ports     map[string]string // a port of the README's to a free one
	jobs      []*proc           // the background jobs, %1 first
	all       []*proc           // every command run
	ctrgen    string            // ctrgen's output
	// funcs are the shell functions the lines defined (name() { echo ...; }).
	funcs map[string]string
	// blockJobs are the background jobs of the block being run
	// (TestReadmeBlocks stops them at its end).
	blockJobs []*proc
}

var (
	loopbackAddr = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	portFlag     = regexp.MustCompile(`-port \d+`)
)

// run runs one line: simple commands (quotes, a trailing &, and the
// functions the block defined, as $(name arg)), nothing else of a shell.
func (w *walkthrough) run(line string) {
	t := w.t
	free := func(addr string) string {
		if w.ports[addr] == "" {
			w.ports[addr] = testutil.FreeAddr(t)
		}
		return w.ports[addr]
	}
	line = loopbackAddr.ReplaceAllStringFunc(line, free)
	line = portFlag.ReplaceAllStringFunc(line, func(f string) string { // -port N listens on 127.0.0.1:N
		_, port, _ := strings.Cut(free("127.0.0.1:"+strings.TrimPrefix(f, "-port ")), ":")
		return "-port " + port
	})
	if w.define(line) {
		return
	}
	args, err := shellWords(line, w.funcs)
	if err != nil {
		t.Fatalf("README line %q: %v (the README test runs simple commands only)", line, err)
	}
	background := args[len(args)-1] == "&"
	if background {
		args = args[:len(args)-1]
	}
	t.Logf("$ %s", line)
	switch {
	case args[0] == "kill" || args[0] == "wait":
		w.control(line, args)
	case w.built(args):
	case background:
		p := w.start(w.command(args))
		w.jobs = append(w.jobs, p)
		w.blockJobs = append(w.blockJobs, p)
	case slices.Contains(args, "-streaming") && slices.Contains(args, "true"):
		// A stream never ends: the user stops it with Ctrl-C, as
		// TestReadmeBlocks does at the block's end.
		w.blockJobs = append(w.blockJobs, w.start(w.command(args)))
	default:
		if strings.HasSuffix(args[0], "curl") {
			w.waitHTTP(args)
		}
		p := w.start(w.command(args))
		w.waitForeground(p, 5*time.Minute)
		if strings.HasSuffix(p.cmd.Args[0], "/ctrgen") {
			w.ctrgen = p.output()
		}
	}
}

// start starts a command of the block: go in the module root (its -o
// bin/ made the directory's bin/), anything else in the directory (see
// command for what it rewrites).
func (w *walkthrough) start(args []string) *proc {
	p := &proc{name: strings.Join(args, " "), done: make(chan error, 1)}
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Dir = w.dir
	if args[0] == "go" {
		p.cmd.Dir = w.root
		for i, a := range args {
			if a == "bin/" {
				p.cmd.Args[i] = filepath.Join(w.dir, "bin") + string(filepath.Separator)
			}
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		w.t.Fatalf("start %s: %v", p.name, err)
	}
	w.all = append(w.all, p)
	go func() { p.done <- p.cmd.Wait() }()
	w.t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if w.t.Failed() {
			w.t.Logf("--- output of %s:\n%s", p.name, p.output())
		}
	})
	return p
}

// waitForeground waits for p to exit 0, and fails at once when a
// background job exits with an error meanwhile (a worker would wait for
// it for ever).
func (w *walkthrough) waitForeground(p *proc, timeout time.Duration) {
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-p.done:
			p.done <- err
			if err != nil {
				w.t.Fatalf("%s exited with %v:\n%s", p.name, err, p.output())
			}
			return
		case <-deadline:
			w.t.Fatalf("%s did not finish in %v:\n%s", p.name, timeout, p.output())
		case <-tick.C:
		}
		for i, j := range w.jobs {
			select {
			case err := <-j.done:
				j.done <- err
				if err != nil {
					w.t.Fatalf("job %%%d (%s) exited with %v while %s ran:\n%s", i+1, j.name, err, p.name, j.output())
				}
			default:
			}
		}
	}
}

// control runs kill or wait on job specs (%N).
func (w *walkthrough) control(line string, args []string) {
	for _, spec := range args[1:] {
		n, err := strconv.Atoi(strings.TrimPrefix(spec, "%"))
		if err != nil || !strings.HasPrefix(spec, "%") || n < 1 || n > len(w.jobs) {
			w.t.Fatalf("README line %q: %q is not a job", line, spec)
		}
		p := w.jobs[n-1]
		if args[0] == "kill" {
			p.cmd.Process.Signal(syscall.SIGTERM)
		} else {
			p.wait(w.t, 2*time.Minute)
		}
	}
}

var trainedLine = regexp.MustCompile(`(?m)^(worker-\d+): trained (\d+) samples`)

// checkTraining checks that both workers trained, the generated file
// between them.
func (w *walkthrough) checkTraining() {
	t := w.t
	m := regexp.MustCompile(`wrote (\d+) samples to train\.libffm`).FindStringSubmatch(w.ctrgen)
	if m == nil {
		t.Fatalf("ctrgen's output names no training samples:\n%s", w.ctrgen)
	}
	want, _ := strconv.ParseInt(m[1], 10, 64)
	var all strings.Builder
	for _, p := range w.all {
		all.WriteString(p.output())
	}
	trained := map[string]int64{}
	for _, m := range trainedLine.FindAllStringSubmatch(all.String(), -1) {
		trained[m[1]], _ = strconv.ParseInt(m[2], 10, 64)
	}
	if len(trained) != 2 || trained["worker-0"] == 0 || trained["worker-1"] == 0 || trained["worker-0"]+trained["worker-1"] != want {
		t.Fatalf("the workers trained %v of %d samples: want a part each, adding up to all", trained, want)
	}
	t.Logf("the workers trained %v of %d samples", trained, want)
}
