package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/tests/testutil"
)

// moduleRoot finds the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// The commands, built once for the package's tests (build).
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// build returns the directory of every command under cmd/, compiled once
// for all the package's tests into a directory TestMain removes (without
// the race detector: these are the processes under test, not the test
// itself). Each test used to link its own: about 12 s of the package's
// time per test. XPS_E2E_BIN names a directory the commands are in
// already (built by the caller, who keeps it).
func build(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if dir := os.Getenv("XPS_E2E_BIN"); dir != "" { // built by the caller (bench/fault_soak.sh), kept
			binDir, binErr = dir, nil
			if _, err := os.Stat(filepath.Join(dir, "worker")); err != nil {
				binErr = fmt.Errorf("XPS_E2E_BIN=%s: %w (go build -o DIR/ ./cmd/... fills it)", dir, err)
			}
			return
		}
		if binDir, binErr = os.MkdirTemp("", "xps-e2e-bin-"); binErr != nil {
			return
		}
		began := time.Now()
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "./cmd/...")
		cmd.Dir = moduleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/...: %v\n%s", err, out)
			return
		}
		t.Logf("the commands built in %.1fs (once for the package)", time.Since(began).Seconds())
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// proc is a child process whose output is kept for failure reports.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
	mu   sync.Mutex
	done chan error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func start(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return startIn(t, t.TempDir(), name, bin, args...) // what it writes in its working directory (worker -local: xps-models/) goes too
}

// startIn is start in the working directory dir.
func startIn(t *testing.T, dir, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("--- output of %s:\n%s", name, p.output())
		}
	})
	return p
}

// wait waits for the process to exit and fails the test on error.
func (p *proc) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // keep it for Cleanup
		if err != nil {
			t.Fatalf("%s exited with %v:\n%s", p.name, err, p.output())
		}
	case <-time.After(timeout):
		t.Fatalf("%s did not finish in %v:\n%s", p.name, timeout, p.output())
	}
}

type summary struct {
	Samples          int64   `json:"samples"`
	SamplesPerSecond float64 `json:"samples_per_second"`
	TestAUC          float64 `json:"test_auc"`
	TestLogLoss      float64 `json:"test_logloss"`
	Shards           int     `json:"shards"`
	// ExactlyOnce is the shards' account of the worker's pushes.
	ExactlyOnce *struct {
		Exact       bool   `json:"exact"`
		Batches     uint64 `json:"batches"`
		Samples     int64  `json:"samples"`
		Problem     string `json:"problem"`
		NotVerified string `json:"not_verified"`
	} `json:"exactly_once"`
}

// lastJSON decodes the last line of a worker's output.
func lastJSON(t *testing.T, p *proc) summary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(p.output()), "\n")
	var s summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("%s: last line is not JSON: %v\n%s", p.name, err, p.output())
	}
	return s
}

const jobConfig = `
model:
  tables: [{name: emb, dim: 8, optimizer: {name: adagrad, lr: 0.05}, init: {kind: uniform, scale: 0.01}}]
  hidden: [32, 16]
train: {batch_size: 128, epochs: 2, progress_every: 1s}
data: {train_samples: 40000, test_samples: 10000, fields: 8, user_fields: 3, vocab: 2000, mean_bag: 2}
`

// TestMultiProcessCluster runs 2 AMS processes, a scheduler and first one
// worker, then (on a fresh cluster) two workers sharing the same training
// file; the two-worker AUC must be within 0.005 of the one-worker AUC. It
// then kills a shard and checks that the scheduler reports its expired lease.
func TestMultiProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	etcd, err := etcdembed.Start(ctx, etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, []byte(jobConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	train, test := filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm")
	gen := start(t, "ctrgen", filepath.Join(bin, "ctrgen"), "-config", cfg, "-train", train, "-test", test)
	gen.wait(t, time.Minute)

	job := multiJob{bin: bin, etcd: strings.Join(etcd.Endpoints(), ","), cfg: cfg, train: train, test: test}
	one, _ := job.run(t, "one", 1)
	two, shards := job.run(t, "two", 2)
	t.Logf("one worker: %+v", one[0])
	t.Logf("two workers: %+v / %+v", two[0], two[1])
	if one[0].Shards != 2 || one[0].Samples != 80000 {
		t.Fatalf("one-worker run: %+v, want 2 shards and 2 epochs of 40000 samples", one[0])
	}
	// The scheduler cut the file in two byte ranges: together the workers
	// read every sample exactly once per epoch.
	if two[0].Samples+two[1].Samples != 80000 || two[0].Samples < 30000 || two[1].Samples < 30000 {
		t.Fatalf("two workers trained %d and %d samples, want about 40000 each and 80000 in all", two[0].Samples, two[1].Samples)
	}
	if one[0].TestAUC < 0.6 {
		t.Fatalf("one-worker AUC %.4f: the model did not learn", one[0].TestAUC)
	}
	for i, s := range two {
		if d := math.Abs(s.TestAUC - one[0].TestAUC); d > 0.005 {
			t.Errorf("worker %d of 2: AUC %.4f differs from the one-worker AUC %.4f by %.4f > 0.005", i, s.TestAUC, one[0].TestAUC, d)
		}
	}

	// Kill a shard without a clean leave: the scheduler reports its lease expiry.
	shards[1].cmd.Process.Kill()
	waitLeaseExpired(t, ctx, etcd.Endpoints(), "two", "ams-1")
}

// multiJob is the job TestMultiProcessCluster runs on two clusters.
type multiJob struct {
	bin, etcd        string // the built commands, the etcd endpoints
	cfg, train, test string
}

// run runs the job on a fresh cluster, name, of 2 shards and workers
// workers, and returns the workers' summaries and the shards' processes.
func (j multiJob) run(t *testing.T, name string, workers int) ([]summary, []*proc) {
	common := []string{"-etcd", j.etcd, "-cluster", name}
	start(t, name+"/scheduler", filepath.Join(j.bin, "scheduler"), append(common, "-shards", "2", "-lease-ttl", "2s",
		"-train", j.train, "-workers", fmt.Sprint(workers), "-split-bytes", "4096")...)
	var shards []*proc
	for i := 0; i < 2; i++ {
		shards = append(shards, start(t, fmt.Sprintf("%s/ams-%d", name, i), filepath.Join(j.bin, "ams"),
			append(common, "-id", fmt.Sprintf("ams-%d", i), "-lease-ttl", "2s")...))
	}
	var ws []*proc
	for i := 0; i < workers; i++ {
		ws = append(ws, start(t, fmt.Sprintf("%s/worker-%d", name, i), filepath.Join(j.bin, "worker"),
			append(common, "-config", j.cfg, "-train", j.train, "-test", j.test, "-json",
				"-workers", fmt.Sprint(workers), "-worker-index", fmt.Sprint(i))...))
	}
	var out []summary
	for _, w := range ws {
		w.wait(t, 5*time.Minute)
		out = append(out, lastJSON(t, w))
	}
	return out, shards
}

// waitLeaseExpired waits for the scheduler of cluster name to report the
// expired lease of shard id (controlplane.EventLeaseExpired).
func waitLeaseExpired(t *testing.T, ctx context.Context, endpoints []string, name, id string) {
	t.Helper()
	cli, err := membership.Dial(ctx, endpoints, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	prefix, _ := membership.Prefix(name)
	testutil.Eventually(t, 30*time.Second, "the scheduler's lease-expiry event for "+id, func() bool {
		events, err := testutil.Conn(cli, prefix).ListEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Type == controlplane.EventLeaseExpired && e.Member != nil && e.Member.Kind == membership.KindAMS && e.Member.ID == id {
				return true
			}
		}
		return false
	})
}

// TestMultiProcessHDFS runs the HDFS test server (cmd/hdfsd), puts the
// generated data on it with cmd/hdfsput, and trains two worker processes
// from hdfs:// paths, the scheduler splitting the file between them: every
// sample is read once per epoch and the model learns.
func TestMultiProcessHDFS(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	etcd, err := etcdembed.Start(ctx, etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, []byte(jobConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	train, test := filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm")
	start(t, "ctrgen", filepath.Join(bin, "ctrgen"), "-config", cfg, "-train", train, "-test", test).wait(t, time.Minute)
	hd := start(t, "hdfsd", filepath.Join(bin, "hdfsd"), "-addr", "127.0.0.1:0", "-block-size", "1048576")
	var nn string
	testutil.Eventually(t, 30*time.Second, "hdfsd's address line", func() bool {
		_, err := fmt.Sscanf(hd.output(), "hdfsd: namenode %s", &nn)
		return err == nil
	})
	root := "hdfs://" + nn + "/ctr/"
	start(t, "hdfsput", filepath.Join(bin, "hdfsput"), train, test, root).wait(t, time.Minute)

	common := []string{"-etcd", strings.Join(etcd.Endpoints(), ","), "-cluster", "hdfs"}
	start(t, "scheduler", filepath.Join(bin, "scheduler"), append(common, "-shards", "2",
		"-train", root+"train*", "-workers", "2", "-split-bytes", "4096")...)
	for i := range 2 {
		start(t, fmt.Sprintf("ams-%d", i), filepath.Join(bin, "ams"), append(common, "-id", fmt.Sprintf("ams-%d", i))...)
	}
	var ws []*proc
	for i := range 2 {
		ws = append(ws, start(t, fmt.Sprintf("worker-%d", i), filepath.Join(bin, "worker"),
			append(common, "-config", cfg, "-train", root+"train*", "-test", root+"test.libffm", "-json",
				"-workers", "2", "-worker-index", fmt.Sprint(i))...))
	}
	var sums []summary
	for _, w := range ws {
		w.wait(t, 5*time.Minute)
		sums = append(sums, lastJSON(t, w))
	}
	t.Logf("two workers from HDFS: %+v / %+v", sums[0], sums[1])
	if sums[0].Samples+sums[1].Samples != 80000 || sums[0].Samples < 30000 || sums[1].Samples < 30000 {
		t.Fatalf("workers trained %d and %d samples, want about 40000 each and 80000 in all", sums[0].Samples, sums[1].Samples)
	}
	for i, s := range sums {
		if s.TestAUC < 0.6 {
			t.Errorf("worker %d: test AUC %.4f: the model did not learn", i, s.TestAUC)
		}
	}
}
