package controlplane_test

import (
	"crypto/x509/pkix"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/testutil"
	"github.com/xdlgo/xps/tests/tlstest"
)

// authEtcd starts an etcd with mutual TLS (client-cert-auth) and returns
// a dialer of clients by role (the CN of their certificate is their
// etcd user), or by a worker's own name (worker-N: a certificate of the
// worker role with that CN).
func authEtcd(t *testing.T) func(role string) *clientv3.Client {
	t.Helper()
	ca := tlstest.NewCA(t, "dev")
	srv, err := etcdembed.Start(testutil.Ctx(t, 30*time.Second), etcdembed.Options{Dir: t.TempDir(), UnsafeNoFsync: true,
		TLS: ca.Issue(t, tlsconf.RoleEtcd)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return func(role string) *clientv3.Client {
		var c *tlsconf.Config
		if strings.HasPrefix(role, "worker-") {
			var err error
			if c, err = tlsconf.Load(ca.IssueSubject(t, pkix.Name{CommonName: role, OrganizationalUnit: []string{tlsconf.RoleWorker}})); err != nil {
				t.Fatal(err)
			}
		} else {
			c = ca.Config(t, role)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second, TLS: c.Client()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
}

// TestProvisionAuth: once the cluster's etcd users and roles are
// provisioned and auth enabled, a worker may not delete or overwrite the
// scheduler's shard map nor write the cluster's resume (a one-key failure
// of the whole cluster before), while the scheduler may; a worker and a
// shard register and leave under their own records only; a certificate
// of no etcd user reads nothing; only the admin provisions again.
func TestProvisionAuth(t *testing.T) {
	dial := authEtcd(t)
	ctx := testutil.Ctx(t, time.Minute)
	const p = "/xps/auth"
	admin, sched, worker, shard := dial(tlsconf.RoleAdmin), dial(tlsconf.RoleScheduler), dial(tlsconf.RoleWorker), dial(tlsconf.RoleAMS)
	if err := controlplane.ProvisionAuth(ctx, admin, p, 2, io.Discard); err != nil {
		t.Fatal(err)
	}
	shardMap := controlplane.ShardMapKey(p)
	if _, err := sched.Put(ctx, shardMap, "{}"); err != nil {
		t.Fatalf("scheduler's put of the shard map: %v", err)
	}
	denied := func(who string, err error) {
		t.Helper()
		if !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("%s: %v, want permission denied", who, err)
		}
	}
	_, err := worker.Delete(ctx, shardMap)
	denied("worker's delete of the shard map", err)
	_, err = worker.Put(ctx, shardMap, "{}")
	denied("worker's put of the shard map", err)
	_, err = worker.Put(ctx, controlplane.ResumeKey(p), "failed by a worker")
	denied("worker's put of the resume", err)
	_, err = shard.Put(ctx, controlplane.MemberKey(p, membership.KindWorker, "worker-0"), "{}")
	denied("shard's put of a worker's record", err)
	_, err = worker.Put(ctx, "/xps/other/shardmap", "{}")
	denied("worker's put in another cluster", err)
	if resp, err := worker.Get(ctx, shardMap); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("worker's read of the shard map: %v, %v", resp, err)
	}
	if _, err := dial(tlsconf.RoleServe).Get(ctx, shardMap); err == nil {
		t.Error("a certificate of no etcd user read the shard map")
	}
	for _, c := range []struct {
		cli  *clientv3.Client
		kind string
	}{{worker, membership.KindWorker}, {shard, membership.KindAMS}} {
		reg, err := membership.Register(ctx, c.cli, p, membership.Member{Kind: c.kind, ID: c.kind + "-0"}, 5*time.Second)
		if err != nil {
			t.Fatalf("%s registers: %v", c.kind, err)
		}
		if err := reg.Close(); err != nil {
			t.Fatalf("%s leaves: %v", c.kind, err)
		}
	}
	for _, k := range workerWrites(p, "worker-0", true) {
		if _, err := worker.Put(ctx, k, "{}"); err != nil {
			t.Errorf("the shared worker's put of %s: %v", k, err)
		}
	}
	if _, err := sched.Delete(ctx, shardMap); err != nil {
		t.Fatalf("scheduler's delete of the shard map: %v", err)
	}
	ownWorkerAccess(t, dial, p)
	denied("worker's provisioning", controlplane.ProvisionAuth(ctx, worker, p, 0, io.Discard))
	if err := controlplane.ProvisionAuth(ctx, admin, p, 2, io.Discard); err != nil {
		t.Fatalf("admin's provisioning again: %v", err)
	}
}

// workerWrites are the keys a worker named name writes in the protocols
// (keys.go's table): its records, acknowledgements, progress, an arrival
// at a barrier, its SLIDE shard's address, and with first the requests
// of a job's first worker (its best model, the rollback to it, the final
// export). A key missing from a worker's etcd role fails that protocol
// under TLS (the end of a Kafka worker's partitions did, before this
// list was tested).
func workerWrites(p, name string, first bool) []string {
	i, _ := membership.WorkerIndex(name)
	keys := []string{controlplane.ProgressKey(p, name), controlplane.MemberKey(p, membership.KindWorker, name),
		controlplane.LeftKey(p, membership.KindWorker, name), controlplane.PauseAckKey(p, name),
		controlplane.PartitionsAckKey(p, name), controlplane.PartitionsDoneKey(p, name),
		controlplane.BarrierKey(p, membership.KindWorker, name, "final-eval"), controlplane.OwnerAddrKey(p, i)}
	if first {
		keys = append(keys, controlplane.SnapshotRequestKey(p), controlplane.RollbackRequestKey(p), controlplane.ExportRequestKey(p))
	}
	return keys
}

// ownWorkerAccess: a worker of its own certificate (worker-1, of the 2
// provisioned) is an etcd user that writes its own records only
// (WorkerAccess: not worker-0's, nor the requests only a job's first
// worker makes, which worker-0 may); one beyond the workers provisioned
// (worker-2) is none.
func ownWorkerAccess(t *testing.T, dial func(string) *clientv3.Client, p string) {
	t.Helper()
	ctx := testutil.Ctx(t, time.Minute)
	denied := func(who string, err error) {
		t.Helper()
		if !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("%s: %v, want permission denied", who, err)
		}
	}
	w0, w1 := dial("worker-0"), dial("worker-1")
	reg, err := membership.Register(ctx, w1, p, membership.Member{Kind: membership.KindWorker, ID: "worker-1"}, 5*time.Second)
	if err != nil {
		t.Fatalf("worker-1 registers: %v", err)
	}
	if err := reg.Close(); err != nil {
		t.Fatalf("worker-1 leaves: %v", err)
	}
	for _, k := range workerWrites(p, "worker-1", false) {
		if _, err := w1.Put(ctx, k, "{}"); err != nil {
			t.Errorf("worker-1's put of %s: %v", k, err)
		}
	}
	for _, k := range workerWrites(p, "worker-0", true) {
		_, err := w1.Put(ctx, k, "{}")
		denied("worker-1's put of "+k, err)
		if _, err := w0.Put(ctx, k, "{}"); err != nil {
			t.Errorf("worker-0's put of %s: %v", k, err)
		}
	}
	for _, k := range []string{controlplane.ShardMapKey(p), controlplane.MemberKey(p, membership.KindWorker, "worker-12"),
		controlplane.BarrierKey(p, membership.KindAMS, "ams-0", "final-eval")} {
		_, err := w1.Put(ctx, k, "{}")
		denied("worker-1's put of "+k, err)
	}
	if _, err := dial("worker-2").Get(ctx, controlplane.ShardMapKey(p)); err == nil {
		t.Error("worker-2, beyond the 2 workers provisioned, read the shard map")
	}
}
