package amsnode_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/cluster/amsnode"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/tests/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLostLeaseRegistersAgain revokes a node's lease, as an etcd outage
// longer than the TTL ends it: the node must not stop (before the fix the
// shard process exited, taking the model with it) but register again as
// the same member, with its rows intact.
func TestLostLeaseRegistersAgain(t *testing.T) {
	srv := testutil.StartEtcd(t)
	cli := testutil.EtcdClient(t, srv.Endpoints())
	ctx := testutil.Ctx(t, time.Minute)
	const p = "/xps/node-test"
	n, err := amsnode.Start(ctx, cli, amsnode.Options{ID: "ams-0", Prefix: p, LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	s := n.Shard()
	if err := s.Begin(1, 0); err != nil {
		t.Fatal(err)
	}
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Push(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: []float32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	key := membership.MemberKey(p, membership.KindAMS, "ams-0")
	get := func() (clientv3.LeaseID, membership.Member) {
		resp, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return 0, membership.Member{}
		}
		m, err := membership.DecodeMember(membership.KindAMS, "ams-0", resp.Kvs[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease), m
	}
	lease, before := get()
	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the node registered again", func() bool {
		l, _ := get()
		return n.Registrations() == 2 && l != 0 && l != lease
	})
	_, after := get()
	if after.PID != before.PID || !after.Started.Equal(before.Started) || after.Addr != before.Addr {
		t.Fatalf("registered again as %+v, was %+v: not the same member's life", after, before)
	}
	row := make([]float32, 2)
	if err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: row}}, false); err != nil || !slices.Equal(row, []float32{-1, -2}) {
		t.Fatalf("row after the lost lease = %v, %v; want [-1 -2]", row, err)
	}
}

// TestStores: the node's shard uses the snapshot stores under its roots
// (Options.Stores) and refuses others; a malformed root is refused by
// Start.
func TestStores(t *testing.T) {
	ctx := testutil.Ctx(t, time.Minute)
	if _, err := amsnode.Start(ctx, nil, amsnode.Options{ID: "ams-0", Stores: []string{"hdfs://"}}); !errors.Is(err, ams.ErrBadSpec) {
		t.Fatalf("Start with a malformed store root = %v, want ams.ErrBadSpec", err)
	}
	srv := testutil.StartEtcd(t)
	cli := testutil.EtcdClient(t, srv.Endpoints())
	root := t.TempDir()
	n, err := amsnode.Start(ctx, cli, amsnode.Options{ID: "ams-0", Prefix: "/xps/node-stores", Stores: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Shard().Begin(1, 0); err != nil {
		t.Fatal(err)
	}
	svc := shard.NewService(n.Shard())
	if _, err := svc.WriteSnapshot(ctx, &amspb.WriteSnapshotRequest{ClusterVersion: 1, Store: filepath.Join(root, "snaps"), Seq: 1}); err != nil {
		t.Errorf("a snapshot under the root: %v", err)
	}
	if _, err := svc.WriteSnapshot(ctx, &amspb.WriteSnapshotRequest{ClusterVersion: 1, Store: root + "/../elsewhere", Seq: 1}); !errors.Is(err, ams.ErrStoreNotAllowed) {
		t.Errorf("a snapshot outside the root = %v, want ams.ErrStoreNotAllowed", err)
	}
}
