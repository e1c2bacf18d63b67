package scheduler_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// hookHandler passes records to next and signals hit for each one whose
// message is msg.
type hookHandler struct {
	next slog.Handler
	msg  string
	hit  chan struct{}
}

func (h hookHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }
func (h hookHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.hit <- struct{}{}:
		default:
		}
	}
	return h.next.Handle(ctx, r)
}
func (h hookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return hookHandler{h.next.WithAttrs(as), h.msg, h.hit}
}
func (h hookHandler) WithGroup(g string) slog.Handler {
	return hookHandler{h.next.WithGroup(g), h.msg, h.hit}
}

// TestSnapshotRetriesIncompleteParts: a table declared on one shard and
// not yet on the other (a worker's declaration in flight, which a pause
// does not hold up) makes a snapshot's parts incomplete; the scheduler
// writes them again, and once the declaration has reached the other
// shard the snapshot succeeds, with the table from both shards.
func TestSnapshotRetriesIncompleteParts(t *testing.T) {
	const p = "/xps/incomplete"
	shards := []*restartable{startRestartable(t, "ams-0"), startRestartable(t, "ams-1")}
	srv := startEtcd(t)
	cli := newClient(t, srv)
	retried := make(chan struct{}, 1)
	opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 2, Partitions: 8, LeaseTTL: 2 * time.Second,
		TickInterval: 50 * time.Millisecond,
		Logger:       slog.New(hookHandler{testLogger(t).Handler(), "snapshot parts incomplete; writing them again", retried})}
	opts.Config.Snapshot.Store = t.TempDir()
	opts.Config.Snapshot.Every = -1 // on request only
	s, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, sh := range shards {
		defer register(t, cli, p, membership.KindAMS, sh.id, sh.addr).Close()
	}
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	version := s.Status().Version
	late := []ams.TableSpec{{Name: "late", Dim: 4}}
	if _, err := shards[0].sh.Declare(version, late, nil); err != nil {
		t.Fatal(err)
	}
	go func() { // the declaration reaches the other shard once a write found it missing
		<-retried
		if _, err := shards[1].sh.Declare(version, late, nil); err != nil {
			t.Error(err)
		}
	}()
	res, err := testutil.Conn(cli, p).RequestSnapshot(testutil.Ctx(t, time.Minute), false)
	if err != nil || res.Error != "" {
		t.Fatalf("snapshot: %+v, %v", res, err)
	}
	st, err := snapshot.OpenDir(opts.Config.Snapshot.Store)
	if err != nil {
		t.Fatal(err)
	}
	m, err := snapshot.ReadManifest(st, res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range m.Tables {
		if tb.Name == "late" && len(tb.Files) == 2 {
			return
		}
	}
	t.Fatalf("snapshot %d: tables %+v, want late from 2 shards", res.Seq, m.Tables)
}
