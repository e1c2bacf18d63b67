package ctrtrain

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestWarmStartCountsTheModelsRows: a warm start from a chain of a full
// export and deltas that set many of its rows again says how many rows
// the model holds, the exporting job's final count, not the rows the
// chain's exports wrote (issue 57: 1,700,515 rows said for a model of
// 1,125,976, the deltas' rows counted again).
func TestWarmStartCountsTheModelsRows(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	store := t.TempDir()
	cfg := smallConfig()
	cfg.Train.Epochs = 8
	if raceEnabled { // the race build trains many times slower: the gates, not the data, make the deltas
		cfg.Data.TrainSamples = 2000
	}
	cfg.Export = export.Policy{Store: store, Every: 100 * time.Millisecond}
	run := func(name string, cfg config.Config, src func(int, reader.Position) (reader.Source, error)) (JobResult, string) {
		lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/warm-" + name, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		defer lc.Close()
		progress := new(testutil.Buffer)
		res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: progress, Source: src})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, progress.String())
		}
		return res, progress.String()
	}
	// Epochs 4 and 7 start only once the store holds 1 and 2 exports (the
	// periodic ones, taken while the worker waits): the chain has a delta
	// onto rows trained again however fast the job trains.
	first, _ := run("first", cfg, func(epoch int, at reader.Position) (reader.Source, error) {
		src, err := openGenerated(cfg.Data, 0, 1, cfg.Train.ShuffleChunk, at)
		if err != nil || epoch%3 != 1 || epoch == 1 {
			return src, err
		}
		return &exportGate{Source: src, store: store, want: epoch / 3}, nil
	})
	var rows int64
	for _, u := range first.Tables {
		rows += u.Rows
	}
	chain, err := exportChain(store)
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
	_, out := run("warm", warm, nil)
	m := regexp.MustCompile(`warm start: loaded export \d+ .*: the model holds (\d+) rows`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no warm start line:\n%s", out)
	}
	if n, _ := strconv.ParseInt(m[1], 10, 64); n != rows {
		t.Fatalf("the warm start says the model holds %d rows; the exported model has %d (the chain wrote %d)\n%s", n, rows, written, out)
	}
}

// exportGate holds its source's first group until the export store holds
// at least want exports (the worker, idle meanwhile, takes the exports'
// pauses).
type exportGate struct {
	reader.Source
	store string
	want  int
	open  bool
}

func (g *exportGate) Next(ctx context.Context, grp *reader.Group) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !g.open {
		if chain, err := exportChain(g.store); err != nil {
			return err
		} else if len(chain) >= g.want {
			g.open = true
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Source.Next(ctx, grp)
}

// exportChain is the export chain in store, empty while it holds no
// full export.
func exportChain(store string) ([]*export.Manifest, error) {
	s, err := snapshot.OpenDir(store)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	chain, _, err := export.Next(s, nil)
	if errors.Is(err, export.ErrNoExport) {
		return nil, nil
	}
	return chain, err
}
