package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestRecoveryTime measures the recovery of issue 6: the time from kill -9
// of an AMS shard to training resumed, with a model of N rows. It is a
// benchmark, skipped unless XPS_RECOVERY_ROWS lists the row counts
// (bench/recovery.sh runs it):
//
//	XPS_RECOVERY_ROWS=1000000,10000000 go test ./tests/e2e -run TestRecoveryTime -v -timeout 60m
//
// For each N it starts a cluster of real processes on loopback, as the
// other tests of this package do: an embedded etcd, XPS_RECOVERY_SHARDS
// (default 3) cmd/ams shards, one cmd/scheduler with a directory snapshot
// store and no periodic snapshots, and one cmd/worker training a dim-8
// Adagrad model from ctrgen files (streamed in order, many epochs, so
// that it trains throughout). Every lease TTL is XPS_RECOVERY_TTL
// (default 2s). Once the worker trains, the test fills the worker's table
// with N more rows (pulls with create of N ids the data never uses: the
// fastest way to N rows; the rows have their Adagrad state as trained
// rows do), then asks for XPS_RECOVERY_SNAPSHOTS (default 2) snapshots
// one after another (the same path as a periodic one: the workers pause
// for it) and checks that the last holds the N rows. Then, for each of
// XPS_RECOVERY_KILLS (default 3) kills, shard k mod shards in turn, once
// the worker's progress lines show it has trained 300000 more samples
// (three passes over the data) since the previous step: SIGKILL. Every
// shard is supervised by the test as a supervisor would: whenever its
// process exits it is started again with the same arguments, at once, and
// after 100ms when the life that exited never served (a restarted shard
// cannot register its id until the lease of the killed process has
// expired, and exits). Times are taken by this
// process from t0, just before the kill, on one clock:
//
//	expired    etcd deletes the killed shard's member key (its lease expired)
//	degraded   the scheduler records DEGRADED (controlplane.StateKey)
//	rejoined   the restarted shard's member key is created
//	restoring  the scheduler records RESTORING (the slot is filled again)
//	serving    the scheduler records SERVING at the new version v: every
//	           shard has restored the newest snapshot
//	resumekey  the scheduler writes the resume at v ("workers resumed")
//	worker     the worker prints "the cluster was restored at version v"
//	trained    "training resumed": the first moment a poll of the shards'
//	           Stats (every 10ms, from serving on) finds a push applied by
//	           the restarted shard; it only accepts pushes of version v, so
//	           this is the first batch trained and pushed after the restore
//	progress   the worker's first progress line after "worker"
//
// The phases reported: detection = degraded; slot = restoring - degraded
// (waiting for the restarted shard to register); restore = serving -
// restoring (the scheduler verifies the snapshot's checksums, then every
// shard restores); resume = trained - serving; total = trained.
// others_lost names the other shards whose leases expired before serving
// (the recovery then starts over once they are back). Each kill
// prints one line "RECOVERY_JSON {...}", each snapshot one line
// "RECOVERY_SNAPSHOT_JSON {...}" (seconds: the scheduler's "snapshot
// written ... seconds="; worker_pause_s: from the worker's pause
// acknowledgement to the resume, the pause the worker sees), the fill one
// line "RECOVERY_FILL_JSON {...}", and one pass over the last snapshot
// "RECOVERY_VERIFY_JSON {...}" (verify_s: snapshot.Verify, which the
// scheduler runs before every restore; scan_s: reading every row once, as
// each shard's restore does). XPS_RECOVERY_LOGS=DIR keeps every
// process's output in DIR.
func TestRecoveryTime(t *testing.T) {
	rowsEnv := os.Getenv("XPS_RECOVERY_ROWS")
	if rowsEnv == "" {
		t.Skip("recovery benchmark (issue 6): set XPS_RECOVERY_ROWS=1000000,10000000 to run it (bench/recovery.sh)")
	}
	if testing.Short() {
		t.Skip("multi-process benchmark skipped in -short mode")
	}
	var sizes []int
	for _, s := range strings.Split(rowsEnv, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			t.Fatalf("XPS_RECOVERY_ROWS=%q: want comma-separated row counts", rowsEnv)
		}
		sizes = append(sizes, n)
	}
	o := recOptions{
		nShards:   int(envInt(t, "XPS_RECOVERY_SHARDS", 3)),
		kills:     int(envInt(t, "XPS_RECOVERY_KILLS", 3)),
		snapshots: int(envInt(t, "XPS_RECOVERY_SNAPSHOTS", 2)),
		ttl:       2 * time.Second,
	}
	if v := os.Getenv("XPS_RECOVERY_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("XPS_RECOVERY_TTL=%q: %v", v, err)
		}
		o.ttl = d
	}
	o.bin = build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	etcd, err := etcdembed.Start(ctx, etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	o.endpoints = strings.Join(etcd.Endpoints(), ",")
	o.cli, err = membership.Dial(ctx, etcd.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.cli.Close()
	o.cfg = filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(o.cfg, []byte(recoveryConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	o.train, o.test = filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm")
	gen, err := recStart(t, "ctrgen", filepath.Join(o.bin, "ctrgen"), "-config", o.cfg, "-train", o.train, "-test", o.test)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.wait(time.Minute); err != nil {
		t.Fatalf("ctrgen: %v\n%s", err, gen.output())
	}
	t.Logf("%d shards, lease TTL %v (ams, scheduler, worker), %d kills and %d snapshots per size, host: %d CPUs",
		o.nShards, o.ttl, o.kills, o.snapshots, runtime.NumCPU())
	for _, n := range sizes {
		t.Run(fmt.Sprintf("rows=%d", n), func(t *testing.T) {
			rc := &recCluster{recOptions: o, t: t, ctx: ctx, rows: n, dir: t.TempDir()}
			rc.run()
		})
	}
}

// recoveryConfig is the benchmark's job: the fault test's model, files
// streamed in order (reader positions are file offsets), enough epochs to
// train throughout, a progress line every 100ms.
const recoveryConfig = `
model:
  tables: [{name: emb, dim: 8, optimizer: {name: adagrad, lr: 0.05}, init: {kind: uniform, scale: 0.01}}]
  hidden: [32, 16]
train: {batch_size: 128, epochs: 10000, progress_every: 100ms, shuffle: false}
data: {train_samples: 100000, test_samples: 2000, fields: 8, user_fields: 3, vocab: 2000, mean_bag: 2}
`

// recFillBase is the first id of the fill rows, a consecutive range: the
// data's ids are 64-bit hashes (reader.FeatureID), so a collision, which
// would only make one fill row fewer, is unlikely.
const recFillBase = uint64(1) << 48

// recOptions is what every size's cluster shares.
type recOptions struct {
	bin, endpoints, cfg, train, test string
	cli                              *clientv3.Client
	nShards, kills, snapshots        int
	ttl                              time.Duration
}

// recCluster is the cluster of one row count.
type recCluster struct {
	recOptions
	t      *testing.T
	ctx    context.Context
	rows   int
	dir    string
	name   string
	prefix string
	watch  *recWatch
	sched  *recProc
	worker *recProc

	slots []*recSlot
}

func (rc *recCluster) common() []string {
	return []string{"-etcd", rc.endpoints, "-cluster", rc.name}
}

// snaps is the snapshot store: the scheduler's, and the shards' store root.
func (rc *recCluster) snaps() string { return filepath.Join(rc.dir, "snapshots") }

func (rc *recCluster) shardArgs(i int) []string {
	return append(rc.common(), "-id", fmt.Sprintf("ams-%d", i), "-lease-ttl", rc.ttl.String(), "-store", rc.snaps())
}

func (rc *recCluster) shard(i int) *recProc { return rc.slots[i].current() }

func (rc *recCluster) fatalf(format string, args ...any) {
	rc.t.Helper()
	rc.t.Logf("--- scheduler:\n%s", recTail(rc.sched.output(), 4000))
	rc.t.Logf("--- worker:\n%s", recTail(rc.worker.output(), 4000))
	for i := range rc.slots {
		rc.t.Logf("--- ams-%d (%d lives):\n%s", i, len(rc.slots[i].lives), recTail(rc.shard(i).output(), 2000))
	}
	rc.t.Fatalf(format, args...)
}

func (rc *recCluster) run() {
	t := rc.t
	rc.name = fmt.Sprintf("recovery-%d", rc.rows)
	var err error
	if rc.prefix, err = membership.Prefix(rc.name); err != nil {
		t.Fatal(err)
	}
	if rc.watch, err = startRecWatch(rc.ctx, rc.cli, rc.prefix); err != nil {
		t.Fatal(err)
	}
	defer rc.watch.stop()
	snaps := rc.snaps()
	stopSup := rc.startProcs(snaps)
	defer stopSup()

	if _, ok := rc.watch.await(rc.ctx, time.Time{}, 2*time.Minute, rc.isState("SERVING")); !ok {
		rc.fatalf("the cluster did not serve")
	}
	if _, ok := rc.worker.await(time.Time{}, time.Minute, "samples/s"); !ok {
		rc.fatalf("the worker did not train")
	}
	rc.fill()
	var lastSeq uint64
	for k := 1; k <= rc.snapshots; k++ {
		lastSeq = rc.snapshot(k)
	}
	for k := 1; k <= rc.kills; k++ {
		rc.killOnce(k, (k-1)%rc.nShards)
	}
	rc.verify(snaps, lastSeq)
}

// startProcs starts the scheduler, the shards, each supervised (restarted
// whenever it exits), and the worker; the returned func stops the
// supervisors (before the processes are killed at the test's end).
func (rc *recCluster) startProcs(snaps string) (stopSupervisors func()) {
	t := rc.t
	sctx, cancel := context.WithCancel(rc.ctx)
	var wg sync.WaitGroup
	stop := func() {
		cancel()
		wg.Wait()
	}
	start := func(name string, args ...string) *recProc {
		p, err := recStart(t, name, filepath.Join(rc.bin, args[0]), args[1:]...)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		return p
	}
	rc.sched = start("scheduler", append([]string{"scheduler"}, append(rc.common(), "-id", "sched-0",
		"-shards", strconv.Itoa(rc.nShards), "-lease-ttl", rc.ttl.String(), "-train", rc.train, "-workers", "1",
		"-snapshot-store", snaps, "-log-level", "info")...)...)
	for i := range rc.nShards {
		slot := &recSlot{t: t, id: fmt.Sprintf("ams-%d", i), bin: filepath.Join(rc.bin, "ams"), args: rc.shardArgs(i)}
		if err := slot.start(); err != nil {
			stop()
			t.Fatal(err)
		}
		slot.supervise(sctx, &wg)
		rc.slots = append(rc.slots, slot)
	}
	rc.worker = start("worker", append([]string{"worker"}, append(rc.common(), "-config", rc.cfg, "-train", rc.train,
		"-test", rc.test, "-workers", "1", "-worker-index", "0", "-lease-ttl", rc.ttl.String())...)...)
	return stop
}

// verify times the snapshot check the scheduler runs before each restore
// (snapshot.Verify of snapshot seq), alone, then one pass over every row
// of the snapshot with the ownership test a shard's restore applies to
// each row: every shard makes this pass (it reads every shard's file and
// keeps its own rows).
func (rc *recCluster) verify(snaps string, seq uint64) {
	t := rc.t
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	m, err := snapshot.ReadManifest(store, seq)
	if err != nil {
		t.Fatal(err)
	}
	vstart := time.Now()
	if err := snapshot.Verify(store, m); err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, tab := range m.Tables {
		for _, f := range tab.Files {
			size += f.Size
		}
	}
	verify := time.Since(vstart).Seconds()
	sm, err := testutil.Conn(rc.cli, rc.prefix).GetShardMap(rc.ctx)
	if err != nil {
		t.Fatal(err)
	}
	sstart := time.Now()
	var scanned, mine int64
	for _, tab := range m.Tables {
		for _, f := range tab.Files {
			tr, err := snapshot.OpenTable(store, seq, f)
			if err != nil {
				t.Fatal(err)
			}
			for tr.Next() {
				id, _ := tr.Row()
				scanned++
				if sm.ShardOf(tab.Name, id) == 0 {
					mine++
				}
			}
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			tr.Close()
		}
	}
	recEmit(t, "RECOVERY_VERIFY_JSON", map[string]any{"rows": rc.rows, "seq": seq, "bytes": size,
		"verify_s": verify, "scan_rows": scanned, "scan_s": time.Since(sstart).Seconds(), "shard0_rows": mine})
}

// isState matches a scheduler state record of phase.
func (rc *recCluster) isState(phase string) func(recEvent) bool {
	key := controlplane.StateKey(rc.prefix)
	return func(e recEvent) bool {
		if !e.put || e.key != key {
			return false
		}
		var st controlplane.ClusterState
		return json.Unmarshal(e.val, &st) == nil && st.Phase == phase
	}
}

// fill adds rc.rows rows to the worker's table by pulls with create.
func (rc *recCluster) fill() {
	t := rc.t
	cfg, err := config.Load(rc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := testutil.Conn(rc.cli, rc.prefix).GetShardMap(rc.ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(m)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Declare(rc.ctx, cfg.Model.Tables, nil); err != nil {
		rc.fatalf("declare: %v", err)
	}
	table, dim := cfg.Model.Tables[0].Name, cfg.Model.Tables[0].Dim
	const batch, pullers = 1 << 17, 2
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, pullers)
	for g := range pullers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]uint64, 0, batch)
			rows := make([]float32, batch*dim)
			for lo := g * batch; lo < rc.rows; lo += pullers * batch {
				ids = ids[:0]
				for i := lo; i < min(lo+batch, rc.rows); i++ {
					ids = append(ids, recFillBase+uint64(i))
				}
				tabs := []client.Table{{Name: table, IDs: ids, Rows: rows[:len(ids)*dim]}}
				if err := cl.Pull(rc.ctx, tabs, nil, true); err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			rc.fatalf("fill: %v", err)
		}
	}
	secs := time.Since(start).Seconds()
	sts, err := cl.Stats(rc.ctx)
	if err != nil {
		rc.fatalf("stats: %v", err)
	}
	var total, mem uint64
	for _, st := range sts {
		for _, tab := range st.Tables {
			total += tab.Rows
			mem += tab.MemoryBytes
		}
	}
	var rss int64
	for i := range rc.slots {
		rss += recRSS(rc.shard(i).cmd.Process.Pid)
	}
	if total < uint64(rc.rows) {
		rc.fatalf("the shards hold %d rows after the fill, want at least %d", total, rc.rows)
	}
	recEmit(t, "RECOVERY_FILL_JSON", map[string]any{"rows": rc.rows, "table_rows": total, "fill_s": secs,
		"table_bytes": mem, "shards_rss_bytes": rss})
}

// snapshot asks for a snapshot and reports it and the workers' pause.
func (rc *recCluster) snapshot(k int) uint64 {
	t := rc.t
	before := time.Now()
	res, err := testutil.Conn(rc.cli, rc.prefix).RequestSnapshot(rc.ctx, false)
	if err != nil {
		rc.fatalf("snapshot %d: %v", k, err)
	}
	if res.Rows < int64(rc.rows) {
		rc.fatalf("snapshot %d holds %d rows, want at least %d", res.Seq, res.Rows, rc.rows)
	}
	out := map[string]any{"rows": rc.rows, "n": k, "seq": res.Seq, "snapshot_rows": res.Rows, "seconds": res.Seconds,
		"load1": recLoad()}
	// The pause: the pause request, the worker's acknowledgement (it
	// stops at a batch boundary), the resume of the same sequence number.
	pauseKey, ackKey := controlplane.PauseKey(rc.prefix), controlplane.PauseAckKey(rc.prefix, membership.WorkerName(0))
	pause, ok := rc.watch.first(before, func(e recEvent) bool { return e.put && e.key == pauseKey })
	if ok {
		seq := string(pause.val)
		ack, ok1 := rc.watch.first(before, func(e recEvent) bool { return e.put && e.key == ackKey && string(e.val) == seq })
		resume, ok2 := rc.watch.await(rc.ctx, before, 10*time.Second, func(e recEvent) bool {
			r, ok := controlplane.ParseResume(e.val)
			return e.put && e.key == controlplane.ResumeKey(rc.prefix) && ok && strconv.FormatUint(r.Seq, 10) == seq
		})
		if ok1 && ok2 {
			out["worker_pause_s"] = resume.at.Sub(ack.at).Seconds()
			out["pause_window_s"] = resume.at.Sub(pause.at).Seconds()
		}
	}
	recEmit(t, "RECOVERY_SNAPSHOT_JSON", out)
	return res.Seq
}

// recSteadySamples is how much the worker trains before each kill: three
// passes over the data of recoveryConfig (about 2s on a 2-core machine).
const recSteadySamples = 300000

// killOnce kills shard victim, restarts it as a supervisor would and
// measures the recovery.
func (rc *recCluster) killOnce(k, victim int) {
	t := rc.t
	id := fmt.Sprintf("ams-%d", victim)
	rc.awaitSteady(k)
	b := rc.before(victim)
	t0 := time.Now()
	if err := b.lives[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		rc.fatalf("kill %s: %v", id, err)
	}
	const timeout = 5 * time.Minute
	ev := rc.recoveryEvents(k, id, t0, timeout)
	// The victim's life that serves now, and the lives it took.
	np, attempts, ok := rc.slots[victim].servedSince(t0)
	if !ok {
		rc.fatalf("kill %d: %s serves again but no life of it since the kill says so", k, id)
	}
	lost, lostDetail := rc.othersLost(victim, t0, ev.serving, b.lives)
	cpu := rc.cpuUsed(b, victim, np)
	var st controlplane.ClusterState
	json.Unmarshal(ev.serving.val, &st)
	resumeKey := rc.must(k, id, "resume", t0, timeout, func(e recEvent) bool {
		r, ok := controlplane.ParseResume(e.val)
		return e.put && e.key == controlplane.ResumeKey(rc.prefix) && ok && r.Version == st.Version
	})
	trained := rc.awaitPush(k, id, st.Version, timeout)
	saw, ok := rc.worker.await(t0, time.Minute, fmt.Sprintf("the cluster was restored at version %d", st.Version))
	if !ok {
		rc.fatalf("kill %d: the worker did not report the restore at version %d", k, st.Version)
	}
	progress, _ := rc.worker.await(saw.at, time.Minute, "samples/s")
	restoreLog, _ := rc.sched.await(t0, time.Minute, "restore done")

	s := func(at time.Time) float64 { return at.Sub(t0).Seconds() }
	out := map[string]any{
		"rows": rc.rows, "kill": k, "victim": id, "shards": rc.nShards, "lease_ttl_s": rc.ttl.Seconds(),
		"version": st.Version, "victim_rss_bytes": b.rss, "restart_attempts": attempts, "cpu_s": cpu,
		"others_lost": lost, "others_lost_detail": lostDetail, "load1": b.load,
		"expired_s": s(ev.expired.at), "degraded_s": s(ev.degraded.at), "rejoined_s": s(ev.rejoined.at),
		"restoring_s": s(ev.restoring.at), "serving_s": s(ev.serving.at), "resumekey_s": s(resumeKey.at),
		"worker_s": s(saw.at), "trained_s": s(trained), "progress_s": s(progress.at),
		"detect_s":  s(ev.degraded.at),
		"slot_s":    ev.restoring.at.Sub(ev.degraded.at).Seconds(),
		"restore_s": ev.serving.at.Sub(ev.restoring.at).Seconds(),
		"resume_s":  trained.Sub(ev.serving.at).Seconds(),
		"total_s":   s(trained),
	}
	if v, ok := recLogFloat(restoreLog.text, "seconds"); ok {
		out["scheduler_restore_s"] = v
	}
	recEmit(t, "RECOVERY_JSON", out)
}

// awaitSteady waits until the worker, training steadily, has reported
// recSteadySamples more samples trained than it had when called (its
// progress lines count the samples of its attempt).
func (rc *recCluster) awaitSteady(k int) {
	from := rc.worker.lastSamples()
	if _, ok := rc.worker.awaitFunc(time.Now(), 5*time.Minute, func(text string) bool {
		n, ok := progressSamples(text)
		return ok && n >= from+recSteadySamples
	}); !ok {
		rc.fatalf("kill %d: the worker did not train %d samples after %d", k, recSteadySamples, from)
	}
}

// recBefore is what killOnce notes of the cluster just before a kill.
type recBefore struct {
	rss   int64              // the victim's resident set
	cpu   map[string]float64 // CPU seconds of the scheduler, the worker and the other shards
	pids  map[string]int     // the other shards' processes cpu counts
	lives []*recProc         // every shard's life at the kill
	load  float64
}

// before notes the victim's RSS, the CPU time of the processes that live
// on (to count what the recovery costs each of them), every shard's life
// and the load.
func (rc *recCluster) before(victim int) recBefore {
	b := recBefore{rss: recRSS(rc.shard(victim).cmd.Process.Pid), pids: map[string]int{}, lives: make([]*recProc, rc.nShards),
		cpu: map[string]float64{"scheduler": recCPU(rc.sched.cmd.Process.Pid), "worker": recCPU(rc.worker.cmd.Process.Pid)}}
	for i := range rc.nShards {
		b.lives[i] = rc.shard(i)
		if i != victim {
			pid := b.lives[i].cmd.Process.Pid
			b.cpu[fmt.Sprintf("ams-%d", i)], b.pids[fmt.Sprintf("ams-%d", i)] = recCPU(pid), pid
		}
	}
	b.load = recLoad()
	return b
}

// recEvents are the etcd events of a shard's recovery.
type recEvents struct {
	expired   recEvent // the killed shard's member key deleted
	degraded  recEvent
	rejoined  recEvent // its member key created again
	restoring recEvent
	serving   recEvent
}

// recoveryEvents waits for the events of shard id's recovery after t0.
func (rc *recCluster) recoveryEvents(k int, id string, t0 time.Time, timeout time.Duration) recEvents {
	memberKey := membership.MemberKey(rc.prefix, membership.KindAMS, id)
	var ev recEvents
	ev.expired = rc.must(k, id, "lease expiry", t0, timeout, func(e recEvent) bool { return !e.put && e.key == memberKey })
	ev.degraded = rc.must(k, id, "DEGRADED", t0, timeout, rc.isState("DEGRADED"))
	ev.rejoined = rc.must(k, id, "rejoin", t0, timeout, func(e recEvent) bool { return e.put && e.key == memberKey })
	ev.restoring = rc.must(k, id, "RESTORING", t0, timeout, rc.isState("RESTORING"))
	ev.serving = rc.must(k, id, "SERVING", ev.restoring.at, timeout, rc.isState("SERVING"))
	return ev
}

// must waits for an event after after, failing kill k of id without one.
func (rc *recCluster) must(k int, id, what string, after time.Time, timeout time.Duration, match func(recEvent) bool) recEvent {
	rc.t.Helper()
	e, ok := rc.watch.await(rc.ctx, after, timeout, match)
	if !ok {
		rc.fatalf("kill %d of %s: no %s within %v", k, id, what, timeout)
	}
	return e
}

// othersLost lists the other shards whose leases expired between t0 and
// serving (the recovery then restarts; the supervisor restarted them),
// with the details of each; lives are the shards' lives at t0.
func (rc *recCluster) othersLost(victim int, t0 time.Time, serving recEvent, lives []*recProc) ([]string, []map[string]any) {
	var lost []string
	var detail []map[string]any
	for i := range rc.nShards {
		if i == victim {
			continue
		}
		other := membership.MemberKey(rc.prefix, membership.KindAMS, fmt.Sprintf("ams-%d", i))
		gone, ok := rc.watch.first(t0, func(e recEvent) bool { return !e.put && e.key == other && e.at.Before(serving.at) })
		if !ok {
			continue
		}
		lost = append(lost, fmt.Sprintf("ams-%d", i))
		d := map[string]any{"id": fmt.Sprintf("ams-%d", i), "key_deleted_s": gone.at.Sub(t0).Seconds()}
		if l, ok := lives[i].await(t0, 0, "lost its etcd lease"); ok {
			d["said_lost_s"] = l.at.Sub(t0).Seconds() // printed as it exits, after node.Close
		}
		if p := lives[i]; p.exited() {
			d["exited_s"] = p.exitAt.Sub(t0).Seconds()
			if ls := strings.Split(strings.TrimSpace(p.output()), "\n"); len(ls) > 0 {
				d["last_line"] = ls[len(ls)-1]
			}
		}
		if back, ok := rc.watch.first(gone.at, func(e recEvent) bool { return e.put && e.key == other }); ok {
			d["rejoined_s"] = back.at.Sub(t0).Seconds()
		}
		detail = append(detail, d)
	}
	return lost, detail
}

// cpuUsed returns the CPU seconds each process spent since b: the
// scheduler, the worker, the other shards still in the life b saw, and
// the victim's new life np, whole (up to SERVING).
func (rc *recCluster) cpuUsed(b recBefore, victim int, np *recProc) map[string]float64 {
	cpu := map[string]float64{"scheduler": recCPU(rc.sched.cmd.Process.Pid) - b.cpu["scheduler"],
		"worker": recCPU(rc.worker.cmd.Process.Pid) - b.cpu["worker"]}
	for i := range rc.nShards {
		id := fmt.Sprintf("ams-%d", i)
		if i == victim {
			cpu[id] = recCPU(np.cmd.Process.Pid)
		} else if _, ok := b.cpu[id]; ok && rc.shard(i).cmd.Process.Pid == b.pids[id] {
			cpu[id] = recCPU(rc.shard(i).cmd.Process.Pid) - b.cpu[id]
		}
	}
	return cpu
}

// awaitPush returns when training resumed: the first time a poll of the
// shards' Stats (every 10ms) finds a push applied by the restarted shard
// id (it accepts only pushes of the new version).
func (rc *recCluster) awaitPush(k int, id string, version uint64, timeout time.Duration) time.Time {
	m, err := testutil.Conn(rc.cli, rc.prefix).WaitShardMapVersion(rc.ctx, version)
	if err != nil || m.Version != version {
		rc.fatalf("kill %d: shard map of version %d: %v", k, version, err)
	}
	cl, err := client.New(m)
	if err != nil {
		rc.fatalf("kill %d: %v", k, err)
	}
	defer cl.Close()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			rc.fatalf("kill %d of %s: no push on the restarted shard within %v of SERVING(v%d)", k, id, timeout, version)
		}
		sctx, cancel := context.WithTimeout(rc.ctx, 2*time.Second)
		sts, err := cl.Stats(sctx)
		cancel()
		if err != nil {
			continue
		}
		for _, s := range sts {
			if s.ShardId == id && s.PushRequests > 0 {
				return time.Now()
			}
		}
	}
}

// recEmit logs one machine-readable line: tag, a space, JSON.
func recEmit(t *testing.T, tag string, v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s", tag, b)
}

// recLogFloat reads key=value from a slog text line.
func recLogFloat(line, key string) (float64, bool) {
	m := regexp.MustCompile(`\b` + regexp.QuoteMeta(key) + `=([0-9.eE+-]+)`).FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// recRSS is the resident set size of process pid, 0 if unknown.
func recRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// recLoad is the host's one-minute load average, 0 if unknown.
func recLoad() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// recCPU is the user and system CPU time of process pid in seconds, 0
// if unknown (Linux, 100 clock ticks a second).
func recCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // from field 3, the state
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

func recTail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// recSlot supervises one shard as a supervisor would: whenever the
// process exits it is started again with the same arguments, at once
// after a life that served (printed its address) and after 100ms
// otherwise (it could not register: the id of the dead life is still
// registered until its lease expires).
type recSlot struct {
	t       *testing.T
	id, bin string
	args    []string
	mu      sync.Mutex
	lives   []*recProc // every life, the current one last
}

func (s *recSlot) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := recStart(s.t, fmt.Sprintf("%s#%d", s.id, len(s.lives)+1), s.bin, s.args...)
	if err != nil {
		return err
	}
	s.lives = append(s.lives, p)
	return nil
}

func (s *recSlot) current() *recProc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lives[len(s.lives)-1]
}

// supervise restarts the shard whenever it exits, until ctx ends.
func (s *recSlot) supervise(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			p := s.current()
			select {
			case <-p.done:
			case <-ctx.Done():
				return
			}
			if _, served := p.await(time.Time{}, 0, "serving on"); !served {
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return
				}
			}
			if err := s.start(); err != nil {
				s.t.Errorf("restart %s: %v", s.id, err)
				return
			}
		}
	}()
}

// servedSince returns the first life started after t that serves, and
// how many lives were started after t up to it.
func (s *recSlot) servedSince(t time.Time) (*recProc, int, bool) {
	s.mu.Lock()
	lives := append([]*recProc(nil), s.lives...)
	s.mu.Unlock()
	n := 0
	for _, p := range lives {
		if !p.started.After(t) {
			continue
		}
		n++
		if _, ok := p.await(time.Time{}, 0, "serving on"); ok {
			return p, n, true
		}
	}
	return nil, n, false
}

// recLine is a line of a child's output, stamped when it arrived.
type recLine struct {
	at   time.Time
	text string
}

// recProc is a child process whose output lines are stamped on arrival.
type recProc struct {
	name    string
	started time.Time
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // its exit, set before done is closed
	exitAt  time.Time     // when it exited, set before done is closed

	mu      sync.Mutex
	out     bytes.Buffer
	partial []byte
	lines   []recLine
}

func (p *recProc) Write(b []byte) (int, error) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Write(b)
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		p.lines = append(p.lines, recLine{at: now, text: string(p.partial[:i])})
		p.partial = p.partial[i+1:]
	}
	return len(b), nil
}

func (p *recProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *recProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// await waits up to d for a line containing sub that arrived after
// after, returning early with false when the process exits without one.
func (p *recProc) await(after time.Time, d time.Duration, sub string) (recLine, bool) {
	return p.awaitFunc(after, d, func(text string) bool { return strings.Contains(text, sub) })
}

// awaitFunc is await of a line that match accepts.
func (p *recProc) awaitFunc(after time.Time, d time.Duration, match func(text string) bool) (recLine, bool) {
	deadline := time.Now().Add(d)
	for {
		exited := p.exited()
		p.mu.Lock()
		for _, l := range p.lines {
			if l.at.After(after) && match(l.text) {
				p.mu.Unlock()
				return l, true
			}
		}
		p.mu.Unlock()
		if exited || time.Now().After(deadline) {
			return recLine{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lastSamples returns the samples of the worker's latest progress line
// (those of its attempt), 0 when it printed none.
func (p *recProc) lastSamples() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.lines) - 1; i >= 0; i-- {
		if n, ok := progressSamples(p.lines[i].text); ok {
			return n
		}
	}
	return 0
}

func (p *recProc) wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("%s did not finish in %v", p.name, d)
	}
}

// recStart starts a child process, killed when the test ends.
func recStart(t *testing.T, name, bin string, args ...string) (*recProc, error) {
	p := &recProc{name: name, started: time.Now(), done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.exitAt = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("--- output of %s:\n%s", name, recTail(p.output(), 3000))
		}
		if dir := os.Getenv("XPS_RECOVERY_LOGS"); dir != "" {
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"."+name+".log"), []byte(p.output()), 0o644)
		}
	})
	return p, nil
}

// recEvent is an etcd change under the cluster's prefix, stamped when
// this process received it.
type recEvent struct {
	at  time.Time
	put bool // else a delete
	key string
	val []byte
}

// recWatch records every change under a prefix.
type recWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	events []recEvent
}

func startRecWatch(ctx context.Context, cli *clientv3.Client, prefix string) (*recWatch, error) {
	resp, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, err
	}
	w := &recWatch{}
	ctx, w.cancel = context.WithCancel(clientv3.WithRequireLeader(ctx))
	ch := cli.Watch(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for r := range ch {
			now := time.Now()
			w.mu.Lock()
			for _, ev := range r.Events {
				w.events = append(w.events, recEvent{at: now, put: ev.Type == clientv3.EventTypePut,
					key: string(ev.Kv.Key), val: ev.Kv.Value})
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

func (w *recWatch) stop() {
	w.cancel()
	w.wg.Wait()
}

// first returns the first recorded event after after that matches.
func (w *recWatch) first(after time.Time, match func(recEvent) bool) (recEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if e.at.After(after) && match(e) {
			return e, true
		}
	}
	return recEvent{}, false
}

// await polls first until it finds an event, for up to d.
func (w *recWatch) await(ctx context.Context, after time.Time, d time.Duration, match func(recEvent) bool) (recEvent, bool) {
	deadline := time.Now().Add(d)
	for {
		if e, ok := w.first(after, match); ok {
			return e, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return recEvent{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
