package scheduler_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestSchedulerAssignsFiles checks that the scheduler publishes one share
// of the training files per worker, covering every byte exactly once, and
// refuses training data that does not exist.
func TestSchedulerAssignsFiles(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	dir := t.TempDir()
	sizes := map[string]int{"a.txt": 3000, "b.txt": 100, "sub/c.txt": 900}
	for name, n := range sizes {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("1 0:a:1\n", n/8+1)[:n]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 3
	s, err := scheduler.New(cli, scheduler.Options{Shards: 1, Logger: testLogger(t),
		Config: config.Config{Job: config.JobConfig{Train: []string{dir}, Workers: workers, SplitBytes: 500}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	covered := map[string]int64{}
	for i := 0; i < workers; i++ {
		splits, err := testutil.Conn(cli, membership.DefaultPrefix).WaitAssignment(testCtx(t), membership.WorkerName(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(splits) == 0 {
			t.Fatalf("worker-%d got no data", i)
		}
		for _, sp := range splits {
			end := sp.End
			if end <= 0 {
				st, err := os.Stat(sp.Path)
				if err != nil {
					t.Fatal(err)
				}
				end = st.Size()
			}
			covered[sp.Path] += end - sp.Start
		}
	}
	for name, n := range sizes {
		if got := covered[filepath.Join(dir, name)]; got != int64(n) {
			t.Errorf("%s: splits cover %d bytes, want %d", name, got, n)
		}
	}
	if _, err := scheduler.New(cli, scheduler.Options{Shards: 1, Logger: testLogger(t), ID: "other",
		Config: config.Config{Job: config.JobConfig{Train: []string{filepath.Join(dir, "missing*")}}}}); err == nil || !strings.Contains(err.Error(), "training data") {
		t.Fatalf("missing training data: %v, want an error about the training data", err)
	}
}
