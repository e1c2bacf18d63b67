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
// -auth-clusters, and a user for worker-0: -auth-workers), two shards, a
// scheduler and a worker of its own certificate (CN worker-0). The worker
// trains its job to the end (the scheduler restoring the shards into
// their version and the worker pulling and pushing under their roles),
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

	etcd := start(t, "etcd", filepath.Join(bin, "etcd"), append(tlsArgs(t, ca, tlsconf.RoleEtcd),
		"-addr", "127.0.0.1:0", "-dir", filepath.Join(dir, "etcd"), "-auth-clusters", "tls", "-auth-workers", "1")...)
	var endpoint string
	testutil.Eventually(t, time.Minute, "etcd's address line", func() bool {
		for _, line := range strings.Split(etcd.output(), "\n") {
			if _, err := fmt.Sscanf(line, "etcd serving on %s", &endpoint); err == nil {
				return true
			}
		}
		return false
	})
	common := []string{"-etcd", endpoint, "-cluster", "tls"}
	start(t, "scheduler", filepath.Join(bin, "scheduler"), append(append(common, tlsArgs(t, ca, tlsconf.RoleScheduler)...),
		"-shards", "2", "-train", train, "-workers", "1", "-snapshot-store", snaps, "-snapshot-every", "-1s")...)
	for i := range 2 {
		start(t, fmt.Sprintf("ams-%d", i), filepath.Join(bin, "ams"), append(append(common, tlsArgs(t, ca, tlsconf.RoleAMS)...),
			"-id", fmt.Sprintf("ams-%d", i), "-store", snaps)...)
	}
	// The worker has a certificate of its own (CN worker-0): etcd knows
	// it by -auth-workers, and the shards hold it to its own pushes.
	own := ca.IssueSubject(t, pkix.Name{CommonName: "worker-0", OrganizationalUnit: []string{tlsconf.RoleWorker}})
	w := start(t, "worker-0", filepath.Join(bin, "worker"), append(append(common, "-tls-ca", own.CA, "-tls-cert", own.Cert, "-tls-key", own.Key),
		"-config", cfg, "-train", train, "-test", test, "-json", "-workers", "1", "-worker-index", "0")...)
	w.wait(t, 5*time.Minute)
	s := lastJSON(t, w)
	t.Logf("worker with TLS: %+v", s)
	if s.Shards != 2 || s.Samples != 8000 || s.ExactlyOnce == nil || !s.ExactlyOnce.Exact {
		t.Fatalf("worker summary %+v: want 2 shards, 8000 samples, every push applied exactly once", s)
	}

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
