package e2e

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdlgo/xps/tests/testutil"
)

// withArgs are the commands whose usage names positional arguments.
var withArgs = map[string]bool{"hdfsput": true, "kafkaput": true, "plot": true, "netdelay": true}

// TestCommandLine checks the command line of every binary under cmd/ (issue
// 21, item 8): -h lists every flag with its default and exits 0, the
// defaults README.md's table of flags gives are the ones -h gives, and a
// stray positional argument is an error, not ignored.
func TestCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binaries")
	}
	bin := build(t)
	entries, err := os.ReadDir(filepath.Join(moduleRoot(t), "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	flagLine := regexp.MustCompile(`^  -(\S+)`)
	readme := readmeFlagDefaults(t)
	for _, e := range entries {
		name := e.Name()
		out, err := exec.Command(filepath.Join(bin, name), "-h").CombinedOutput()
		if err != nil {
			t.Errorf("%s -h: %v\n%s", name, err, out)
		}
		for flag, v := range readme[name] {
			if help := flagHelp(string(out), flag); !saysDefault(help, v) {
				t.Errorf("README.md's flag table says %s -%s defaults to %s; %s -h says:\n%s", name, flag, v, name, help)
			}
		}
		delete(readme, name)
		lines := strings.Split(string(out), "\n")
		flags := 0
		for i, l := range lines {
			m := flagLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			flags++
			if i+1 >= len(lines) || !strings.Contains(lines[i+1], "(default ") {
				t.Errorf("%s -h: flag -%s shows no default:\n%s", name, m[1], out)
			}
		}
		if flags == 0 {
			t.Errorf("%s -h lists no flag:\n%s", name, out)
		}
		if withArgs[name] {
			continue
		}
		out, err = exec.Command(filepath.Join(bin, name), "stray").CombinedOutput()
		if err == nil || !strings.Contains(string(out), name+`: unexpected argument "stray"`) {
			t.Errorf("%s stray: exit %v, want an error naming the argument:\n%s", name, err, out)
		}
	}
	for name := range readme {
		t.Errorf("README.md's table of flags names %s, which is not under cmd/", name)
	}
}

// readmeFlagDefaults returns the defaults README.md's table of flags
// gives (binary -> flag -> value), from cells such as "`-shards N` (...,
// default 2)".
func readmeFlagDefaults(t *testing.T) map[string]map[string]string {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| (.*) \\|$")
	item := regexp.MustCompile("`-([\\w-]+)[^`]*`[^`|]*?\\(([^()]*?\\b)?default:? `?([^`,;)]+)`?")
	out := map[string]map[string]string{}
	n := 0
	for _, r := range row.FindAllStringSubmatch(string(b), -1) {
		for _, m := range item.FindAllStringSubmatch(r[2], -1) {
			if out[r[1]] == nil {
				out[r[1]] = map[string]string{}
			}
			out[r[1]][m[1]] = strings.TrimSpace(m[3])
			n++
		}
	}
	if n < 10 {
		t.Fatalf("README.md's table of flags gives %d defaults: the table was not found", n)
	}
	return out
}

// flagHelp returns the lines of -h output out that describe flag.
func flagHelp(out, flag string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  -") {
			in = l == "  -"+flag || strings.HasPrefix(l, "  -"+flag+" ")
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// saysDefault reports whether help gives v as the default (a duration in
// any spelling: "1m" is "1m0s").
func saysDefault(help, v string) bool {
	if strings.Contains(help, "default "+v) || strings.Contains(help, `default "`+v+`"`) {
		return true
	}
	d, err := time.ParseDuration(v)
	return err == nil && strings.Contains(help, "default "+d.String())
}

// TestInterrupt stops the built worker with SIGINT (Ctrl-C) while it
// trains and while it waits for a cluster (issue 21, item 8): it stops
// with one line and the shell's status for SIGINT, not a cascade of
// "context canceled".
func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binaries")
	}
	bin := build(t)
	etcd := testutil.StartEtcd(t)
	for _, c := range []struct {
		name  string
		args  []string
		ready string // in the output once the worker is where it is stopped
	}{
		{"training", []string{"-local", "-snapshot-store", t.TempDir(), "-set", "data.train_samples=200000", "-epochs", "50"}, "samples/s"},
		{"waiting", []string{"-etcd", etcd.Endpoints()[0], "-cluster", "interrupt"}, "waiting for the shard map"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, "worker", filepath.Join(bin, "worker"), c.args...)
			testutil.Eventually(t, 2*time.Minute, c.ready, func() bool { return strings.Contains(p.output(), c.ready) })
			p.cmd.Process.Signal(syscall.SIGINT)
			err := p.exit(t, time.Minute)
			var exit *exec.ExitError
			out := strings.TrimSpace(p.output())
			if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.HasSuffix(out, "\nworker: stopped by SIGINT (Ctrl-C)") ||
				strings.Contains(out, "context canceled") {
				t.Errorf("worker %s stopped by SIGINT: exit %v, want 130 and one line saying so:\n%s", c.name, err, out)
			}
		})
	}
}

// TestStreamInterrupt runs the README's Kafka streaming job on the built
// binaries (kafkad, kafkaput, worker -local -streaming true -test) and
// stops the worker with Ctrl-C (issue 21, item 8): a stream's stop is its
// end, so it exits 0 after an evaluation on the test file, not with "AUC
// 0 on 0 samples".
func TestStreamInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binaries")
	}
	bin := build(t)
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm")
	start(t, "ctrgen", filepath.Join(bin, "ctrgen"), "-train", train, "-test", test, "-train-samples", "20000",
		"-test-samples", "2000").wait(t, time.Minute)
	addr := testutil.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	start(t, "kafkad", filepath.Join(bin, "kafkad"), "-port", port, "-topics", "ctr:2")
	testutil.Eventually(t, 30*time.Second, "kafkad to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	start(t, "kafkaput", filepath.Join(bin, "kafkaput"), "-brokers", addr, "-topic", "ctr", train).wait(t, time.Minute)
	w := start(t, "worker", filepath.Join(bin, "worker"), "-local", "-kafka", addr, "-topic", "ctr", "-streaming", "true",
		"-test", test, "-set", "train.progress_every=100ms")
	testutil.Eventually(t, 2*time.Minute, "the stream trained", func() bool { return strings.Contains(w.output(), "samples/s") })
	w.cmd.Process.Signal(syscall.SIGINT)
	if err := w.exit(t, 2*time.Minute); err != nil || !strings.Contains(w.output(), "eval after stop: test AUC 0.") ||
		!regexp.MustCompile(`worker-0: test AUC 0\.\d+, logloss \d\.\d+ on 2000 samples`).MatchString(w.output()) {
		t.Errorf("a streaming worker stopped by SIGINT: exit %v, want 0 and a test evaluation on 2000 samples:\n%s", err, w.output())
	}
}
