package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/tests/testutil"
)

// TestFirstHour runs the built binaries as a new user would and checks
// what they say (issue 21): an etcd that does not answer is an error
// naming its address within seconds, not a silent hang; a worker that
// waits for a scheduler says, every few seconds, what it waits for and
// where; an empty training file is an error naming it, with the program's
// name once ("worker: no data", not "worker: worker: no data"); a zero
// where zero means nothing (-batch-size 0, epochs: 0 in the file) is an
// error naming the default, not a run with it.
func TestFirstHour(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binaries")
	}
	bin := build(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.libffm")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("unreachable etcd", func(t *testing.T) {
		nobody := testutil.FreeAddr(t) // nothing listens there
		for _, args := range [][]string{
			{"worker", "-etcd", nobody, "-train", empty},
			{"ams", "-etcd", nobody, "-id", "ams-0"},
			{"scheduler", "-etcd", nobody},
		} {
			begun := time.Now()
			p := start(t, args[0], filepath.Join(bin, args[0]), args[1:]...)
			err := p.exit(t, 20*time.Second)
			took := time.Since(begun)
			if err == nil || took > 15*time.Second || !strings.Contains(p.output(), nobody) ||
				!strings.Contains(p.output(), "etcd does not answer") {
				t.Errorf("%s -etcd %s: exit %v after %v, want a failure naming the address within 15s:\n%s",
					args[0], nobody, err, took.Round(time.Millisecond), p.output())
			}
		}
	})
	t.Run("a worker says what it waits for", func(t *testing.T) {
		etcd := testutil.StartEtcd(t)
		ep := etcd.Endpoints()[0]
		p := start(t, "worker", filepath.Join(bin, "worker"), "-etcd", ep, "-train", empty,
			"-workers", "2", "-worker-index", "1")
		want := "worker-1: still waiting after 5s for the shard map under /xps/default on etcd " + ep + ": a scheduler publishes it"
		testutil.Eventually(t, 30*time.Second, "the worker's notice", func() bool {
			return strings.Contains(p.output(), want)
		})
	})
	t.Run("an empty training file", func(t *testing.T) {
		p := start(t, "worker", filepath.Join(bin, "worker"), "-local", "-train", empty)
		err := p.exit(t, time.Minute)
		if want := "\nworker: no data: training data: file " + empty + " holds no samples"; err == nil || !strings.Contains(p.output(), want) {
			t.Errorf("worker -local -train %s: exit %v, want a failure saying %q:\n%s", empty, err, want, p.output())
		}
	})
	t.Run("zero is refused", func(t *testing.T) {
		yaml := filepath.Join(dir, "zero.yaml")
		if err := os.WriteFile(yaml, []byte("train: {epochs: 0}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"worker", "-local", "-batch-size", "0"}, "train.batch_size 0 is not allowed (leave it out for the default, 256)"},
			{[]string{"worker", "-local", "-set", "train.eval_batch_size=0"}, "train.eval_batch_size 0 is not allowed"},
			{[]string{"worker", "-local", "-config", yaml}, "train.epochs 0 is not allowed (leave it out for the default, 1)"},
			{[]string{"scheduler", "-etcd", "127.0.0.1:1", "-workers", "0"}, "job.workers 0 is not allowed"},
		} {
			p := start(t, c.args[0], filepath.Join(bin, c.args[0]), c.args[1:]...)
			if err := p.exit(t, 30*time.Second); err == nil || !strings.Contains(p.output(), c.want) {
				t.Errorf("%v: exit %v, want a failure saying %q:\n%s", c.args, err, c.want, p.output())
			}
		}
	})
	t.Run("output a user can read", func(t *testing.T) { readableOutput(t, bin, dir) })
	t.Run("the model outlives -local", func(t *testing.T) { modelOutlivesLocal(t, bin) })
}

// modelOutlivesLocal runs `worker -local` (the README's first command, on
// less data): it ends with a snapshot of the final model under
// xps-models/ in its working directory, and its summary says where and
// how to resume; the line it prints resumes the job for a second epoch.
func modelOutlivesLocal(t *testing.T, bin string) {
	data := []string{"-set", "data.train_samples=20000"}
	p := start(t, "worker", filepath.Join(bin, "worker"), append([]string{"-local"}, data...)...)
	if err := p.exit(t, 2*time.Minute); err != nil {
		t.Fatalf("worker -local: %v\n%s", err, p.output())
	}
	saved := regexp.MustCompile(`worker-0: the model is saved: snapshot (\d+) of job (\S+) \(\d+ rows\) in (\S+); resume it with job.id \S+ and snapshot.store \S+ \(the worker's flags: (-set job.id=\S+ -snapshot-store [^\s)]+)\)\n`)
	m := saved.FindStringSubmatch(p.output())
	if m == nil {
		t.Fatalf("worker -local: no line saying where the model is:\n%s", p.output())
	}
	if want := filepath.Join(p.cmd.Dir, "xps-models", m[2]); m[3] != want {
		t.Errorf("the model went to %s, want %s", m[3], want)
	}
	if manifests, _ := filepath.Glob(filepath.Join(m[3], "snap-*"+m[1], "manifest.json")); len(manifests) != 1 {
		t.Errorf("no manifest of snapshot %s in %s", m[1], m[3])
	}
	args := append(append([]string{"-local", "-epochs", "2"}, data...), strings.Fields(m[4])...)
	r := start(t, "worker", filepath.Join(bin, "worker"), args...)
	if err := r.exit(t, 2*time.Minute); err != nil || !strings.Contains(r.output(), "worker-0: resuming at epoch 1 from") ||
		!strings.Contains(r.output(), "(20000 samples applied before)") || !strings.Contains(r.output(), "worker-0: the model is saved: snapshot") {
		t.Errorf("worker %v: exit %v, want a second epoch resumed from the saved model, saved again:\n%s", args, err, r.output())
	}
	// Failed runs in the same directory, more than it keeps: each removes
	// only its own empty directory, and the trained model stays (one
	// removed it before, issue 57).
	empty := filepath.Join(p.cmd.Dir, "empty.libffm")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 5; i++ {
		f := startIn(t, p.cmd.Dir, "worker", filepath.Join(bin, "worker"), "-local", "-train", empty)
		if err := f.exit(t, time.Minute); err == nil || !strings.Contains(f.output(), ": it holds no trained model") {
			t.Fatalf("failed run %d: exit %v, want a failure that says it removed its own empty model directory:\n%s", i, err, f.output())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(p.cmd.Dir, "xps-models", "*")); len(left) != 1 || left[0] != m[3] {
		t.Errorf("after 6 failed runs xps-models/ holds %v, want only the trained model %s", left, m[3])
	}
}

// readableOutput runs the worker on a libFM file named .libfm without
// -format (it trains, and the summary names the format and no position in
// memory), on the same file named .txt (a line error with a hint at
// -format), and on generated data with frequent progress lines (the
// epoch's loss is not printed twice).
func readableOutput(t *testing.T, bin, dir string) {
	var lines strings.Builder
	for i := range 200 {
		fmt.Fprintf(&lines, "%d %d:1 %d:1\n", i%2, i%7, 10+i%5)
	}
	libfm, txt := filepath.Join(dir, "train.libfm"), filepath.Join(dir, "train.txt")
	for _, p := range []string{libfm, txt} {
		if err := os.WriteFile(p, []byte(lines.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := start(t, "worker", filepath.Join(bin, "worker"), "-local", "-train", libfm, "-test", libfm)
	if err := p.exit(t, time.Minute); err != nil || !strings.Contains(p.output(), "worker-0: data: 1 file splits of "+libfm+" (format libfm,") ||
		strings.Contains(p.output(), "memory@") {
		t.Errorf("worker -train %s: exit %v, want a run whose summary names the format libfm and no memory position:\n%s", libfm, err, p.output())
	}
	p = start(t, "worker", filepath.Join(bin, "worker"), "-local", "-train", txt)
	if err := p.exit(t, time.Minute); err == nil || !strings.Contains(p.output(), txt+":1: malformed line") ||
		!strings.Contains(p.output(), "but the file looks like libfm: give -format libfm") {
		t.Errorf("worker -train %s: exit %v, want a line error with a hint at -format libfm:\n%s", txt, err, p.output())
	}
	// A Criteo TSV line whose last column is empty, as real Criteo data
	// has: the hint names -format criteo (the sniffer once stripped the
	// trailing tab and counted 39 columns, issue 57).
	cols := []string{"1"}
	for i := range 13 {
		cols = append(cols, fmt.Sprint(i))
	}
	for i := range 26 {
		cols = append(cols, fmt.Sprintf("%08x", i*7919))
	}
	cols[len(cols)-1] = ""
	criteo := filepath.Join(dir, "day0.txt")
	if err := os.WriteFile(criteo, []byte(strings.Join(cols, "\t")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = start(t, "worker", filepath.Join(bin, "worker"), "-local", "-train", criteo)
	if err := p.exit(t, time.Minute); err == nil || !strings.Contains(p.output(), "give -format criteo") {
		t.Errorf("worker -train %s (Criteo, empty last column): exit %v, want a hint at -format criteo:\n%s", criteo, err, p.output())
	}
	p = start(t, "worker", filepath.Join(bin, "worker"), "-local", "-set", "data.train_samples=100000", "-set", "train.progress_every=50ms")
	if err := p.exit(t, 2*time.Minute); err != nil {
		t.Fatalf("worker -local: %v\n%s", err, p.output())
	}
	progress := regexp.MustCompile(`loss (\d\.\d{4}) .*\(running auc \d\.\d{4}(?: logloss (\d\.\d{4}))?\)`)
	n := 0
	for _, m := range progress.FindAllStringSubmatch(p.output(), -1) {
		n++
		if m[2] == m[1] {
			t.Errorf("a progress line prints the loss %s twice:\n%s", m[1], m[0])
		}
	}
	if n == 0 {
		t.Errorf("no progress line:\n%s", p.output())
	}
}

// exit waits for the process to exit and returns how it ended.
func (p *proc) exit(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(timeout):
		t.Fatalf("%s did not exit in %v:\n%s", p.name, timeout, p.output())
		return nil
	}
}
