package ctrtrain

import (
	"context"
	"github.com/xdlgo/xps/tests/testutil"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/snapshot"
)

// TestWarmStartCountsTheModelsRows: a warm start from a chain of a full
// export and deltas that set many of its rows again says how many rows
// the model holds, the exporting job's final count, not the rows the
// chain's exports wrote (issue 57: 1,700,515 rows said for a model of
// 1,125,976, the deltas' rows counted again).
func TestWarmStartCountsTheModelsRows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store := t.TempDir()
	cfg := smallConfig()
	cfg.Train.Epochs = 15 // long enough for the scheduler's ticks to export deltas between epochs
	cfg.Export = export.Policy{Store: store, Every: -time.Second, EverySamples: 16000}
	run := func(name string, cfg config.Config) (JobResult, string) {
		lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/warm-" + name, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		defer lc.Close()
		progress := new(testutil.Buffer)
		res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: progress})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, progress.String())
		}
		return res, progress.String()
	}
	first, _ := run("first", cfg)
	var rows int64
	for _, u := range first.Tables {
		rows += u.Rows
	}
	s, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chain, _, err := export.Next(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var written int64
	for _, m := range chain {
		r, _ := m.Rows()
		written += r
	}
	if len(chain) < 2 || written <= rows {
		t.Fatalf("the chain: %d exports writing %d rows for a model of %d; the test needs deltas that set rows again", len(chain), written, rows)
	}
	warm := smallConfig()
	warm.Train.Epochs = 1
	warm.Job.WarmStart = store
	_, out := run("warm", warm)
	m := regexp.MustCompile(`warm start: loaded export \d+ .*: the model holds (\d+) rows`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no warm start line:\n%s", out)
	}
	if n, _ := strconv.ParseInt(m[1], 10, 64); n != rows {
		t.Fatalf("the warm start says the model holds %d rows; the exported model has %d (the chain wrote %d)\n%s", n, rows, written, out)
	}
}
