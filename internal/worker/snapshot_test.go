package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/config"
	"github.com/xdlgo/xps/internal/datagen"
	"github.com/xdlgo/xps/internal/local"
	"github.com/xdlgo/xps/internal/testutil"
	"github.com/xdlgo/xps/snapshot"
)

// TestPeriodicSnapshots trains two workers on files while the scheduler
// takes a snapshot every 100ms, pausing them at batch boundaries: training
// ends with every sample trained once per epoch, snapshots hold rows and
// the workers' file positions, and an on-demand snapshot works after
// training too.
func TestPeriodicSnapshots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	train := writeGenFiles(t, dir, 5, 2, 6000)
	snaps := filepath.Join(dir, "snapshots")
	lc, err := local.Start(ctx, local.Options{Shards: 2, Prefix: "/xps/snap-test", Train: train, Workers: 2,
		Snapshot: snapshot.Policy{Store: snaps, Every: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := streamedConfig(5) // positions are file offsets
	results := runWorkers(t, ctx, 2, 0, JobOptions{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Train: train})
	if got := results[0].Samples + results[1].Samples; got != int64(cfg.Train.Epochs)*12000 {
		t.Fatalf("trained %d samples, want %d", got, cfg.Train.Epochs*12000)
	}
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	// Periodic snapshots go on meanwhile (one may be in progress, an old
	// one pruned under us): read each manifest once and check those read.
	// On a loaded machine a snapshot's fsyncs may outlast training: wait
	// for one taken after the first rows were trained.
	var seqs []uint64
	var complete []*snapshot.Manifest
	testutil.Eventually(t, time.Minute, "a complete snapshot with rows", func() bool {
		seqs, err = snapshot.Snapshots(store)
		if err != nil {
			t.Fatal(err)
		}
		complete = complete[:0]
		rows := false
		for _, seq := range seqs {
			if man, err := snapshot.ReadManifest(store, seq); err == nil {
				complete = append(complete, man)
				rows = rows || len(man.Tables) > 0
			}
		}
		return rows
	})
	// Snapshots taken while training: checkpoints inside the files.
	withPositions := 0
	var m *snapshot.Manifest // the newest with rows
	for _, man := range complete {
		for k, v := range man.Readers {
			var c Checkpoint
			if err := json.Unmarshal(v, &c); err != nil || !strings.HasPrefix(k, PositionKeyPrefix+"worker-") ||
				!strings.HasSuffix(k, "/checkpoint") || c.Epoch < 1 || c.Applied <= 0 || len(c.Positions) == 0 ||
				!slices.Contains(train, c.Positions[len(c.Positions)-1].File) {
				t.Fatalf("snapshot %d: checkpoint %s = %s", man.Seq, k, v)
			}
			withPositions++
		}
		if len(man.Tables) > 0 && (m == nil || man.Seq > m.Seq) {
			m = man
		}
	}
	if m == nil || withPositions == 0 || len(complete) > 4 {
		t.Fatalf("snapshots %v: %d complete, %d checkpoints, none with rows: %v", seqs, len(complete), withPositions, m == nil)
	}
	var rows int64
	for _, f := range m.Tables[0].Files {
		rows += f.Rows
	}
	t.Logf("%d snapshots kept (of seq up to %d), the newest with rows has %d, %d checkpoints in all", len(seqs), seqs[0], rows,
		withPositions)
	if rows == 0 {
		t.Fatalf("snapshot %d has no rows", m.Seq)
	}
	// The job's configuration is in the manifest, not among the readers.
	var got config.Config
	if err := json.Unmarshal(m.Config, &got); err != nil || got.Train.BatchSize != cfg.Train.BatchSize || got.Train.Format != "libffm" {
		t.Fatalf("snapshot %d: config %s (%v)", m.Seq, m.Config, err)
	}
	if _, ok := m.Readers[client.ConfigStateKey]; ok {
		t.Fatalf("snapshot %d keeps the config among the readers too", m.Seq)
	}
	// On demand, with no worker left: it goes through at once.
	res, err := lc.Conn().RequestSnapshot(ctx)
	if err != nil || res.Seq <= m.Seq || res.Rows != rows {
		t.Fatalf("RequestSnapshot = %+v, %v; want a snapshot after %d with %d rows", res, err, m.Seq, rows)
	}
}

// TestSnapshotEverySamples: with snapshots every N samples (and none
// every interval) the scheduler takes them as the workers' checkpoints
// count N more samples applied: several while training, each holding
// more samples than the one before.
func TestSnapshotEverySamples(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	perFile := 20000
	if raceEnabled {
		perFile = 6000
	}
	train := writeGenFiles(t, dir, 6, 2, perFile)
	snaps := filepath.Join(dir, "snapshots")
	every := int64(perFile / 2)
	lc, err := local.Start(ctx, local.Options{Shards: 2, Prefix: "/xps/snap-samples-test", Train: train, Workers: 2,
		Snapshot: snapshot.Policy{Store: snaps, EverySamples: every}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := streamedConfig(6)
	cfg.Train.Epochs = 3
	runWorkers(t, ctx, 2, 0, JobOptions{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Train: train})
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	// Snapshots were taken while training (the first, at the start, holds
	// nothing), each kept one with more samples than the one before, and
	// no more of them than one per `every` samples (the checkpoints are
	// committed every second, so a snapshot may hold more samples than
	// were counted when it was asked for: the spacing of their contents is
	// not exact).
	var applied []int64
	var newest uint64
	testutil.Eventually(t, time.Minute, "two snapshots with checkpoints", func() bool {
		seqs, err := snapshot.Snapshots(store)
		if err != nil {
			t.Fatal(err)
		}
		applied = applied[:0]
		for _, seq := range slices.Backward(seqs) { // oldest first
			m, err := snapshot.ReadManifest(store, seq)
			if err != nil {
				continue
			}
			var sum int64
			for k, v := range m.Readers {
				var c Checkpoint
				if strings.HasSuffix(k, "/checkpoint") && json.Unmarshal(v, &c) == nil {
					sum += c.Applied
				}
			}
			applied = append(applied, sum)
			newest = seq
		}
		return len(applied) >= 2 && applied[0] > 0
	})
	total := int64(cfg.Train.Epochs * 2 * perFile)
	t.Logf("samples applied in the kept snapshots: %v, the newest is number %d (every %d of %d samples)", applied, newest, every, total)
	if !slices.IsSorted(applied) {
		t.Errorf("kept snapshots hold %v samples: not increasing", applied)
	}
	if max := uint64(total/every + 2); newest > max {
		t.Errorf("%d snapshots taken; at most %d for one every %d of %d samples", newest, max, every, total)
	}
}

// writeGenFiles writes n libFFM files of perFile samples each, drawn from
// datagen with genConfig(seed), into dir and returns their paths.
func writeGenFiles(t *testing.T, dir string, seed uint64, n, perFile int) []string {
	t.Helper()
	gen, err := datagen.New(genConfig(seed))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("part-%d.libffm", i))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gen.WriteLibFFM(f, perFile); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}
