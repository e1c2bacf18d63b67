package ctrtrain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
)

// gateFS is the local file system with a gate on reading, given to one
// worker as job.Options.FS by the tests whose fault points are tied to
// training progress: the worker's reads deliver at most Budget lines in
// all (every open counts, LoadData's look at the data and re-reads after a
// rollback too) until the test raises the budget. However fast the machine,
// a job cannot run past the point the test allows, so it cannot end before
// the test's fault.
//
// A worker held at the gate must still answer the scheduler's pauses
// (snapshots and rollbacks wait for them), and it answers at its next batch
// boundary. So while the worker owes a pause (the latest pause request is
// neither acknowledged by it nor resumed), a few lines at a time go through
// past the budget: at most what the worker's pipeline takes in until it
// pauses, a few hundred samples per pause. Tests count pauses while held
// (snapshots they ask for, rollbacks of their faults) and leave a margin.
type gateFS struct {
	reader.LocalFS
	ctx  context.Context
	owes func(context.Context) bool // whether the worker owes a pause

	mu      sync.Mutex
	budget  int64         // lines; math.MaxInt64 once released
	read    int64         // lines delivered, past the budget included
	leaked  int64         // lines delivered past the budget
	changed chan struct{} // closed and replaced when the budget changes
}

// leakLines is how many lines one Read delivers past the budget while the
// worker owes a pause.
const leakLines = 4

// newGateFS returns a gate for worker's reads holding them at budget lines
// until raised; reads fail once ctx ends (a failed test releases its
// workers that way). The worker's pauses are looked up in lc's etcd.
func newGateFS(ctx context.Context, lc *cluster.Cluster, worker string, budget int64) *gateFS {
	return &gateFS{ctx: ctx, budget: budget, changed: make(chan struct{}),
		owes: func(ctx context.Context) bool { return owesPause(ctx, lc.Etcd(), lc.Prefix(), worker) }}
}

// Raise lets n more lines through.
func (g *gateFS) Raise(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setLocked(min(g.budget, math.MaxInt64-n) + n)
}

// Release lets every later read through.
func (g *gateFS) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setLocked(math.MaxInt64)
}

func (g *gateFS) setLocked(budget int64) {
	g.budget = budget
	close(g.changed)
	g.changed = make(chan struct{})
}

// Lines returns the lines delivered so far, and those of them delivered
// past the budget while the worker owed a pause.
func (g *gateFS) Lines() (read, leaked int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.read, g.leaked
}

// Open implements reader.FS.
func (g *gateFS) Open(name string) (reader.File, error) {
	f, err := g.LocalFS.Open(name)
	if err != nil {
		return nil, err
	}
	return &gateFile{File: f, g: g}, nil
}

// allowance waits until lines may be delivered and returns how many.
func (g *gateFS) allowance() (int64, error) {
	for {
		g.mu.Lock()
		left, changed := g.budget-g.read, g.changed
		if g.budget == math.MaxInt64 {
			left = math.MaxInt64
		}
		g.mu.Unlock()
		if left > 0 {
			return left, nil
		}
		if g.owes(g.ctx) {
			return leakLines, nil
		}
		select { // polling with the test's deadline: the pause is an event in etcd
		case <-changed:
		case <-g.ctx.Done():
			return 0, g.ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// gateFile is a file of a gateFS.
type gateFile struct {
	reader.File
	g *gateFS
}

// gateReadBytes bounds one read of a gateFile, so that what the gate lets
// through is what the worker reads, not what its reader buffers ahead (a
// resume's reader reads the file's start, then seeks, dropping its buffer).
const gateReadBytes = 4 << 10

// Read delivers bytes up to the end of the last line the gate allows; the
// rest of what the file read is put back (Seek).
func (f *gateFile) Read(p []byte) (int, error) {
	allow, err := f.g.allowance()
	if err != nil {
		return 0, err
	}
	n, err := f.File.Read(p[:min(len(p), gateReadBytes)])
	lines, cut := int64(0), n
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if lines++; lines == allow {
			cut = i
			break
		}
	}
	if cut < n {
		if _, serr := f.File.Seek(int64(cut-n), io.SeekCurrent); serr != nil {
			return 0, serr
		}
		n, err = cut, nil
	}
	f.g.mu.Lock()
	f.g.read += lines
	f.g.leaked += max(min(lines, f.g.read-f.g.budget), 0)
	f.g.mu.Unlock()
	return n, err
}

// owesPause reports whether worker owes the scheduler a pause: the latest
// pause request is above both its acknowledgement and the latest resume.
func owesPause(ctx context.Context, cli *clientv3.Client, prefix, worker string) bool {
	resp, err := cli.Get(ctx, prefix+"/snapshot/", clientv3.WithPrefix())
	if err != nil {
		return false
	}
	var pause, acked, resumed uint64
	for _, kv := range resp.Kvs {
		switch string(kv.Key) {
		case controlplane.PauseKey(prefix):
			pause, _ = strconv.ParseUint(string(kv.Value), 10, 64)
		case controlplane.PauseAckKey(prefix, worker):
			acked, _ = strconv.ParseUint(string(kv.Value), 10, 64)
		case controlplane.ResumeKey(prefix):
			if r, ok := controlplane.ParseResume(kv.Value); ok {
				resumed = r.Seq
			}
		}
	}
	return pause > max(acked, resumed)
}

// checkpoints returns the workers' checkpoints in a snapshot's manifest,
// by worker name.
func checkpoints(t *testing.T, m *snapshot.Manifest) map[string]Checkpoint {
	t.Helper()
	out := map[string]Checkpoint{}
	for k, v := range m.Readers {
		if !strings.HasPrefix(k, PositionKeyPrefix) || !strings.HasSuffix(k, "/checkpoint") {
			continue
		}
		var c Checkpoint
		if err := json.Unmarshal(v, &c); err != nil {
			t.Fatalf("snapshot %d: checkpoint %s = %s: %v", m.Seq, k, v, err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(k, PositionKeyPrefix), "/checkpoint")] = c
	}
	return out
}

// liveApplied returns the samples each worker's checkpoint in the live
// model counts as applied (by worker name), at the latest shard map; ok is
// false when the model cannot be read now (a restore in progress).
func liveApplied(ctx context.Context, lc *cluster.Cluster) (map[string]int64, bool) {
	m, err := lc.Conn().WaitShardMap(ctx)
	if err != nil {
		return nil, false
	}
	cl, err := client.New(m)
	if err != nil {
		return nil, false
	}
	defer cl.Close()
	entries, err := cl.GetState(ctx, PositionKeyPrefix)
	if err != nil {
		return nil, false
	}
	out := map[string]int64{}
	for _, e := range entries {
		var c Checkpoint
		if strings.HasSuffix(e.Key, "/checkpoint") && json.Unmarshal(e.Value, &c) == nil {
			out[strings.TrimSuffix(strings.TrimPrefix(e.Key, PositionKeyPrefix), "/checkpoint")] = c.Applied
		}
	}
	return out, true
}

// waitLiveApplied waits until the live model's checkpoint of every one of
// workers counts at least min samples applied.
func waitLiveApplied(t *testing.T, ctx context.Context, lc *cluster.Cluster, workers []string, min int64) {
	t.Helper()
	var last map[string]int64
	deadline := time.Now().Add(time.Minute)
	for {
		if applied, ok := liveApplied(ctx, lc); ok {
			last = applied
			done := true
			for _, w := range workers {
				done = done && applied[w] >= min
			}
			if done {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 1m waiting for checkpoints of %s with %d samples applied (last seen: %v)",
				strings.Join(workers, ", "), min, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requestSnapshot asks the scheduler for a snapshot until one it returns
// satisfies ok (at most three times), and returns its result and manifest.
// RequestSnapshot returns the result of the next snapshot to finish, which
// is not the one it asked for when another was in progress (a periodic one,
// or the first, taken at the start): the asked-for one finishes after it.
func requestSnapshot(t *testing.T, ctx context.Context, lc *cluster.Cluster, store snapshot.Store, ok func(*snapshot.Manifest) bool) (controlplane.SnapshotResult, *snapshot.Manifest) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		res, err := lc.Conn().RequestSnapshot(ctx, false)
		if err != nil {
			t.Fatalf("RequestSnapshot = %+v, %v", res, err)
		}
		m, err := snapshot.ReadManifest(store, res.Seq)
		if err != nil {
			t.Fatalf("snapshot %d: %v", res.Seq, err)
		}
		if ok(m) {
			return res, m
		}
		if attempt == 3 {
			t.Fatalf("RequestSnapshot = %+v three times over: none of them the snapshot wanted (the last: version %d, readers %s)",
				res, m.Version, m.Readers)
		}
	}
}
