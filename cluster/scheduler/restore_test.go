package scheduler_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/snapshot"
)

// logBuffer keeps the log lines written to it, and passes them on to the
// test's log.
type logBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer // guarded by mu
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	return testWriter{l.t}.Write(p)
}

// lines returns the lines logged with message msg.
func (l *logBuffer) lines(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	field := " msg=" + msg + " " // slog's text quotes a message with spaces only
	if strings.Contains(msg, " ") {
		field = " msg=\"" + msg + "\" "
	}
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, field) {
			out = append(out, line)
		}
	}
	return out
}

// TestFailedRestoreIsNotDone starts a scheduler on a store whose only
// snapshot has a readable manifest but a missing file: it restores that
// snapshot onto the new cluster, the verification fails, and with nothing
// left to restore the cluster fails. The restore must be logged as failed,
// with the error, and never as done (it was, before the fix). A restore
// that succeeds (a new cluster's shards begin empty) is logged as done.
func TestFailedRestoreIsNotDone(t *testing.T) {
	store := t.TempDir()
	st, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	man := &snapshot.Manifest{Seq: 1, Version: 1, Shards: 1,
		Dense: []snapshot.DenseEntry{{Name: "mlp", Len: 1, Hi: 1, File: snapshot.FileMeta{Name: "dense-mlp-0", Size: 4, SHA256: strings.Repeat("0", 64)}}}}
	if err := snapshot.Commit(st, man); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.ReadManifest(st, 1); err != nil {
		t.Fatalf("the manifest must read: %v", err)
	}

	srv := startEtcd(t)
	cli := newClient(t, srv)
	// run runs a cluster of one shard under prefix p with the snapshot
	// store (none: ""), until its phase, and returns its scheduler's logs.
	run := func(p, store string, phase clusterfsm.Phase) *logBuffer {
		logs := &logBuffer{t: t}
		opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 1, Partitions: 4, LeaseTTL: time.Minute,
			TickInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		opts.Config.Snapshot.Store = store
		s, err := scheduler.New(cli, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		reg := register(t, cli, p, membership.KindAMS, "ams-0", startShard(t, "ams-0"))
		defer reg.Close()
		eventually(t, 10*time.Second, phase.String(), func() bool { return s.Status().Phase == phase })
		if err := s.Close(); err != nil { // waits for the restore's goroutine: every line is logged
			t.Fatal(err)
		}
		return logs
	}

	logs := run("/xps/restore-begins", "", clusterfsm.Serving)
	if done, failed := logs.lines("restore done"), logs.lines("restore failed"); len(done) != 1 || len(failed) != 0 {
		t.Fatalf("a restore that succeeded logged as done %q and failed %q, want done once", done, failed)
	}

	logs = run("/xps/restore-fails", store, clusterfsm.Failed)
	if got := logs.lines("restoring"); len(got) != 1 || !strings.Contains(got[0], "snapshot=") {
		t.Fatalf("restores started: %q, want one of the snapshot", got)
	}
	if done := logs.lines("restore done"); len(done) > 0 {
		t.Errorf("a failed restore logged as done: %q", done)
	}
	var summary string
	for _, line := range logs.lines("restore failed") {
		if strings.Contains(line, " version=") {
			summary = line
		}
	}
	if !strings.Contains(summary, "level=WARN") || !strings.Contains(summary, "failed_shards=1") || !strings.Contains(summary, "dense-mlp-0") {
		t.Errorf("the restore's last line %q, want a warning that it failed on its shard, with the error", summary)
	}
}
