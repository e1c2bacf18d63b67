package e2e

import (
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
