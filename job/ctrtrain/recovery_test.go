package ctrtrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestRecovery trains two workers on two files while a shard is restarted
// (its rows lost) and then a worker dies (its lease revoked, as when its
// process is killed) and is started again: each time the cluster rolls
// back to the latest snapshot at a new version and the workers resume
// from the checkpoints the restored model holds. The samples applied in
// the final model's history are the dataset, once per epoch, exactly.
// It runs in both modes: asynchronous, and sync mode, where the rounds'
// progress is restored with the model. The asynchronous workers call the
// shards directly on their batch buffers (job.Options.Local, the default
// of worker -local); the sync-mode ones pull and push over loopback gRPC,
// so both data paths meet a restarted shard.
func TestRecovery(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		t.Run(mode, func(t *testing.T) { testRecovery(t, mode == "sync") })
	}
}

func testRecovery(t *testing.T, syncMode bool) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	dir := t.TempDir()
	perFile := 20000
	if raceEnabled { // about 20 times slower: fewer samples, the same faults
		perFile = 4000
	}
	train := writeGenFiles(t, dir, 7, 2, perFile)
	snaps := filepath.Join(dir, "snapshots")
	prefix := "/xps/recovery-test"
	if syncMode {
		prefix += "-sync"
	}
	// Snapshots are the test's own (RequestSnapshot), each taken once the
	// workers have trained far enough.
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: prefix, LeaseTTL: time.Second, RejoinWait: -1, // fault 2 is a death
		Config: config.Config{Job: config.JobConfig{Train: train, Workers: 2}, Snapshot: snapshot.Policy{Store: snaps, Every: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := streamedConfig(7)
	cfg.Train.Epochs = 3
	cfg.Train.Sync = syncMode

	// Every worker reads through a gate (budgets in lines of its file, L):
	// the job needs 4L per worker at least (LoadData reads the file whole
	// first, perFile <= peekSamples, then 3 epochs), and the budget stays
	// below that until the last fault is done, so no worker can finish
	// before it, however fast the machine.
	L := int64(perFile)
	names := []string{membership.WorkerName(0), membership.WorkerName(1)}
	w := startRecoveryWorkers(ctx, lc, cfg, train, syncMode, names, L+L/2) // half of epoch 1
	defer func() {
		cancel() // a failed test releases its workers
		w.wg.Wait()
		if t.Failed() {
			w.log(t)
		}
	}()

	// The faults, each once the cluster serves and a snapshot at the
	// current version holds rows and checkpoints with enough samples
	// applied.
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	// Fault 1: a shard loses its rows once a snapshot holds the workers a
	// quarter into epoch 1 (the gates hold them at half of it); then they
	// may train on until they notice.
	v := waitServing(t, ctx, lc, 1)
	seq := snapshotWithApplied(t, ctx, lc, store, names, v, L/4)
	t.Logf("restarting shard 1 at version %d after snapshot %d", v, seq)
	if err := lc.RestartShard(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.raise(L / 2)
	v = waitServing(t, ctx, lc, v+1)
	// Fault 2: worker-0 dies once a snapshot holds the restored workers
	// three quarters into epoch 1, past the checkpoints restored (taken
	// at most half into it): they trained at the new version.
	w.raise(L)
	seq = snapshotWithApplied(t, ctx, lc, store, names, v, 3*L/4)
	t.Logf("killing worker-0 at version %d after snapshot %d", v, seq)
	lease := workerLease(t, ctx, lc, membership.WorkerName(0))
	w.raise(L / 2) // 3.5L: still short of the end
	if _, err := lc.Etcd().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	waitServing(t, ctx, lc, v+1)
	for _, g := range w.gates {
		g.Release()
	}
	w.wg.Wait()

	w.log(t)
	checkRecoveredHistory(t, w, train, cfg.Train.Epochs, perFile)
}

// recoveryWorkers are the two workers of testRecovery, each run under a
// supervisor that starts it again when it dies of a lost lease, each
// reading through its gate. The results, errors, restarts and logs are
// each worker's, its last run's for the results and errors; read them
// after wg.Wait.
type recoveryWorkers struct {
	wg       sync.WaitGroup
	gates    [2]*gateFS
	results  [2]JobResult
	errs     [2]error
	restarts [2]int
	logs     [2]testutil.Buffer
}

// startRecoveryWorkers starts the two workers names of a job of cfg on
// the files train on lc, with gates of the given budget; syncMode workers
// call the shards over gRPC, the others directly (job.Options.Local).
func startRecoveryWorkers(ctx context.Context, lc *cluster.Cluster, cfg config.Config, train []string, syncMode bool, names []string,
	budget int64) *recoveryWorkers {
	w := &recoveryWorkers{}
	for i := range w.gates {
		w.gates[i] = newGateFS(ctx, lc, names[i], budget)
	}
	for i := range 2 {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for {
				o := job.Options{Config: withJob(withWorkers(cfg, 2), train, nil), Etcd: lc.Etcd(), Prefix: lc.Prefix(), Index: i,
					Progress: &w.logs[i], LeaseTTL: time.Second, FS: w.gates[i]}
				if !syncMode {
					o.Local = lc
				}
				w.results[i], w.errs[i] = RunJob(ctx, o)
				if !errors.Is(w.errs[i], job.ErrLeaseLost) || ctx.Err() != nil {
					return
				}
				w.restarts[i]++
				fmt.Fprintf(&w.logs[i], "-- restarted after: %v\n", w.errs[i])
			}
		}()
	}
	return w
}

// raise raises every gate's budget to n lines.
func (w *recoveryWorkers) raise(n int64) {
	for _, g := range w.gates {
		g.Raise(n)
	}
}

// log logs each worker's restarts, reads, error and progress.
func (w *recoveryWorkers) log(t *testing.T) {
	for i := range 2 {
		read, leaked := w.gates[i].Lines()
		t.Logf("worker %d (%d restarts; %d lines read, %d of them past the gate's budget): %v\n%s", i, w.restarts[i], read, leaked,
			w.errs[i], w.logs[i].String())
	}
}

// waitServing waits until lc's cluster state is SERVING at minVersion or
// later and returns its version.
func waitServing(t *testing.T, ctx context.Context, lc *cluster.Cluster, minVersion uint64) uint64 {
	t.Helper()
	var st controlplane.ClusterState
	testutil.Eventually(t, time.Minute, fmt.Sprintf("SERVING at version %d or later", minVersion), func() bool {
		resp, err := lc.Etcd().Get(ctx, controlplane.StateKey(lc.Prefix()))
		if err != nil || len(resp.Kvs) == 0 {
			return false
		}
		return json.Unmarshal(resp.Kvs[0].Value, &st) == nil && st.Phase == "SERVING" && st.Version >= minVersion
	})
	return st.Version
}

// snapshotWithApplied waits until the live model holds at least min
// samples applied by each of the two workers names, then requests
// snapshots until one at version holds rows and checkpoints of both with
// at least min applied; it returns that snapshot's sequence number.
func snapshotWithApplied(t *testing.T, ctx context.Context, lc *cluster.Cluster, store snapshot.Store, names []string, version uint64, min int64) uint64 {
	t.Helper()
	waitLiveApplied(t, ctx, lc, names, min)
	_, m := requestSnapshot(t, ctx, lc, store, func(m *snapshot.Manifest) bool {
		cps := checkpoints(t, m)
		return m.Version == version && len(m.Tables) > 0 && cps[names[0]].Applied >= min && cps[names[1]].Applied >= min
	})
	return m.Seq
}

// workerLease returns the lease of the worker's registration in lc.
func workerLease(t *testing.T, ctx context.Context, lc *cluster.Cluster, worker string) clientv3.LeaseID {
	t.Helper()
	resp, err := lc.Etcd().Get(ctx, membership.MemberKey(lc.Prefix(), membership.KindWorker, worker))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("%s's registration: %v", worker, err)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// checkRecoveredHistory checks, once the workers w are done, that each
// ended without error, that worker-0 came back from its revoked lease and some worker
// resumed after a restore, and that the model's history holds every
// sample of the dataset train (perFile per file) once per epoch.
func checkRecoveredHistory(t *testing.T, w *recoveryWorkers, train []string, epochs, perFile int) {
	t.Helper()
	for i, err := range w.errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	// worker-0's lease was revoked: it was taken for dead, and either
	// registered again and resumed in its process (membership.Keep) or,
	// had it died of it, was restarted by its supervisor.
	if w.restarts[0] == 0 && !strings.Contains(w.logs[0].String(), "registering again") {
		t.Error("worker-0 neither registered again nor was restarted after its lease was revoked")
	}
	restored := 0
	var digest uint64
	for i, r := range w.results {
		restored += r.Restores
		digest += r.Digest
		if want := int64(epochs * perFile); r.Applied != want {
			t.Errorf("worker %d: the model's history holds %d of its samples, want %d (every sample once per epoch)", i, r.Applied, want)
		}
	}
	// Which samples: the digests of the model's history are the dataset's,
	// once per epoch.
	if want := datasetDigest(t, train) * uint64(epochs); digest != want {
		t.Errorf("the model's history has sample digest %x, the dataset %d times %x: other samples than the dataset's", digest, epochs, want)
	}
	if restored == 0 {
		t.Error("no worker resumed after a restore")
	}
}

// datasetDigest is the sum of the samples' digests of libFFM files (see
// reader.Digest).
func datasetDigest(t *testing.T, files []string) uint64 {
	t.Helper()
	var splits []reader.FileSplit
	for _, f := range files {
		splits = append(splits, reader.FileSplit{Path: f})
	}
	src, err := reader.OpenFiles(splits, reader.LibFFM, reader.StopOnBad)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, d, err := reader.Digest(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
