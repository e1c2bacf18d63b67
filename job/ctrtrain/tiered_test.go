package ctrtrain

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// tieredRun is what one sync-mode job left: its table's rows (values
// and optimizer state, without the statistics, which hold wall-clock
// times), its result and its progress.
type tieredRun struct {
	rows map[uint64]string
	res  JobResult
	log  string
}

// runTieredJob trains smallConfig's model in sync mode on 2 shards, the
// table tiered with budget rows per shard (0: in memory), and reads the
// table's rows back from a snapshot of the shards.
func runTieredJob(t *testing.T, budget int64) tieredRun {
	t.Helper()
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: fmt.Sprintf("/xps/tiered-%d", budget)})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := smallConfig()
	cfg.Train.Sync = true
	cfg.Data.Vocab = 4000
	if budget > 0 {
		cfg.Model.Tables[0].Storage = ams.StorageTiered
		cfg.Model.Tables[0].Budget.Rows = budget
	}
	var progress strings.Builder
	res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	store, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := tieredRun{rows: map[uint64]string{}, res: res, log: progress.String()}
	for i, n := range lc.Nodes() {
		part, err := n.Shard().WriteSnapshot(store, 1, i)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range part.Tables {
			spec := cfg.Model.Tables[0]
			model := 4 * (spec.Dim + 2*spec.Dim) // values and Adagrad's state at most; cut below
			readRows(t, store, e.Files, func(id uint64, row []byte) {
				run.rows[id] = string(row[:min(len(row)-12, model)])
			})
		}
	}
	return run
}

// readRows calls fn with every row of the table files.
func readRows(t *testing.T, store snapshot.Store, files []snapshot.FileMeta, fn func(uint64, []byte)) {
	t.Helper()
	for _, f := range files {
		tr, err := snapshot.OpenTable(store, 1, f)
		if err != nil {
			t.Fatal(err)
		}
		for tr.Next() {
			id, v := tr.Row()
			fn(id, v)
		}
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		tr.Close()
	}
}

// TestTieredSyncTraining: the same sync-mode job, with the same seed,
// ends with the same rows bit for bit (values and optimizer state) and
// the same test AUC whether its table is in memory or tiered with a DRAM
// budget of a tenth of its rows; the tiered run moved rows both ways and
// its summary reports the cold tier.
func TestTieredSyncTraining(t *testing.T) {
	mem := runTieredJob(t, 0)
	budget := int64(len(mem.rows) / 10 / 2) // a tenth, over 2 shards
	tiered := runTieredJob(t, budget)
	if len(tiered.rows) != len(mem.rows) {
		t.Fatalf("tiered: %d rows, in memory %d", len(tiered.rows), len(mem.rows))
	}
	for id, r := range mem.rows {
		if tiered.rows[id] != r {
			t.Fatalf("row %d differs between the tiered table and the table in memory", id)
		}
	}
	if tiered.res.TestAUC != mem.res.TestAUC {
		t.Errorf("test AUC %.6f tiered, %.6f in memory", tiered.res.TestAUC, mem.res.TestAUC)
	}
	var sum strings.Builder
	tiered.res.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "cold tier:") {
		t.Errorf("the summary does not report the cold tier:\n%s", sum.String())
	}
	t.Logf("%d rows, budget %d per shard\n%s", len(mem.rows), budget, sum.String())
}
