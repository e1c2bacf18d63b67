package ctrtrain

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/tests/testutil"
)

// lockedBuilder is a strings.Builder safe for a logger's concurrent use.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestJobLogsCarryTheVersion: the job's log lines name the cluster
// version the worker trains at.
func TestJobLogsCarryTheVersion(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 1, Prefix: "/xps/joblog-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	var logs lockedBuilder
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if _, err := RunJob(ctx, job.Options{Config: smallConfig(), Etcd: lc.Etcd(), Prefix: lc.Prefix(), Logger: log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `msg="attempt starts" version=1 attempt=1`) {
		t.Errorf("job logs %q: want the attempt's line with version=1", logs.String())
	}
}
