package ctrtrain

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/parquetsrc"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestPeriodicSnapshots trains two workers on files while the scheduler
// takes a snapshot every 100ms, pausing them at batch boundaries: a
// snapshot taken while they train holds rows and both workers' file
// positions, training ends with every sample trained once per epoch, and
// an on-demand snapshot works after training too.
func TestPeriodicSnapshots(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	dir := t.TempDir()
	const perFile = 6000
	train := writeGenFiles(t, dir, 5, 2, perFile)
	snaps := filepath.Join(dir, "snapshots")
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/snap-test",
		Config: config.Config{Job: config.JobConfig{Train: train, Workers: 2}, Snapshot: snapshot.Policy{Store: snaps, Every: 100 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := streamedConfig(5) // positions are file offsets
	// Each worker reads through a gate holding it in the middle of epoch 1
	// (LoadData reads its file whole first: perFile <= peekSamples) until a
	// periodic snapshot holds its checkpoint: training cannot end first.
	var gates [2]*gateFS
	for i := range gates {
		gates[i] = newGateFS(ctx, lc, membership.WorkerName(i), perFile+perFile/2)
	}
	wait := startWorkers(t, ctx, 2, 0, job.Options{Config: withJob(cfg, train, nil), Etcd: lc.Etcd(), Prefix: lc.Prefix()},
		func(i int) reader.FS { return gates[i] })
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	during := waitSnapshotWhileTraining(t, store)
	for _, g := range gates {
		g.Release()
	}
	results := wait()
	if got := results[0].Samples + results[1].Samples; got != int64(cfg.Train.Epochs)*2*perFile {
		t.Fatalf("trained %d samples, want %d", got, cfg.Train.Epochs*2*perFile)
	}
	// The snapshot taken while training: checkpoints inside the files.
	checkConsistent(t, during)
	for k, v := range during.Readers {
		if !ams.IsCheckpointKey(k) {
			continue // the shards' records of applied pushes, checked above
		}
		if c := validCheckpoint(t, during, k, v, train); c.EpochDone && c.Epoch == cfg.Train.Epochs {
			t.Fatalf("snapshot %d, taken while training, holds the final checkpoint %s = %s", during.Seq, k, v)
		}
	}
	// Snapshots after training: wait for one holding the final
	// checkpoints (a snapshot's fsyncs may outlast training on a loaded
	// machine), the newest with rows.
	seqs, complete, m := waitFinalSnapshot(t, store, cfg.Train.Epochs)
	withPositions := 0
	for _, man := range complete {
		checkConsistent(t, man)
		for k, v := range man.Readers {
			if !ams.IsCheckpointKey(k) {
				continue
			}
			if validCheckpoint(t, man, k, v, train).Applied > 0 {
				withPositions++
			}
		}
	}
	if withPositions == 0 || len(complete) > 4 {
		t.Fatalf("snapshots %v: %d complete, %d checkpoints", seqs, len(complete), withPositions)
	}
	var rows int64
	for _, f := range m.Tables[0].Files {
		rows += f.Rows
	}
	t.Logf("snapshot %d taken while training; %d snapshots kept (of seq up to %d), the newest with rows has %d, %d checkpoints in all",
		during.Seq, len(seqs), seqs[0], rows, withPositions)
	if rows == 0 {
		t.Fatalf("snapshot %d has no rows", m.Seq)
	}
	checkManifestConfig(t, m, cfg)
	// On demand, with no worker left: it goes through at once.
	res, _ := requestSnapshot(t, ctx, lc, store, func(n *snapshot.Manifest) bool { return n.Seq > m.Seq })
	if res.Rows != rows {
		t.Fatalf("RequestSnapshot = %+v; want a snapshot after %d with %d rows", res, m.Seq, rows)
	}
}

// waitSnapshotWhileTraining waits for a snapshot in store with rows and
// both workers' checkpoints, each after at least one batch, and returns
// its manifest (one taken before a worker's first batch holds its start
// checkpoint). Periodic snapshots
// go on meanwhile (one may be in progress, an old one pruned under us):
// it reads each manifest once and checks those read.
func waitSnapshotWhileTraining(t *testing.T, store snapshot.Store) *snapshot.Manifest {
	t.Helper()
	var during *snapshot.Manifest
	testutil.Eventually(t, time.Minute, "a periodic snapshot with rows and both workers' checkpoints", func() bool {
		seqs, err := snapshot.Snapshots(store)
		if err != nil {
			t.Fatal(err)
		}
		for _, seq := range seqs {
			man, err := snapshot.ReadManifest(store, seq)
			if err != nil || len(man.Tables) == 0 {
				continue
			}
			cps := checkpoints(t, man)
			trained := 0
			for _, c := range cps {
				if c.Applied > 0 {
					trained++
				}
			}
			if trained == 2 {
				during = man
				return true
			}
		}
		return false
	})
	return during
}

// validCheckpoint decodes the reader entry k = v of snapshot man, failing
// t unless it is a worker's checkpoint inside the epochs at a position in
// one of the files train, or the start checkpoint of a worker that had
// trained no batch when the snapshot paused it (epoch 1, nothing applied,
// no position).
// checkConsistent checks that the shards' records of applied pushes in
// snapshot man agree with its checkpoints, and that there are records.
func checkConsistent(t *testing.T, man *snapshot.Manifest) {
	t.Helper()
	if _, ok := man.Readers[ams.AppliedKey(0)]; !ok {
		t.Fatalf("snapshot %d holds no records of applied pushes", man.Seq)
	}
	if err := checkpoint.Consistent(man.Readers); err != nil {
		t.Fatalf("snapshot %d: %v", man.Seq, err)
	}
}

func validCheckpoint(t *testing.T, man *snapshot.Manifest, k string, v []byte, train []string) Checkpoint {
	t.Helper()
	var c Checkpoint
	err := json.Unmarshal(v, &c)
	start := err == nil && c.Epoch == 1 && !c.EpochDone && c.Batch == 0 && c.Applied == 0 && c.Batches == 0 && len(c.Positions) == 0
	if err != nil || !strings.HasPrefix(k, PositionKeyPrefix+"worker-") || !strings.HasSuffix(k, "/checkpoint") ||
		!start && (c.Epoch < 1 || c.Applied <= 0 || len(c.Positions) == 0 ||
			!slices.Contains(train, c.Positions[len(c.Positions)-1].File)) {
		t.Fatalf("snapshot %d: checkpoint %s = %s", man.Seq, k, v)
	}
	return c
}

// waitFinalSnapshot waits until the newest snapshot in store with rows, m,
// holds both workers' final checkpoints (the end of epoch epochs); it
// returns the snapshots' numbers, the manifests of the complete ones
// (those it could read) and m.
func waitFinalSnapshot(t *testing.T, store snapshot.Store, epochs int) (seqs []uint64, complete []*snapshot.Manifest, m *snapshot.Manifest) {
	t.Helper()
	testutil.Eventually(t, time.Minute, "a complete snapshot taken after training", func() bool {
		var err error
		seqs, err = snapshot.Snapshots(store)
		if err != nil {
			t.Fatal(err)
		}
		complete, m = complete[:0], nil
		for _, seq := range seqs {
			if man, err := snapshot.ReadManifest(store, seq); err == nil {
				complete = append(complete, man)
				if len(man.Tables) > 0 && (m == nil || man.Seq > m.Seq) {
					m = man
				}
			}
		}
		if m == nil {
			return false
		}
		final := 0
		for _, c := range checkpoints(t, m) {
			if c.EpochDone && c.Epoch == epochs {
				final++
			}
		}
		return final == 2
	})
	return seqs, complete, m
}

// checkManifestConfig checks that the job's configuration cfg is in
// snapshot m's manifest, not among its readers.
func checkManifestConfig(t *testing.T, m *snapshot.Manifest, cfg config.Config) {
	t.Helper()
	var got config.Config
	if err := json.Unmarshal(m.Config, &got); err != nil || got.Train.BatchSize != cfg.Train.BatchSize || got.Train.Format != "libffm" {
		t.Fatalf("snapshot %d: config %s (%v)", m.Seq, m.Config, err)
	}
	if _, ok := m.Readers[client.ConfigStateKey]; ok {
		t.Fatalf("snapshot %d keeps the config among the readers too", m.Seq)
	}
}

// TestSnapshotEverySamples: with snapshots every N samples (and none
// every interval) the scheduler takes them as the workers' checkpoints
// count N more samples applied: several while training, each holding
// more samples than the one before.
func TestSnapshotEverySamples(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	dir := t.TempDir()
	perFile := 20000
	if raceEnabled {
		perFile = 6000
	}
	train := writeGenFiles(t, dir, 6, 2, perFile)
	snaps := filepath.Join(dir, "snapshots")
	every := int64(perFile / 2)
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/snap-samples-test",
		Config: config.Config{Job: config.JobConfig{Train: train, Workers: 2}, Snapshot: snapshot.Policy{Store: snaps, Every: -1, EverySamples: every}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := streamedConfig(6)
	cfg.Train.Epochs = 3
	// Each worker reads through a gate: LoadData's read of its file first
	// (perFile <= peekSamples), then steps of 3/4 `every` lines, 1.5 `every`
	// samples in all, so that a step from where the last snapshot was asked
	// for makes the scheduler ask for the next (the checkpoints are
	// committed at least every second, also while a worker waits at the
	// gate). The job needs 6 `every` lines per worker after LoadData's.
	names := []string{membership.WorkerName(0), membership.WorkerName(1)}
	var gates [2]*gateFS
	for i := range gates {
		gates[i] = newGateFS(ctx, lc, names[i], int64(perFile))
	}
	wait := startWorkers(t, ctx, 2, 0, job.Options{Config: withJob(cfg, train, nil), Etcd: lc.Etcd(), Prefix: lc.Prefix()},
		func(i int) reader.FS { return gates[i] })
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	withCheckpoints := func() int { return keptWithCheckpoints(t, store) }
	step, raised := 3*every/4, int64(0)
	raiseStep := func() {
		if raised+step > 5*every {
			t.Fatalf("%d samples trained per worker and %d snapshots by samples; the job must stay short of its end (%d)",
				raised, withCheckpoints(), 6*every)
		}
		raised += step
		for _, g := range gates {
			g.Raise(step)
		}
		waitLiveApplied(t, ctx, lc, names, raised-int64(cfg.Train.BatchSize)-1) // all trained but a partial batch
	}
	// The scheduler counts from its first look at the checkpoints (a tick
	// after the first snapshot), so the step that makes the first snapshot
	// by samples is not known: step until one is taken. From then on
	// every step asks for one more, until three are kept and the first
	// snapshot, taken at the start and holding nothing, is gone.
	for withCheckpoints() == 0 {
		raiseStep()
	}
	for n := withCheckpoints(); n < 3; n = withCheckpoints() {
		raiseStep()
		testutil.Eventually(t, time.Minute, fmt.Sprintf("%d kept snapshots with checkpoints", n+1), func() bool {
			return withCheckpoints() > n
		})
	}
	for _, g := range gates {
		g.Release()
	}
	wait()
	// Snapshots were taken while training (the first, at the start, holds
	// nothing), each kept one with more samples than the one before, and
	// no more of them than one per `every` samples (the checkpoints are
	// committed every second, so a snapshot may hold more samples than
	// were counted when it was asked for: the spacing of their contents is
	// not exact).
	checkSnapshotsBySamples(t, store, every, int64(cfg.Train.Epochs*2*perFile), raised/step)
}

// keptSnapshots returns the samples applied in each complete snapshot kept
// in store, oldest first, and the newest one's number.
func keptSnapshots(t *testing.T, store snapshot.Store) (applied []int64, newest uint64) {
	t.Helper()
	seqs, err := snapshot.Snapshots(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range slices.Backward(seqs) { // oldest first
		m, err := snapshot.ReadManifest(store, seq)
		if err != nil {
			continue
		}
		var sum int64
		for _, c := range checkpoints(t, m) {
			sum += c.Applied
		}
		applied = append(applied, sum)
		newest = seq
	}
	return applied, newest
}

// keptWithCheckpoints is the number of complete snapshots kept in store
// that hold samples applied.
func keptWithCheckpoints(t *testing.T, store snapshot.Store) int {
	t.Helper()
	applied, _ := keptSnapshots(t, store)
	n := 0
	for _, a := range applied {
		if a > 0 {
			n++
		}
	}
	return n
}

// checkSnapshotsBySamples waits until store keeps two snapshots, the
// oldest with checkpoints, and checks that each kept one holds more
// samples than the one before and that no more were taken than one per
// every samples of the job's total (held is how many times the gates held
// the workers, for the log).
func checkSnapshotsBySamples(t *testing.T, store snapshot.Store, every, total, held int64) {
	t.Helper()
	var applied []int64
	var newest uint64
	testutil.Eventually(t, time.Minute, "two snapshots with checkpoints", func() bool {
		applied, newest = keptSnapshots(t, store)
		return len(applied) >= 2 && applied[0] > 0
	})
	t.Logf("samples applied in the kept snapshots: %v, the newest is number %d (every %d of %d samples; the gates held the workers %d times)",
		applied, newest, every, total, held)
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
	return writeGen(t, dir, seed, n, perFile, "libffm")
}

// writeGen writes n files of perFile generated samples in dir, as libFFM
// or as Parquet (parquetsrc.TokenWriter), and returns their paths.
func writeGen(t *testing.T, dir string, seed uint64, n, perFile int, format string) []string {
	t.Helper()
	gen, err := datagen.New(genConfig(seed))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("part-%d.%s", i, format))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		err = writeGenTo(w, gen, perFile, format)
		for _, step := range []func() error{w.Flush, f.Close} {
			if err == nil {
				err = step()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// writeGenTo writes the next n samples of gen to w as libFFM or Parquet
// (parquetsrc.TokenWriter).
func writeGenTo(w io.Writer, gen *datagen.Generator, n int, format string) error {
	if format != "parquet" {
		_, err := gen.WriteLibFFM(w, n)
		return err
	}
	tw := parquetsrc.NewTokenWriter(w, gen.Fields())
	if err := gen.Tokens(n, func(label, _ float32, fields [][]uint64) error { return tw.Write(label, fields) }); err != nil {
		return err
	}
	return tw.Close()
}
