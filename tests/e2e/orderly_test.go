package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdlgo/xps/tests/testutil"
)

const orderlyConfig = `
model:
  tables: [{name: emb, dim: 4, optimizer: {name: adagrad, lr: 0.05}, init: {kind: uniform, scale: 0.01}}]
  hidden: [8]
train: {batch_size: 128, epochs: 1}
data: {train_samples: 4000, test_samples: 1000, fields: 6, user_fields: 2, vocab: 500, mean_bag: 2}
`

// TestOrderlyStop runs a two-worker job to its end on the built binaries,
// then stops the shards with SIGTERM, as the README's walkthrough does
// (issue 21, item 6): a finished job and an orderly stop are no failure,
// so the scheduler logs the cluster STOPPED and no ERROR (it logged "the
// cluster cannot recover ... no good snapshot to restore" before).
func TestOrderlyStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binaries")
	}
	bin := build(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, []byte(orderlyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	train, test := filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm")
	start(t, "ctrgen", filepath.Join(bin, "ctrgen"), "-config", cfg, "-train", train, "-test", test).wait(t, time.Minute)
	etcd := testutil.StartEtcd(t)
	common := []string{"-etcd", etcd.Endpoints()[0]}
	sched := start(t, "scheduler", filepath.Join(bin, "scheduler"), append(common, "-shards", "2", "-train", train, "-workers", "2")...)
	var shards, workers []*proc
	for i := range 2 {
		shards = append(shards, start(t, fmt.Sprintf("ams-%d", i), filepath.Join(bin, "ams"), append(common, "-id", fmt.Sprintf("ams-%d", i))...))
	}
	for i := range 2 {
		workers = append(workers, start(t, fmt.Sprintf("worker-%d", i), filepath.Join(bin, "worker"), append(common, "-config", cfg,
			"-train", train, "-test", test, "-workers", "2", "-worker-index", fmt.Sprint(i))...))
	}
	for _, w := range workers {
		w.wait(t, 3*time.Minute)
	}
	for _, s := range shards {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, s := range shards {
		s.wait(t, time.Minute)
	}
	testutil.Eventually(t, 30*time.Second, "the scheduler to log the cluster stopped", func() bool {
		return strings.Contains(sched.output(), "to=STOPPED(v")
	})
	sched.cmd.Process.Signal(syscall.SIGTERM)
	sched.wait(t, time.Minute)
	if out := sched.output(); strings.Contains(out, "level=ERROR") {
		t.Errorf("the scheduler logged an ERROR for a finished job and an orderly stop:\n%s", out)
	}
}

// stopBound is how long a worker given SIGTERM may take to leave whatever
// etcd does (issue 51): within Kubernetes' default grace period of 30 s,
// with room for a slow machine.
const stopBound = 20 * time.Second

// TestStopWithoutEtcd gives SIGTERM to a training worker while etcd is
// unreachable (stopped): the worker stores what it can (its checkpoint,
// in the shards), says what it could not check, and is gone within
// stopBound; its verdict is not "exactly-once" but "not verified", since
// the scheduler's record of the cluster's restores, in etcd, could not be
// read. The stop is keyed to the worker's first progress line.
func TestStopWithoutEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binaries")
	}
	bin := build(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "job.yaml")
	long := strings.Replace(orderlyConfig, "train_samples: 4000", "train_samples: 50000000", 1)
	long = strings.Replace(long, "epochs: 1}", "epochs: 1, progress_every: 100ms}", 1)
	if err := os.WriteFile(cfg, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	etcd := testutil.StartEtcd(t)
	common := []string{"-etcd", etcd.Endpoints()[0]}
	start(t, "scheduler", filepath.Join(bin, "scheduler"), append(common, "-shards", "1", "-workers", "1")...)
	start(t, "ams-0", filepath.Join(bin, "ams"), append(common, "-id", "ams-0")...)
	w := start(t, "worker-0", filepath.Join(bin, "worker"), append(common, "-config", cfg, "-json")...)
	testutil.Eventually(t, 3*time.Minute, "the worker's first progress line", func() bool {
		return strings.Contains(w.output(), "samples/s")
	})
	etcd.Close()
	began := time.Now()
	w.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-w.done:
		w.done <- err
	case <-time.After(2 * time.Minute):
		t.Fatalf("the worker was not gone 2 minutes after SIGTERM with etcd stopped:\n%s", w.output())
	}
	took := time.Since(began)
	t.Logf("the worker left %.1fs after SIGTERM with etcd stopped (exit: %v)", took.Seconds(), err)
	if took > stopBound {
		t.Errorf("the worker took %.1fs to leave after SIGTERM with etcd stopped, more than %v:\n%s", took.Seconds(), stopBound, w.output())
	}
	out := w.output()
	if strings.Contains(out, "exactly-once, by the shards' records") {
		t.Errorf("the worker claims exactly-once although etcd could not be read:\n%s", out)
	}
	var s summary // -json: the summary is printed on a stop too, with the verdict
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, `{"`) {
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Fatalf("the worker's JSON summary: %v\n%s", err, l)
			}
		}
	}
	switch v := s.ExactlyOnce; {
	case v == nil:
		t.Errorf("the worker printed no JSON summary with its verdict on the stop:\n%s", out)
	case v.Exact || !strings.Contains(v.NotVerified, "etcd"):
		t.Errorf("the JSON verdict is exact %v, not_verified %q: want not exact, not verified for etcd", v.Exact, v.NotVerified)
	}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "{") && (strings.Contains(l, "exactly-once") || strings.Contains(l, "stopped")) {
			t.Logf("the worker said: %s", l)
		}
	}
	if !strings.Contains(out, "not verified") {
		t.Errorf("the worker's verdict does not say it is not verified:\n%s", out)
	}
}
