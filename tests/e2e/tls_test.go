package e2e

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/testutil"
	"github.com/xdlgo/xps/tests/tlstest"
)

// tlsJobConfig is a short job: one epoch of 8000 samples.
const tlsJobConfig = `
model:
  tables: [{name: emb, dim: 8, optimizer: {name: adagrad, lr: 0.05}, init: {kind: uniform, scale: 0.01}}]
  hidden: [16]
train: {batch_size: 128, epochs: 1, progress_every: 1s}
data: {train_samples: 8000, test_samples: 2000, fields: 8, user_fields: 3, vocab: 2000, mean_bag: 2}
`

// tlsArgs are the -tls-* flags of a certificate of role from ca.
func tlsArgs(t *testing.T, ca *tlstest.CA, role string) []string {
	f := ca.Issue(t, role)
	return []string{"-tls-ca", f.CA, "-tls-cert", f.Cert, "-tls-key", f.Key}
}

// TestMultiProcessTLS runs a cluster of processes that speak mutual TLS
// everywhere, each with the certificate of its role: etcd (cmd/etcd,
// client-cert-auth, with auth on and a user and role per component:
// -auth-clusters, and a user for each worker: -auth-workers), two shards,
// a scheduler and two workers of their own certificates (CN worker-0 and
// worker-1). The workers train their job to the end (the scheduler
// restoring the shards into their version and the workers pulling and
// pushing under their roles, meeting at the final barrier),
// and an admin's snapshot request makes the scheduler write a snapshot
// through the shards. The worker's etcd user may not delete the shard
// map, and a worker whose certificate another CA signed is refused by
// etcd.
func TestMultiProcessTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := build(t)
	dir := t.TempDir()
	ca, foreign := tlstest.NewCA(t, "dev"), tlstest.NewCA(t, "foreign")
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, []byte(tlsJobConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	train, test, snaps := filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm"), filepath.Join(dir, "snaps")
	start(t, "ctrgen", filepath.Join(bin, "ctrgen"), "-config", cfg, "-train", train, "-test", test).wait(t, time.Minute)

	common, endpoint := startTLSCluster(t, bin, dir, ca, snaps, "-train", train, "-split-bytes", "65536", "-snapshot-every", "-1s")
	trainOwnWorkers(t, bin, ca, 8000, append(common, "-config", cfg, "-train", train, "-test", test, "-json", "-workers", "2"))

	// The admin asks for a snapshot: the scheduler writes it through the
	// shards' admin RPC, which only its role may call.
	snap := start(t, "snapshot-now", filepath.Join(bin, "scheduler"), append(append(common, tlsArgs(t, ca, tlsconf.RoleAdmin)...),
		"-snapshot-now")...)
	snap.wait(t, 2*time.Minute)
	if !strings.Contains(snap.output(), `"seq"`) {
		t.Fatalf("snapshot-now printed no snapshot result:\n%s", snap.output())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wcli, err := membership.Dial(ctx, []string{endpoint}, nil, membership.WithTLS(ca.Config(t, tlsconf.RoleWorker).Client()))
	if err != nil {
		t.Fatal(err)
	}
	defer wcli.Close()
	if _, err := wcli.Delete(ctx, controlplane.ShardMapKey("/xps/tls")); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("the worker's delete of the shard map: %v, want permission denied", err)
	}

	// A worker with another CA's certificate is refused by etcd.
	bad := exec.CommandContext(ctx, filepath.Join(bin, "worker"), append(append(common, tlsArgs(t, foreign, tlsconf.RoleWorker)...),
		"-config", cfg, "-train", train, "-workers", "1", "-worker-index", "0")...)
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "etcd does not answer") {
		t.Fatalf("a worker of another CA: %v, want refused by etcd:\n%s", err, out)
	}
}

// startTLSCluster starts a cluster "tls" of processes that speak mutual
// TLS everywhere, each with a certificate of its role from ca: etcd
// (cmd/etcd, client-cert-auth, auth on, a user and role per component and
// for worker-0 and worker-1: -auth-workers 2), a scheduler of 2 shards
// and 2 workers (with sched, its other flags) and the two shards, with
// the snapshot store store unless it is "". It returns the flags that
// join it (-etcd, -cluster) and etcd's endpoint.
func startTLSCluster(t *testing.T, bin, dir string, ca *tlstest.CA, store string, sched ...string) (common []string, endpoint string) {
	t.Helper()
	etcd := start(t, "etcd", filepath.Join(bin, "etcd"), append(tlsArgs(t, ca, tlsconf.RoleEtcd),
		"-addr", "127.0.0.1:0", "-dir", filepath.Join(dir, "etcd"), "-auth-clusters", "tls", "-auth-workers", "2")...)
	testutil.Eventually(t, time.Minute, "etcd's address line", func() bool {
		for _, line := range strings.Split(etcd.output(), "\n") {
			if _, err := fmt.Sscanf(line, "etcd serving on %s", &endpoint); err == nil {
				return true
			}
		}
		return false
	})
	common = []string{"-etcd", endpoint, "-cluster", "tls"}
	var shardStore []string
	if store != "" {
		sched, shardStore = append([]string{"-snapshot-store", store}, sched...), []string{"-store", store}
	}
	start(t, "scheduler", filepath.Join(bin, "scheduler"), append(append(append(common, tlsArgs(t, ca, tlsconf.RoleScheduler)...),
		"-shards", "2", "-workers", "2"), sched...)...)
	for i := range 2 {
		start(t, fmt.Sprintf("ams-%d", i), filepath.Join(bin, "ams"), append(append(append(common, tlsArgs(t, ca, tlsconf.RoleAMS)...),
			"-id", fmt.Sprintf("ams-%d", i)), shardStore...)...)
	}
	return common, endpoint
}

// trainOwnWorkers runs two workers (args, and each its -worker-index) to
// the end of their job, each with a certificate of its own (CN worker-0,
// worker-1): etcd knows them by -auth-workers, and the shards hold each
// to its own pushes. Both meet at the job's barriers, each arriving under
// its own keys. Every push must be applied exactly once, and the two must
// have trained want samples between them. It returns the workers.
func trainOwnWorkers(t *testing.T, bin string, ca *tlstest.CA, want int64, args []string) []*proc {
	t.Helper()
	var ws []*proc
	for i := range 2 {
		name := membership.WorkerName(i)
		own := ca.IssueSubject(t, pkix.Name{CommonName: name, OrganizationalUnit: []string{tlsconf.RoleWorker}})
		ws = append(ws, start(t, name, filepath.Join(bin, "worker"), append(append(args, "-tls-ca", own.CA, "-tls-cert", own.Cert,
			"-tls-key", own.Key), "-worker-index", fmt.Sprint(i))...))
	}
	var samples int64
	for _, w := range ws {
		w.wait(t, 5*time.Minute)
		s := lastJSON(t, w)
		t.Logf("%s with TLS: %+v", w.name, s)
		if s.Shards != 2 || s.ExactlyOnce == nil || !s.ExactlyOnce.Exact {
			t.Fatalf("%s's summary %+v: want 2 shards, every push applied exactly once", w.name, s)
		}
		samples += s.Samples
	}
	if samples != want {
		t.Fatalf("the workers trained %d samples, want %d", samples, want)
	}
	return ws
}

// TestSlideTLS runs a SLIDE job of 2 worker processes, each holding one
// share of the layer, in a cluster that speaks mutual TLS everywhere
// (startTLSCluster), each worker on a certificate of its own: the rounds
// between the workers' shares go over mutual TLS, each verifying the
// other as the worker it dials, and each worker publishes its share's
// address and meets the other at the shares' barrier under its own etcd
// role. The job ends exactly once.
func TestSlideTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := build(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "dev")
	train, test := filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")
	start(t, "xcgen", filepath.Join(bin, "xcgen"), "-features", "2000", "-labels", "500", "-nnz", "20", "-seed", "5",
		"-samples", "4000", "-test-samples", "500", "-out", train, "-test-out", test, "-quiet").wait(t, time.Minute)
	common, _ := startTLSCluster(t, bin, dir, ca, "")
	ws := trainOwnWorkers(t, bin, ca, 4000, append(common, "-output", "slide", "-format", "xml", "-train", train, "-test", test,
		"-workers", "2", "-dim", "32", "-sparsity", "0.05", "-epochs", "1", "-batch-size", "64", "-json"))
	for _, w := range ws {
		if out := w.output(); !strings.Contains(out, "share of the SLIDE layer on") || !strings.Contains(out, "(mutual TLS, to workers only)") {
			t.Fatalf("%s did not serve its share of the layer over mutual TLS:\n%s", w.name, out)
		}
	}
}
