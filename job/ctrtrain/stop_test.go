package ctrtrain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// batchLines is a progress writer that closes reached once n progress lines
// of batches were written. With hold set, every batch line after the n-th
// waits until hold is closed: the trainer, which writes them, trains no
// further batch meanwhile.
type batchLines struct {
	mu      sync.Mutex
	n       int
	reached chan struct{}
	hold    chan struct{}
	text    strings.Builder
}

func newBatchLines(n int) *batchLines { return &batchLines{n: n, reached: make(chan struct{})} }

func (b *batchLines) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.text.String()
}

func (b *batchLines) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.text.Write(p)
	held := false
	if strings.Contains(string(p), " batch ") {
		b.n--
		if b.n == 0 {
			close(b.reached)
		}
		held = b.n < 0 && b.hold != nil
	}
	b.mu.Unlock()
	if held {
		<-b.hold
	}
	return len(p), nil
}

// logSignal is a log writer that closes seen once a line holds want.
type logSignal struct {
	mu     sync.Mutex
	want   string
	seen   chan struct{}
	closed bool
	text   strings.Builder
}

func (l *logSignal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	if !l.closed && strings.Contains(string(p), l.want) {
		l.closed = true
		close(l.seen)
	}
	return len(p), nil
}

// TestStopStoresWhatWasApplied stops a worker mid-epoch, as SIGTERM does
// (its context is cancelled), twice: each stop must drain the pushes in
// flight and store the checkpoint of exactly what the shards applied, by
// the shards' own records, and leave gracefully (no rollback); the
// restarted worker resumes from it and no shard refuses a batch as
// applied twice. Before the fix a stop cancelled its pushes in flight, its
// last commit failed, and the model held batches its checkpoint did not
// count (460 against 344 in the probe), trained again after the restart.
func TestStopStoresWhatWasApplied(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/stop-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := smallConfig()
	cfg.Train.Epochs = 1000 // far more than the test lets it train
	cfg.Train.ProgressEvery = time.Nanosecond
	version := uint64(0)
	for run := 1; run <= 2; run++ {
		progress := newBatchLines(30)
		jctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		var res JobResult
		go func() {
			var err error
			res, err = RunJob(jctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: progress})
			done <- err
		}()
		select {
		case <-progress.reached:
		case err := <-done:
			t.Fatalf("run %d ended before it was stopped: %v\n%s", run, err, progress.String())
		}
		if run == 2 { // a failed snapshot, as the scheduler records one: said and counted
			if err := lc.Conn().PutSnapshotResult(ctx, controlplane.SnapshotResult{Seq: 99, Error: "disk full"}); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, time.Minute, "the failed snapshot in the progress", func() bool {
				return strings.Contains(progress.String(), "snapshot 99 FAILED: disk full")
			})
		}
		stop()
		err := <-done
		if !errors.Is(err, context.Canceled) || errors.Is(err, job.ErrNotExactlyOnce) {
			t.Fatalf("run %d stopped: %v\n%s", run, err, progress.String())
		}
		if run == 2 && (res.SnapshotsFailed != 1 || res.SnapshotError != "disk full") {
			t.Fatalf("run 2: the summary counts %d failed snapshots (%q), want the one", res.SnapshotsFailed, res.SnapshotError)
		}
		if v := res.ExactlyOnce; v == nil || !v.Exact || v.Shards != 2 || v.Batches < 30 {
			t.Fatalf("run %d: the summary's account %+v, want exact on 2 shards", run, v)
		}
		// The shards' records, read here, against the stored checkpoint.
		sm, err := lc.Conn().GetShardMap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := client.New(sm)
		if err != nil {
			t.Fatal(err)
		}
		v, err := checkpoint.Verify(ctx, cl, "worker-0")
		cl.Close()
		if err != nil || !v.Exact || v.Batches != res.ExactlyOnce.Batches {
			t.Fatalf("run %d: after the stop the shards hold %+v (%v); the summary said %+v", run, v, err, res.ExactlyOnce)
		}
		// A graceful leave: the cluster serves on at the same version.
		if version != 0 && sm.Version != version {
			t.Fatalf("run %d: the cluster moved from version %d to %d: the stop was taken for a death", run, version, sm.Version)
		}
		version = sm.Version
	}
}

// TestLeaseLostWorkerResumes revokes a training worker's lease, as an etcd
// outage longer than the TTL or a network cut ends it, while its process
// lives on. The worker must not die of it (before the fix it exited with
// ErrLeaseLost) but register again in the same life. With the
// scheduler's rejoin wait on (the default) the cluster, paused
// meanwhile, serves on at the same version: no restore. With it off the
// loss is a death: the cluster rolls back to its snapshot and the worker
// resumes from the restored checkpoint. Either way every sample is
// applied once by the shards' account.
func TestLeaseLostWorkerResumes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		restores int
	}{{"rejoin", 0, 0}, {"death", -1, 1}} {
		t.Run(tc.name, func(t *testing.T) { testLeaseLost(t, tc.wait, tc.restores) })
	}
}

func testLeaseLost(t *testing.T, rejoinWait time.Duration, restores int) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/lease-resume-test", LeaseTTL: time.Second, RejoinWait: rejoinWait,
		Config: config.Config{Snapshot: snapshot.Policy{Store: t.TempDir(), Every: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := smallConfig() // 8000 samples, 2 epochs, batches of 64
	want := int64(2 * cfg.Data.TrainSamples)
	// The lost lease is noticed while the job trains, however fast the
	// machine: after the 20th batch, each batch's progress line waits
	// until the worker has logged the loss (its keep-alive saw the lease
	// gone, as the attempt's watcher does, which then ends the attempt).
	progress := newBatchLines(20)
	lost := &logSignal{want: "lost the etcd lease", seen: make(chan struct{})}
	progress.hold = lost.seen
	cfg.Train.ProgressEvery = time.Nanosecond
	done := make(chan error, 1)
	var res JobResult
	go func() {
		var err error
		res, err = RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: progress, LeaseTTL: time.Second,
			Logger: slog.New(slog.NewTextHandler(lost, nil))})
		done <- err
	}()
	select {
	case <-progress.reached:
	case err := <-done:
		t.Fatalf("the job ended before its lease was revoked: %v\n%s", err, progress.String())
	}
	resp, err := lc.Etcd().Get(ctx, lc.Prefix()+"/members/worker/worker-0")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the worker's member key: %v, %v", resp, err)
	}
	if _, err := lc.Etcd().Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the job after its lease was revoked: %v\n%s", err, progress.String())
	}
	v := res.ExactlyOnce
	if res.Restores != restores || v == nil || !v.Exact || v.Samples != want || v.Batches != uint64(want/64) {
		t.Fatalf("%d restores; the shards' account %+v; want %d restores and %d samples in %d batches applied once\n%s",
			res.Restores, v, restores, want, want/64, progress.String())
	}
	if !strings.Contains(progress.String(), "registering again") {
		t.Fatalf("the worker did not say it registered again:\n%s", progress.String())
	}
}

// TestModelAheadOfCheckpointRollsBack makes the model hold pushes of a
// worker that its checkpoint does not count (a fault probe once found
// them after a stop; here the checkpoint is set back by hand): the worker
// must not train on (it would apply those batches twice, which the shards
// refuse) but leave as a dead worker, so that the cluster rolls the model
// back to its snapshot, and finish from there, every sample applied once.
func TestModelAheadOfCheckpointRollsBack(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/ahead-test", LeaseTTL: time.Second,
		Config: config.Config{Snapshot: snapshot.Policy{Store: t.TempDir(), Every: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := smallConfig() // 8000 samples, 2 epochs, batches of 64
	cfg.Train.ProgressEvery = time.Nanosecond
	opts := job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), LeaseTTL: time.Second}

	// Run 1, stopped after some batches: its checkpoint is exact.
	progress := newBatchLines(20)
	jctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		o := opts
		o.Progress = progress
		_, err := RunJob(jctx, o)
		done <- err
	}()
	<-progress.reached
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, job.ErrNotExactlyOnce) {
		t.Fatalf("run 1 stopped: %v", err)
	}
	// The checkpoint set back 5 batches: the model is ahead of it.
	sm, err := lc.Conn().GetShardMap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(sm)
	if err != nil {
		t.Fatal(err)
	}
	cp, _, err := checkpoint.Load(ctx, cl, "worker-0")
	if err == nil {
		cp.Batches, cp.Applied = cp.Batches-5, cp.Applied-5*64
		err = checkpoint.Store(ctx, cl, "worker-0", cp)
	}
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Run 2: rolled back, then to the end.
	progress = newBatchLines(-1)
	o := opts
	o.Progress = progress
	res, err := RunJob(ctx, o)
	if err != nil {
		t.Fatalf("run 2: %v\n%s", err, progress.String())
	}
	v := res.ExactlyOnce
	if res.Restores < 1 || v == nil || !v.Exact || v.Samples != 16000 || !strings.Contains(progress.String(), "leaving as a dead worker") {
		t.Fatalf("run 2: %d restores, the shards' account %+v; want a rollback and 16000 samples applied once\n%s",
			res.Restores, v, progress.String())
	}
}

// TestStopAfterACancelledCommit stops a run while a periodic commit is
// under way, the commit failing with the stop's cancellation: the stop
// must still store the checkpoint of every batch the shards applied. A
// Kafka worker whose lease was lost in an etcd outage once left its
// checkpoint 586 batches behind its pushes this way (the tracker took the
// failed commit for done, and the stop committed nothing).
func TestStopAfterACancelledCommit(t *testing.T) {
	stopDuringCommit(t, 100000, time.Nanosecond, 3) // a periodic commit: stopped long before the epochs end
}

// stopDuringCommit trains epochs epochs, committing every commitEvery, in
// each mode, and stops the run during its stopAt-th commit, which fails
// with the stop's cancellation: a commit after it must store the
// checkpoint of every batch the shards applied.
func stopDuringCommit(t *testing.T, epochs int, commitEvery time.Duration, stopAt int32) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, cl := startCluster(t, 2)
			groups := genGroups(t, 3000, 3)
			ctx, cancel := context.WithCancel(testutil.JobCtx(t))
			defer cancel()
			var commits atomic.Int32
			var stored Checkpoint
			cfg := m.config()
			cfg.Train.Epochs = epochs
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: genShape, Train: memOpen(groups, false), CommitEvery: commitEvery,
				Job: commitJob(func(cctx context.Context, c Checkpoint) error {
					if commits.Add(1) == stopAt { // the stop comes during this commit
						cancel()
						return fmt.Errorf("commit: %w", cctx.Err())
					}
					if err := cctx.Err(); err != nil {
						return err
					}
					stored = c
					return nil
				})})
			res, err := tr.Run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want the stop", err)
			}
			recs, aerr := cl.Applied(context.Background(), tr.opts.Name)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if commits.Load() <= stopAt || stored.Batches != res.Batches || !recs[0].Exactly(uint64(stored.Batches)) {
				t.Fatalf("%d commits; the stored checkpoint counts %d batches; %d trained; shard 0 applied %s",
					commits.Load(), stored.Batches, res.Batches, recs[0])
			}
		})
	}
}

// TestStopDuringTheEpochEndCommit stops a run while the commit of its
// last epoch's end is under way (a worker whose lease was lost in an etcd
// outage just as its data ended): the stop must still store the
// checkpoint of every batch the shards applied, or the worker, back in
// its life, finds the model ahead of its checkpoint and has the cluster
// roll back (the fault test's "it cost a restore, not a pause").
func TestStopDuringTheEpochEndCommit(t *testing.T) {
	stopDuringCommit(t, 1, time.Hour, 1) // no periodic commit: the first is the epoch end's
}

// commitJob is a Job of one worker that stores its checkpoint with commit
// and never pauses nor keeps a best model.
type commitJob func(ctx context.Context, c Checkpoint) error

func (commitJob) PauseRequested() bool            { return false }
func (commitJob) Pause(ctx context.Context) error { return nil }
func (commitJob) KeepsBest() bool                 { return false }
func (commitJob) KeepBest(context.Context, func(context.Context) error) (uint64, error) {
	return 0, nil
}
func (commitJob) RollBack(context.Context, string) error           { return nil }
func (f commitJob) Commit(ctx context.Context, c Checkpoint) error { return f(ctx, c) }
func (commitJob) Reopen(context.Context) error                     { return ErrReopen }
func (commitJob) Barrier(context.Context) error                    { return nil }
