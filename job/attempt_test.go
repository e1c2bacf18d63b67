package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hangingModel's first attempt waits on its context alone, as a request
// to a shard cut off from the network does (TCP retransmits for minutes,
// no reply, no reset); later attempts end at once.
type hangingModel struct {
	s        job.Summary
	attempts atomic.Int32
	hung     chan struct{} // closed once the first attempt waits
	cause    atomic.Value  // why the first attempt's context ended
}

func (m *hangingModel) Prepare(context.Context, *job.Env) error { return nil }
func (m *hangingModel) Summary() *job.Summary                   { return &m.s }

func (m *hangingModel) Train(ctx context.Context, _ *job.Env, _ *checkpoint.Checkpoint) error {
	if m.attempts.Add(1) > 1 {
		return nil
	}
	close(m.hung)
	<-ctx.Done()
	m.cause.Store(context.Cause(ctx))
	return ctx.Err()
}

// TestAttemptGivesUpWhenTheClusterMoves is issue 20's seventh item seen
// from a worker: while its attempt waits on a request that never returns
// (to a shard cut off from the network), the cluster replaces the shard
// and restores at a new version. The attempt must be given up, and the
// job go on at the new version; before, it waited for ever.
func TestAttemptGivesUpWhenTheClusterMoves(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	store := t.TempDir()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/job-attempt-test",
		Config: config.Config{Snapshot: snapshot.Policy{Store: store, Every: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	m := &hangingModel{hung: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx, job.Options{Etcd: lc.Etcd(), Prefix: lc.Prefix()}, m) }()
	select {
	case <-m.hung:
	case err := <-done:
		t.Fatalf("the job ended before its attempt hung: %v", err)
	}
	// A snapshot to restore (the initial one, taken as the cluster began:
	// without it the cluster would fail instead).
	testutil.Eventually(t, time.Minute, "the initial snapshot", func() bool {
		st, err := snapshot.OpenDir(store)
		if err != nil {
			return false
		}
		defer st.Close()
		_, _, err = snapshot.Latest(st)
		return err == nil
	})
	if err := lc.RestartShard(ctx, 0); err != nil { // its rows lost: a restore at a new version
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the job after the restore: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the hung attempt was not given up when the cluster moved to a new version")
	}
	if cause, _ := m.cause.Load().(error); !errors.Is(cause, job.ErrRestored) || m.attempts.Load() != 2 || m.s.Restores != 1 {
		t.Fatalf("attempt ended by %v; %d attempts, %d restores; want ErrRestored, 2 and 1", cause, m.attempts.Load(), m.s.Restores)
	}
}

// againModel's first attempt ends with job.ErrTrainAgain (its data was
// dealt anew as it finished); the second trains to the end.
type againModel struct {
	s        job.Summary
	attempts atomic.Int32
}

func (m *againModel) Prepare(context.Context, *job.Env) error { return nil }
func (m *againModel) Summary() *job.Summary                   { return &m.s }

func (m *againModel) Train(context.Context, *job.Env, *checkpoint.Checkpoint) error {
	if m.attempts.Add(1) == 1 {
		return fmt.Errorf("worker: %w: partition deal 3 was replaced", job.ErrTrainAgain)
	}
	return nil
}

// TestTrainAgain: an attempt that ends with ErrTrainAgain is followed by
// another at the same cluster version, with no restore waited for.
func TestTrainAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 1, Prefix: "/xps/job-again-test",
		Config: config.Config{Snapshot: snapshot.Policy{Store: t.TempDir(), Every: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	m := &againModel{}
	var said strings.Builder
	if err := job.Run(ctx, job.Options{Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &said}, m); err != nil {
		t.Fatalf("job: %v\n%s", err, said.String())
	}
	if m.attempts.Load() != 2 || m.s.Restores != 0 || !strings.Contains(said.String(), "training on from the checkpoint in the model") {
		t.Fatalf("%d attempts, %d restores, said:\n%s\nwant 2 attempts, no restore, and why", m.attempts.Load(), m.s.Restores, said.String())
	}
}
