package charttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// clusterTimeout bounds one run of the chart's cluster in containers.
const clusterTimeout = 10 * time.Minute

// TestContainerRunner renders the chart and runs every pod as a container
// of the project's image: the cluster forms, trains, snapshots and
// finishes; a second run has shard ams-1 killed after its first snapshot
// and restarted in place, and must end with the same exactly-once record.
func TestContainerRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the container runner takes minutes")
	}
	if _, err := Docker(context.Background(), "info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Skipf("Docker Engine not available, the container runner test cannot run: %v", err)
	}
	h := helm(t)
	image := buildImage(t)
	data := t.TempDir()
	generate(t, data)
	clean := runCluster(t, h, image, data, "clean", false, "")
	fault := runCluster(t, h, image, data, "fault", true, devCerts(t)) // and with mutual TLS and etcd auth
	for i := range clean {
		c, f := clean[i].ExactlyOnce, fault[i].ExactlyOnce
		if !c.Exact || !f.Exact || c.Samples != f.Samples || c.Digest != f.Digest || c.Samples == 0 {
			t.Errorf("worker %d: exactly-once record of the clean run %+v, of the run with a shard killed %+v: want both exact and equal", i, c, f)
		}
		t.Logf("worker %d: clean %d samples (test AUC %.4f), with a shard killed %d samples (test AUC %.4f), digest %d",
			i, c.Samples, clean[i].TestAUC, f.Samples, fault[i].TestAUC, f.Digest)
	}
}

// summary is what the test reads of a worker's JSON summary.
type summary struct {
	TestAUC     float64 `json:"test_auc"`
	ExactlyOnce struct {
		Exact   bool   `json:"exact"`
		Samples int64  `json:"samples"`
		Digest  uint64 `json:"digest"`
	} `json:"exactly_once"`
}

// buildImage builds the image with deploy/image/build.sh, once per test
// binary.
func buildImage(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() {
		cmd := exec.Command(filepath.Join(Root(), "deploy", "image", "build.sh"), "chart-test")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		imageTag, imageErr = strings.TrimSpace(string(out)), err
	})
	if imageErr != nil {
		t.Fatalf("deploy/image/build.sh: %v", imageErr)
	}
	return imageTag
}

var (
	imageOnce sync.Once
	imageTag  string
	imageErr  error
)

// generate writes the training and test files with cmd/ctrgen.
func generate(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "run", "./cmd/ctrgen", "-train", filepath.Join(dir, "train.libffm"),
		"-test", filepath.Join(dir, "test.libffm"), "-train-samples", "240000", "-test-samples", "20000")
	cmd.Dir = Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ctrgen: %v\n%s", err, out)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// runnerValues are the values of the runner's release: the built image,
// the data on a hostPath, snapshots every 30,000 samples, small pods.
func runnerValues(t *testing.T, image, data string) string {
	repo, tag, _ := strings.Cut(image, ":")
	v := fmt.Sprintf(`image: {repository: %q, tag: %q, pullPolicy: Never}
data:
  train: [/data/train.libffm]
  test: [/data/test.libffm]
  volume: {hostPath: {path: %q}}
snapshot: {store: /snapshots, every: -1s, everySamples: 30000, keep: 2}
etcd: {persistence: false}
ams: {resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 2Gi}}}
worker: {resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 3Gi}}}
scheduler: {rejoinWait: 5s}
logLevel: info
`, repo, tag, data)
	f := filepath.Join(t.TempDir(), "runner-values.yaml")
	if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// runCluster runs the chart's cluster to the end of its Job and returns
// the workers' summaries, by index. With kill, shard ams-1 is killed
// once the first snapshot is complete and restarted in place. With certs
// (a directory of deploy/tls/gen-dev-certs.sh), TLS is on: each
// component's Secret holds its role's certificate, and each worker's its
// own (tls.ownWorkerCerts: a Job per worker).
func runCluster(t *testing.T, h, image, data, name string, kill bool, certs string) []summary {
	values := []string{runnerValues(t, image, data)}
	var sets []string
	if certs != "" {
		sets = append(sets, "tls.enabled=true", "tls.ownWorkerCerts=true")
	}
	objs, err := Render(h, values, sets...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := NewRunner(objs, image, fmt.Sprintf("xpsrun-%s-%d-", name, os.Getpid()), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	t.Cleanup(r.Close)
	defer func() {
		if t.Failed() {
			r.dumpLogs(t)
		}
	}()
	if err := r.Network(ctx); err != nil {
		t.Fatal(err)
	}
	if certs != "" {
		provideSecrets(t, certs, dir)
	}
	r.startAll(t, ctx)
	for n, p := range r.Pods {
		if p.Kind != "Job" { // probes answer: every shard, scheduler and etcd member gets ready
			r.waitReady(t, ctx, n)
		}
	}
	if kill {
		r.killShard(t, ctx, filepath.Join(dir, "claims", "snapshots"))
	}
	sums := r.waitJob(t, ctx)
	if snaps, _ := filepath.Glob(filepath.Join(dir, "claims", "snapshots", "snap-*", "manifest.json")); len(snaps) == 0 {
		t.Errorf("%s: no complete snapshot in the snapshot claim", name)
	}
	if kill && !r.logged(ctx, "scheduler", "restore done") {
		t.Errorf("%s: no scheduler logged a restore after the shard was killed", name)
	}
	return sums
}

// startAll starts the etcd members, waits until they are ready, then
// starts every other pod at once (their order is left to restarts, as in
// a cluster).
func (r *Runner) startAll(t *testing.T, ctx context.Context) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range r.Pods {
			if !yield(n) {
				return
			}
		}
	})
	for _, first := range []bool{true, false} {
		for _, n := range names {
			if strings.HasPrefix(n, "etcd-") == first {
				if err := r.Start(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
		}
		if first {
			for _, n := range names {
				if strings.HasPrefix(n, "etcd-") {
					r.waitReady(t, ctx, n)
				}
			}
		}
	}
}

// waitReady polls a pod's readiness probe until it answers 200.
func (r *Runner) waitReady(t *testing.T, ctx context.Context, pod string) {
	for {
		if code, _, err := r.Get(ctx, pod, "ops", "/readyz"); err == nil && code == 200 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not ready: %v", pod, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// killShard waits for the first complete snapshot, kills ams-1 with
// SIGKILL while the workers still run, and starts its container again.
func (r *Runner) killShard(t *testing.T, ctx context.Context, snapDir string) {
	for {
		if m, _ := filepath.Glob(filepath.Join(snapDir, "snap-*", "manifest.json")); len(m) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no snapshot before the deadline: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, w := range r.jobPods() {
		if s, err := r.Inspect(ctx, w); err != nil || s.Status != "running" {
			t.Fatalf("worker %s is %+v (%v) at the first snapshot: the job is too short to kill a shard in it", w, s, err)
		}
	}
	if _, err := Docker(ctx, "kill", "--signal", "KILL", r.Container("ams-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := Docker(ctx, "start", r.Container("ams-1")); err != nil {
		t.Fatal(err)
	}
	t.Log("killed shard ams-1 after the first snapshot and restarted its container")
}

func (r *Runner) jobPods() []string {
	var out []string
	for n, p := range r.Pods {
		if p.Kind == "Job" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// waitJob waits until every Job pod has exited 0 and returns their JSON
// summaries, by completion index.
func (r *Runner) waitJob(t *testing.T, ctx context.Context) []summary {
	pods := r.jobPods()
	sums := make([]summary, len(pods))
	for i, pod := range pods {
		sums[i] = waitExited(t, ctx, r.Container(pod))
	}
	return sums
}

// logged reports whether a pod of the component logged msg.
func (r *Runner) logged(ctx context.Context, component, msg string) bool {
	for n, p := range r.Pods {
		if p.Labels["app.kubernetes.io/component"] == component {
			if _, stderr, _ := r.Logs(ctx, n); strings.Contains(stderr, msg) {
				return true
			}
		}
	}
	return false
}

func (r *Runner) dumpLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := range r.Pods {
		s, _ := r.Inspect(ctx, n)
		stdout, stderr, _ := r.Logs(ctx, n)
		t.Logf("== pod %s (%+v)\n%s\n%s", n, s, tail(stdout, 2000), tail(stderr, 4000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// devCerts makes development certificates with deploy/tls/gen-dev-certs.sh
// (openssl) and returns their directory.
func devCerts(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed: deploy/tls/gen-dev-certs.sh cannot make the certificates of the TLS run")
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(Root(), "deploy", "tls", "gen-dev-certs.sh"), dir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("WORKERS=%d", chartWorkers))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-dev-certs.sh: %v\n%s", err, out)
	}
	return dir
}

// chartWorkers is the chart's default worker.replicas.
const chartWorkers = 2

// provideSecrets lays out each component's TLS Secret (xps-<role>-tls,
// the chart's default names) and each worker's own (xps-worker-tls-<i>,
// from certs/worker-<i>) as the runner mounts Secrets made outside the
// chart: files readable by the pods' user, as defaultMode and fsGroup
// make them in a cluster.
func provideSecrets(t *testing.T, certs, dir string) {
	secrets := map[string]string{}
	for _, role := range []string{"etcd", "ams", "scheduler", "worker", "serve"} {
		secrets["xps-"+role+"-tls"] = role
	}
	for i := range chartWorkers {
		secrets[fmt.Sprintf("xps-worker-tls-%d", i)] = fmt.Sprintf("worker-%d", i)
	}
	for secret, role := range secrets {
		dst := filepath.Join(dir, "secrets", secret)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
			b, err := os.ReadFile(filepath.Join(certs, role, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
