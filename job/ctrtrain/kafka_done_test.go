package ctrtrain

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestKafkaDoneWorkerSyncsToNothing is the hang the fault soak found
// (issue 51, seed 140808148230033572 under stress-ng): a worker had read
// its partitions to their end at cluster version 3 (marked done) and
// waited at the final barrier; it lost its lease in an etcd outage,
// registered again and resumed at version 3, and waited for a partition
// deal naming it, which the scheduler never makes for a worker done at
// the version: the job never ended. Its sync must take the current deal,
// which gives it nothing to read, and go on to the barrier.
func TestKafkaDoneWorkerSyncsToNothing(t *testing.T) {
	etcd := testutil.StartEtcd(t)
	conn := testutil.Conn(testutil.EtcdClient(t, etcd.Endpoints()), "/xps/done-sync")
	ctx := testutil.JobCtx(t)
	const version = 3
	publish := func(a controlplane.PartitionAssignment) {
		t.Helper()
		_, rev, err := conn.PartitionsDone(ctx, version)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := conn.PutPartitionAssignmentIf(ctx, a, rev); err != nil || !ok {
			t.Fatalf("publish deal %d: %v %v", a.Generation, ok, err)
		}
	}
	publish(controlplane.DealPartitions(1, "ctr", 4, []string{"worker-0", "worker-1"}))
	if ok, err := conn.MarkPartitionsDone(ctx, "worker-0", 1, version); err != nil || !ok {
		t.Fatalf("mark done: %v %v", ok, err)
	}
	// worker-0's lease is lost: the scheduler deals the partitions to the
	// workers not done at the version.
	publish(controlplane.DealPartitions(2, "ctr", 4, []string{"worker-1"}))
	kj := &kafkaJob{conn: conn, name: "worker-0", dealt: true, version: version, say: t.Logf}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := kj.sync(sctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a worker done at version %d waited for a deal naming it, which none will: %v", version, err)
		}
		t.Fatal(err)
	}
	if kj.assign.Generation != 2 || kj.assign.Of("worker-0") != nil {
		t.Fatalf("the deal taken: %+v; want deal 2, with nothing for worker-0", kj.assign)
	}
	// At another version (a restore: the model is read again from what it
	// holds) the mark is stale: the worker waits for a deal naming it.
	kj = &kafkaJob{conn: conn, name: "worker-0", dealt: true, version: version + 1, say: t.Logf}
	sctx, cancel = context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := kj.sync(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sync at version %d = %v, deal %+v: want it waiting for a deal naming worker-0", version+1, err, kj.assign)
	}
}
