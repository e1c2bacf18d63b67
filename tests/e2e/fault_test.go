package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/job/ctrtrain"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// faultConfig is the fault test's job: a progress line every 100ms (the
// kills are keyed to them), the source's reading (faultSource.train:
// files shuffled through small windows, so that kills fall inside
// windows; Kafka read in order) and its table's storage
// (faultSource.table). Over Kafka, train.epochs is 1: the epochs are in
// the topic.
const faultConfig = `
model:
  tables: [{name: emb, dim: 8, optimizer: {name: adagrad, lr: 0.05}, init: {kind: uniform, scale: 0.01}%s}]
  hidden: [32, 16]
train: {batch_size: 128, epochs: %d, progress_every: 100ms, %s}
data: {train_samples: %d, test_samples: 10000, fields: 8, user_fields: 3, vocab: 2000, mean_bag: 2}
`

// The fault test's cluster settings.
const (
	faultLeaseTTL     = 2 * time.Second // of every member: how long a death goes unnoticed
	faultRestartDelay = 300 * time.Millisecond
	faultSnapEvery    = time.Second
	// The kills come in order at random points of [faultFirst, faultLast]
	// of the job's samples (one point in each of kills equal segments),
	// as the trainers report their progress.
	faultFirst, faultLast = 0.05, 0.65
	// faultSamples is the default dataset: with 3 epochs, about 10-30 s
	// of training on a 2-core machine, from files or Kafka. It does not
	// decide whether the kills happen before the job ends (the gate
	// does), only how much training they interrupt.
	faultSamples = 400000
	// faultTrainers is the number of workers training while the test
	// kills; one more, the gate (worker-2), starts after the last kill.
	faultTrainers = 2
	// faultGateSamples are the gate worker's share of the training file:
	// its last lines, moved into a file of their own.
	faultGateSamples = 1000
)

// envInt reads an integer setting of the fault test from the environment.
func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: not an integer", name, v)
	}
	return n
}

// TestFaultInjection is the proof of issue 6: 3 AMS processes, 3 workers
// and 2 schedulers on loopback with a real etcd, training from files;
// kill -9 of a random shard, a random worker or the leading scheduler at
// random points of the training, each restarted by the test as a
// supervisor would; the job ends by itself. The samples in the final
// model's history (the workers' checkpoints in a snapshot taken at the
// end) are the dataset, once per epoch: as many (epochs x samples), and
// the same ones (the sum of their digests, each sample's position hashed,
// is the dataset's times the epochs). The test AUC is within 0.01 of the
// same job without faults. TestFaultInjectionKafka is the same over a
// Kafka topic.
//
// The kills are keyed to the training's progress, never to the clock.
// One fault at a time: kill i of K comes when the progress lines of the
// two training workers (samples trained over the whole job: those applied
// before a resume, plus those of the attempt) add up to a random point of
// the i-th of K equal segments of [5%, 65%] of the job's samples, and the
// cluster has recovered from the previous kill: the victim's new life is
// registered (the dead one's lease expired), the cluster serves at a
// newer version (after a scheduler's death: under the other scheduler),
// and it has taken a snapshot since (before the first kill: the cluster
// serves and has a snapshot holding the workers' checkpoints). Progress
// lines come every 100ms, so the kills land anywhere in the 1s snapshot
// cycle.
//
// The gate: the job has three workers, and the test starts the third
// (worker-2) only once the cluster has recovered from its last kill.
// Every worker waits for all the others before its final evaluation, so
// the job cannot end before the test has done its kills, however fast the
// machine trains: a trainer that reaches the end of its share first waits
// there, and a kill rolls it back like the others (on a fast machine the
// recovery from a kill, which waits for a lease to expire, may outlast
// the rest of the training: the kills after it then land there; each
// kill's log line says how many trainers wait). The gate worker's share
// is small: over files, the last 1000 samples, in a file of their own (the
// scheduler, given -split-bytes of half the training file, cuts that file
// in two for the trainers and deals the small file whole to worker-2; the
// test checks its share); over Kafka, the partitions dealt anew when it
// joins, which the trainers have mostly read.
//
// A killed process is restarted 300ms later; a new life that finds its
// predecessor's lease still live waits for it to expire (or, should it
// exit with membership.ErrMemberExists, is restarted too, as a supervisor
// restarting a failed service would); any other exit of a shard or
// scheduler, a worker's failure, or a worker's end before the gate opened
// fails the test.
//
// CI runs the short variant (two kills, 400000 samples x 3 epochs). The
// long one:
//
//	XPS_FAULT_KILLS=6 XPS_FAULT_SAMPLES=1000000 XPS_FAULT_EPOCHS=3 \
//	    go test ./tests/e2e -run 'TestFaultInjection(Kafka)?$' -v -timeout 30m
//
// XPS_FAULT_SEED=N replays a run's plan (the kills' points and victims;
// the timing of the processes is not replayed): the seed is printed first.
func TestFaultInjection(t *testing.T) {
	faultTest(t, faultSource{
		name: "files",
		// About 700 windows of 64 KiB: kills and restores fall inside
		// windows, which a resumed worker reads and shuffles again.
		train: "shuffle: true, shuffle_window: 65536",
		// About 5,000 rows per shard, 1,500 of them in DRAM.
		table:  ", storage: tiered, budget: {rows: 1500}",
		epochs: func(epochs int64) int64 { return epochs },
		start: func(t *testing.T, env faultEnv) faultData {
			gate := faultGateFile(env)
			size := moveTail(t, env.train, gate, faultGateSamples)
			files := env.train + "," + gate
			// reader.Assign cuts the training file into two byte ranges
			// of at most -split-bytes, one for each trainer, and deals the
			// small file, whole, to the worker with the fewest bytes: the
			// third.
			return faultData{
				sched:  []string{"-train", files, "-split-bytes", strconv.FormatInt((size+1)/2, 10)},
				worker: []string{"-train", files},
				gate:   []reader.FileSplit{{Path: gate}},
			}
		},
		digest: func(t *testing.T, env faultEnv) uint64 {
			// Each worker's share, as the scheduler deals it, read as the
			// worker reads it in every epoch.
			cfg, err := config.Build(config.File(env.cfg))
			if err != nil {
				t.Fatal(err)
			}
			files, err := reader.StatFiles([]string{env.train, faultGateFile(env)})
			if err != nil {
				t.Fatal(err)
			}
			shares, err := reader.Assign(files, faultTrainers+1, (files[0].Size+1)/2, true)
			if err != nil {
				t.Fatal(err)
			}
			var sum uint64
			for _, share := range shares {
				d, err := ctrtrain.TrainDigest(cfg, share, int(env.epochs))
				if err != nil {
					t.Fatal(err)
				}
				sum += d
			}
			return sum
		},
	})
}

// faultGateFile is the gate worker's training file, beside env.train.
func faultGateFile(env faultEnv) string { return filepath.Join(filepath.Dir(env.train), "gate.libffm") }

// moveTail moves the last n lines of the file at path into a new file at
// dst, and returns the size of what is left at path.
func moveTail(t *testing.T, path, dst string, n int) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(b)
	for range n {
		if cut < 2 {
			t.Fatalf("%s has fewer than %d lines", path, n+1)
		}
		cut = bytes.LastIndexByte(b[:cut-1], '\n') + 1
	}
	if err := os.WriteFile(dst, b[cut:], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(cut)); err != nil {
		t.Fatal(err)
	}
	return int64(cut)
}

// faultSource is where the fault test's job reads its training data.
type faultSource struct {
	name string
	// train is the job's reading of the data: train keys, YAML flow.
	train string
	// table is more settings of the job's table (", key: value, ..."):
	// the job over files has its table tiered (issue 25: a shard killed
	// with rows on disk recovers as any other), the one over Kafka in
	// memory.
	table string
	// epochs is train.epochs of the job when the test's data is to be
	// trained on epochs times.
	epochs func(epochs int64) int64
	// start makes the generated training file readable by the job, as
	// env.epochs passes, and returns how the job reads it.
	start func(t *testing.T, env faultEnv) faultData
	// digest returns the sum of the digests (reader.SampleDigest) of every
	// sample the job is to apply, epochs included, once start has run.
	digest func(t *testing.T, env faultEnv) uint64
}

// faultEnv is what a faultSource starts from.
type faultEnv struct {
	bin    string // the built commands
	train  string // the generated training file
	epochs int64  // passes over train
	cfg    string // the job's config file
}

// faultData is how the job reads a faultSource's data.
type faultData struct {
	sched, worker []string // the scheduler's and the workers' data flags
	// gate is the share of the files the scheduler is to give the gate
	// worker; nil when the data is not files.
	gate []reader.FileSplit
}

// faultTest runs the fault test over src: the job without faults, then
// with kills, and checks both.
func faultTest(t *testing.T, src faultSource) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	began := time.Now()
	seed := uint64(envInt(t, "XPS_FAULT_SEED", time.Now().UnixNano()))
	var fc *faultCluster
	// Registered first, so run last: after every process's log.
	t.Cleanup(func() {
		if t.Failed() && fc != nil {
			t.Logf("--- the fault test (seed %d, XPS_FAULT_SEED replays it) failed (above the processes' logs):\n%s",
				seed, strings.Join(fc.failures, "\n"))
		}
	})
	kills := int(envInt(t, "XPS_FAULT_KILLS", 2))
	samples := envInt(t, "XPS_FAULT_SAMPLES", faultSamples)
	epochs := envInt(t, "XPS_FAULT_EPOCHS", 3)
	t.Logf("seed %d (XPS_FAULT_SEED=%d replays it), %d kills, %d samples x %d epochs from %s",
		seed, seed, kills, samples, epochs, src.name)
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	etcdOpts, ns, cuts := faultNetwork(t, dir)
	etcd, err := etcdembed.Start(ctx, etcdOpts)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := membership.Dial(ctx, etcd.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, faultConfig, src.table, src.epochs(epochs), src.train, samples), 0o644); err != nil {
		t.Fatal(err)
	}
	train, test := filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm")
	start(t, "ctrgen", filepath.Join(bin, "ctrgen"), "-config", cfg, "-train", train, "-test", test).wait(t, time.Minute)
	built := time.Since(began)
	env := faultEnv{bin: bin, train: train, epochs: epochs, cfg: cfg}
	data := src.start(t, env)
	wantDigest := src.digest(t, env)
	t.Logf("commands built in %.1fs, data ready in %.1fs", built.Seconds(), (time.Since(began) - built).Seconds())

	fc = &faultCluster{t: t, ctx: ctx, bin: bin, dir: dir, cli: cli, endpoints: strings.Join(etcd.Endpoints(), ","),
		cfg: cfg, test: test, data: data, total: epochs * samples, etcd: etcd, etcdOpts: etcdOpts, ns: ns}
	defer func() { fc.etcd.Close() }()
	base := fc.run("base", nil, nil)
	plan := faultPlan(kills, envDurations(t, "XPS_FAULT_OUTAGES", "10s,30s"), cuts, envInt(t, "XPS_FAULT_SIGTERM", 1) != 0)
	faulty := fc.run("faults", plan, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	t.Logf("result: seed %d, %s, %d samples x %d epochs: without faults AUC %.4f in %.1fs; with %d of %d kills AUC %.4f in %.1fs; %.1fs in all",
		seed, src.name, samples, epochs, base.auc, base.seconds, faulty.kills, kills, faulty.auc, faulty.seconds, time.Since(began).Seconds())
	for _, r := range []faultRun{base, faulty} {
		if want := epochs * samples; r.applied != want {
			fc.errorf("%s: the final model's history holds %d samples, want %d (%d epochs of %d): a sample was lost or applied twice",
				r.name, r.applied, want, epochs, samples)
		}
		if r.digest != wantDigest {
			fc.errorf("%s: the final model's history has sample digest %x, the data %x: its samples are not the data's, each once per epoch",
				r.name, r.digest, wantDigest)
		}
	}
	if faulty.kills < len(plan) {
		fc.errorf("only %d of %d faults happened before training ended", faulty.kills, len(plan))
	}
	if d := math.Abs(faulty.auc - base.auc); d > 0.01 {
		fc.errorf("AUC with faults %.4f differs from %.4f without by %.4f > 0.01", faulty.auc, base.auc, d)
	}
}

// faultNetwork returns the options of the fault test's etcd, the network
// namespace of the network cuts and their durations (none without a
// namespace). etcd gets a fixed client address: the outages stop it and
// start it again there, on the same data. For a cut, shard ams-2 runs in
// a network namespace of its own, joined to the host by a veth pair the
// test sets down and up again; etcd listens on the host's end, which
// every process reaches.
func faultNetwork(t *testing.T, dir string) (etcdembed.Options, *netns, []time.Duration) {
	opts := etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true, ClientAddr: testutil.FreeAddr(t)}
	cuts := envDurations(t, "XPS_FAULT_CUTS", "10s")
	if len(cuts) == 0 {
		return opts, nil, nil
	}
	ns, why := newNetns(t)
	if ns == nil {
		t.Logf("the network cut is left out: it needs a network namespace (%s)", why)
		return opts, nil, nil
	}
	opts.ClientAddr = ns.HostAddr(t)
	return opts, ns, cuts
}

// faultCluster runs the clusters of the fault test.
type faultCluster struct {
	t         *testing.T
	ctx       context.Context
	bin, dir  string
	cli       *clientv3.Client
	endpoints string
	cfg, test string
	data      faultData
	total     int64 // samples the job applies: epochs x samples
	// etcd is the cluster's etcd, stopped and started again by outages.
	etcd     *etcdembed.Server
	etcdOpts etcdembed.Options
	// ns is the network namespace shard ams-2 runs in, nil without one.
	ns *netns
	// failures are the test's failure messages (fatalf, errorf), logged
	// again when the test ends, after every process's log: CI keeps the
	// tail of a failed run's output, which those logs would otherwise fill.
	failures []string
}

// fatalf fails the test now with the message, kept for the summary.
func (fc *faultCluster) fatalf(format string, args ...any) {
	fc.t.Helper()
	fc.failures = append(fc.failures, fmt.Sprintf(format, args...))
	fc.t.Fatalf(format, args...)
}

// errorf fails the test with the message, kept for the summary, and goes on.
func (fc *faultCluster) errorf(format string, args ...any) {
	fc.t.Helper()
	fc.failures = append(fc.failures, fmt.Sprintf(format, args...))
	fc.t.Errorf(format, args...)
}

// The kinds of fault.
const (
	kindKill    = "kill"    // kill -9 of a shard, a trainer or the leading scheduler (the first: a shard)
	kindSIGTERM = "sigterm" // SIGTERM of a trainer: a clean stop, then a restart
	kindOutage  = "outage"  // etcd stopped for a while, then started again
	kindCut     = "cut"     // shard ams-2 cut off from the network for a while, then back
)

// fault is one fault of a run's plan.
type fault struct {
	kind   string
	outage time.Duration // of an outage
}

func (f fault) String() string {
	switch f.kind {
	case kindOutage:
		return fmt.Sprintf("an etcd outage of %v", f.outage)
	case kindCut:
		return fmt.Sprintf("a network cut of %v", f.outage)
	}
	return f.kind
}

// faultPlan is the faults of the faulty run, in order: a kill (a shard,
// restarted within its lease during a snapshot), a SIGTERM of a trainer
// (with sigterm), the first outage, the network cuts, the other kills,
// the other outages.
func faultPlan(kills int, outages, cuts []time.Duration, sigterm bool) []fault {
	var plan []fault
	if kills > 0 {
		plan = append(plan, fault{kind: kindKill})
	}
	if sigterm {
		plan = append(plan, fault{kind: kindSIGTERM})
	}
	if len(outages) > 0 {
		plan = append(plan, fault{kind: kindOutage, outage: outages[0]})
	}
	for _, d := range cuts {
		plan = append(plan, fault{kind: kindCut, outage: d})
	}
	for range max(kills-1, 0) {
		plan = append(plan, fault{kind: kindKill})
	}
	for _, d := range outages[min(1, len(outages)):] {
		plan = append(plan, fault{kind: kindOutage, outage: d})
	}
	return plan
}

// envDurations reads a comma-separated list of durations from the
// environment ("" or "none": none).
func envDurations(t *testing.T, name, def string) []time.Duration {
	v, ok := os.LookupEnv(name)
	if !ok {
		v = def
	}
	var out []time.Duration
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" || f == "none" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: %q is not a positive duration", name, v, f)
		}
		out = append(out, d)
	}
	return out
}

// outage stops etcd for d, then starts it again on its data and address.
func (fc *faultCluster) outage(d time.Duration) {
	if err := fc.etcd.Close(); err != nil {
		fc.t.Logf("stopping etcd: %v", err)
	}
	select {
	case <-time.After(d):
	case <-fc.ctx.Done():
	}
	etcd, err := etcdembed.Start(fc.ctx, fc.etcdOpts)
	if err != nil {
		fc.t.Fatalf("starting etcd again after an outage of %v: %v", d, err)
	}
	fc.etcd = etcd
}

// faultRun is what one run ends with.
type faultRun struct {
	name    string
	auc     float64
	applied int64  // samples in the final model's history
	digest  uint64 // their digests, summed
	kills   int
	seconds float64 // from the start of the processes to the end of the job
}

// slot is one supervised process: restarted after the test kills it,
// done when it exits by itself.
type slot struct {
	name     string
	kind, id string // its membership kind and id
	args     []string
	ns       *netns // the network namespace it runs in, or nil
	mu       sync.Mutex
	cur      *proc // guarded by mu; nil until started
	lives    int   // guarded by mu
	stop     bool  // guarded by mu: the run is over, start no more lives
	killed   atomic.Bool
	exited   chan error // the exit of a process the test did not kill
}

// supervise starts s and restarts it, as a supervisor restarting a failed
// service would, when the test killed it or when, after a kill, a new life
// exits because its predecessor's registration is still live (its lease
// has not expired yet: membership.ErrMemberExists). Any other exit ends s.
func (fc *faultCluster) supervise(s *slot, wg *sync.WaitGroup) {
	t := fc.t
	s.exited = make(chan error, 1)
	launch := func() *proc {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stop {
			return nil
		}
		s.lives++
		argv := append([]string{filepath.Join(fc.bin, s.args[0])}, s.args[1:]...)
		if s.ns != nil {
			argv = s.ns.Cmd(argv[0], argv[1:]...)
		}
		s.cur = start(t, fmt.Sprintf("%s#%d", s.name, s.lives), argv[0], argv[1:]...)
		return s.cur
	}
	p := launch()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for p != nil {
			var err error
			select {
			case err = <-p.done:
				p.done <- err
			case <-fc.ctx.Done():
				return
			}
			s.mu.Lock()
			stop, lives := s.stop, s.lives
			s.mu.Unlock()
			restart := s.killed.Swap(false) ||
				err != nil && lives > 1 && strings.Contains(p.output(), membership.ErrMemberExists.Error())
			if stop || !restart || fc.ctx.Err() != nil {
				s.exited <- err
				return
			}
			time.Sleep(faultRestartDelay)
			p = launch()
		}
	}()
}

func (s *slot) kill() { s.signal(syscall.SIGKILL) }

// signal sends sig to s's process, which its supervisor then starts again.
func (s *slot) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed.Store(true)
	s.cur.cmd.Process.Signal(sig)
}

func (s *slot) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return "(never started)"
	}
	return s.cur.output()
}

// exit reports whether s has exited by itself, and how.
func (s *slot) exit() (exited bool, err error) {
	select {
	case err = <-s.exited:
		s.exited <- err
		return true, err
	default:
		return false, nil
	}
}

// run runs the job on a fresh cluster, name: kills kills at points of its
// progress (drawn from rng), each once the cluster has recovered from the
// last, then the gate worker; it returns what the job ended with.
func (fc *faultCluster) run(name string, plan []fault, rng *rand.Rand) faultRun {
	j := fc.startJob(name)
	defer j.stop()
	res := faultRun{name: name}
	var last *faultKill
	for i, point := range killPoints(len(plan), fc.total, rng) {
		j.waitRecovered(last)
		j.waitTrained(i+1, point)
		last = j.inject(i+1, plan[i], rng)
		res.kills++
	}
	if last != nil {
		j.waitRecovered(last)
	}
	j.openGate()
	return j.end(res)
}

// killPoints draws the progress points of kills kills of a job of total
// samples: one in each of kills equal segments of [faultFirst, faultLast].
func killPoints(kills int, total int64, rng *rand.Rand) []int64 {
	points := make([]int64, kills)
	seg := (faultLast - faultFirst) / float64(kills)
	for i := range points {
		points[i] = int64((faultFirst + seg*(float64(i)+rng.Float64())) * float64(total))
	}
	return points
}

// faultJob is one run of the job: its processes, each in a supervised
// slot, and what the test reads of the cluster.
type faultJob struct {
	*faultCluster
	name, prefix string
	store        snapshot.Store
	began        time.Time
	scheds       []*slot
	shards       []*slot
	trainers     []*slot
	gate         *slot   // the last worker: started by openGate
	all          []*slot // every slot, the gate's included
	open         bool    // the gate is open (read and written by the test's goroutine only)
	wg           sync.WaitGroup
}

// startJob starts the processes of a run, all but the gate worker's, and
// checks the gate worker's share of the files.
func (fc *faultCluster) startJob(name string) *faultJob {
	t := fc.t
	prefix, err := membership.Prefix(name)
	if err != nil {
		t.Fatal(err)
	}
	j := &faultJob{faultCluster: fc, name: name, prefix: prefix, began: time.Now()}
	snaps := filepath.Join(fc.dir, name+"-snapshots")
	common := []string{"-etcd", fc.endpoints, "-cluster", name, "-lease-ttl", faultLeaseTTL.String()}
	workers := strconv.Itoa(faultTrainers + 1)
	for i := range 2 {
		id := "sched-" + strconv.Itoa(i)
		j.scheds = append(j.scheds, j.slot(membership.KindScheduler, id, "scheduler-"+strconv.Itoa(i),
			slices.Concat([]string{"scheduler"}, common, []string{"-id", id, "-shards", "3", "-workers", workers,
				"-snapshot-store", snaps, "-snapshot-every", faultSnapEvery.String(), "-log-level", "info"}, fc.data.sched)))
	}
	for i := range 3 {
		// A fixed address, as a StatefulSet's pod has: a shard restarted
		// within its lease comes back, empty, where its predecessor
		// served.
		id, listen := fmt.Sprintf("ams-%d", i), testutil.FreeAddr(t)
		if i == 2 && fc.ns != nil {
			listen = fc.ns.InsideAddr(t)
		}
		s := j.slot(membership.KindAMS, id, id, slices.Concat([]string{"ams"}, common, []string{"-id", id, "-listen", listen, "-store", snaps,
			"-tier-dir", filepath.Join(fc.dir, name+"-tier")}))
		if i == 2 {
			s.ns = fc.ns
		}
		j.shards = append(j.shards, s)
	}
	for i := range faultTrainers + 1 {
		id := membership.WorkerName(i)
		// Each worker at a pipeline depth of its own (1, 2, 3: pulls of
		// that many batches in flight), so that every fault meets pulls of
		// several batches in flight as well as one.
		depth := fmt.Sprintf("train.prefetch_batches=%d", i+1)
		s := j.slot(membership.KindWorker, id, id, slices.Concat([]string{"worker"}, common, []string{"-config", fc.cfg,
			"-test", fc.test, "-json", "-workers", workers, "-worker-index", strconv.Itoa(i), "-set", depth}, fc.data.worker))
		if i < faultTrainers {
			j.trainers = append(j.trainers, s)
		} else {
			j.gate = s
		}
	}
	for _, s := range j.all {
		if s != j.gate {
			fc.supervise(s, &j.wg)
		}
	}
	if j.store, err = snapshot.OpenDir(snaps); err != nil {
		t.Fatal(err)
	}
	j.checkGateShare()
	return j
}

// slot adds the slot of a process: its member kind and id, a label for
// logs, its command and arguments.
func (j *faultJob) slot(kind, id, label string, args []string) *slot {
	s := &slot{name: j.name + "/" + label, kind: kind, id: id, args: args}
	j.all = append(j.all, s)
	return s
}

// checkGateShare checks that the scheduler gave the gate worker the small
// share meant for it, when the data is files.
func (j *faultJob) checkGateShare() {
	if j.data.gate == nil {
		return
	}
	ctx, cancel := context.WithTimeout(j.ctx, time.Minute)
	defer cancel()
	splits, err := testutil.Conn(j.cli, j.prefix).WaitAssignment(ctx, j.gate.id)
	if err != nil {
		j.fatalf("%s: the gate worker's share: %v", j.name, err)
	}
	if !slices.Equal(splits, j.data.gate) {
		j.fatalf("%s: the scheduler gave the gate worker %v, want %v: the trainers would not train nearly all the data",
			j.name, splits, j.data.gate)
	}
}

// stop kills every process of the run and waits for their supervisors;
// when the test failed, it logs each slot's last life.
func (j *faultJob) stop() {
	for _, s := range j.all {
		s.mu.Lock()
		s.stop = true
		if s.cur != nil {
			s.cur.cmd.Process.Kill()
		}
		s.mu.Unlock()
	}
	j.wg.Wait()
	if j.t.Failed() {
		for _, s := range j.all {
			j.t.Logf("--- %s (last life):\n%s", s.name, s.output())
		}
	}
}

// healthy fails the test when a shard or a scheduler exited by itself
// (they run until stopped), a worker failed, or a worker ended before the
// gate opened (the job cannot end without the gate worker).
func (j *faultJob) healthy() {
	j.t.Helper()
	for _, s := range j.all {
		ok, err := s.exit()
		switch {
		case !ok:
		case err != nil || s.kind != membership.KindWorker:
			j.fatalf("%s exited by itself: %v", s.name, err)
		case !j.open:
			j.fatalf("%s ended before the gate worker started: the job cannot end without it", s.name)
		}
	}
}

// waitFor polls cond until it holds, failing on an unhealthy cluster or
// after d.
func (j *faultJob) waitFor(d time.Duration, what string, cond func() bool) {
	j.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		j.healthy()
		if time.Now().After(deadline) {
			j.fatalf("%s: timed out after %v waiting for %s", j.name, d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// state returns the state the leading scheduler last recorded.
func (j *faultJob) state() controlplane.ClusterState {
	st, _, _ := testutil.Conn(j.cli, j.prefix).GetClusterState(j.ctx)
	return st
}

// leader returns the slot of the leading scheduler (the election key with
// the lowest create revision), nil when there is none.
func (j *faultJob) leader() *slot {
	resp, err := j.cli.Get(j.ctx, controlplane.LeaderKey(j.prefix)+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(resp.Kvs) == 0 {
		return nil
	}
	for _, s := range j.scheds {
		if s.id == string(resp.Kvs[0].Value) {
			return s
		}
	}
	return nil
}

// registration returns the create revision of s's member key, 0 when s
// is not registered.
func (j *faultJob) registration(s *slot) int64 {
	resp, err := j.cli.Get(j.ctx, controlplane.MemberKey(j.prefix, s.kind, s.id))
	if err != nil || len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].CreateRevision
}

// newestSnapshot returns the manifest of the newest complete snapshot
// holding the workers' checkpoints, nil when there is none. The initial
// snapshot, taken before the workers declare the model, holds none: the
// cluster cannot roll back to it once they have (a product bug: every
// shard's restore fails with "snapshot 1 has no dense vector", and the
// scheduler gives up), so no kill may come before a snapshot with them.
func (j *faultJob) newestSnapshot() *snapshot.Manifest {
	seqs, _ := snapshot.Snapshots(j.store)
	for _, seq := range seqs {
		if m, err := snapshot.ReadManifest(j.store, seq); err == nil && len(m.Readers) > 0 {
			return m
		}
	}
	return nil // none, or being written, or pruned meanwhile
}

// progress returns the samples the trainers report trained over the whole
// job (reportedProgress), and how many of them wait at the final barrier.
func (j *faultJob) progress() (trained int64, waiting int) {
	for _, s := range j.trainers {
		n, done := reportedProgress(s.output())
		trained += n
		if done {
			waiting++
		}
	}
	return trained, waiting
}

// waitTrained waits until the trainers report point samples trained, or
// all wait at the final barrier (their last samples come after their last
// progress line).
func (j *faultJob) waitTrained(kill int, point int64) {
	j.waitFor(3*time.Minute, fmt.Sprintf("%d samples trained (the point of kill %d)", point, kill), func() bool {
		trained, waiting := j.progress()
		return trained >= point || waiting == len(j.trainers)
	})
}

// faultKill is a kill the cluster is to recover from.
type faultKill struct {
	n       int
	fault   fault
	victim  *slot  // nil for an outage
	rev     int64  // the create revision of the victim's registration
	version uint64 // the cluster version at the kill
	at      time.Time
	mark    *snapshot.Manifest // for an outage: the newest snapshot once etcd was back
}

// inject injects fault f, the n-th.
func (j *faultJob) inject(n int, f fault, rng *rand.Rand) *faultKill {
	switch f.kind {
	case kindSIGTERM:
		return j.sigterm(n, rng)
	case kindCut:
		victim := j.shards[2]
		st := j.state()
		trained, waiting := j.progress()
		k := &faultKill{n: n, fault: f, victim: victim, rev: j.registration(victim), version: st.Version, at: time.Now()}
		j.t.Logf("%s: fault %d: %s cut off from the network for %v at %s(v%d), %.1fs into the job, %d of %d samples trained (%d of %d trainers at the final barrier)",
			j.name, n, victim.name, f.outage, st.Phase, st.Version, k.at.Sub(j.began).Seconds(), trained, j.total, waiting, len(j.trainers))
		j.ns.Cut(j.t, true)
		select {
		case <-time.After(f.outage):
		case <-j.ctx.Done():
		}
		j.ns.Cut(j.t, false)
		k.mark = j.newestSnapshot()
		return k
	case kindOutage:
		st := j.state()
		trained, waiting := j.progress()
		k := &faultKill{n: n, fault: f, version: st.Version, at: time.Now()}
		j.t.Logf("%s: fault %d: etcd stopped for %v at %s(v%d), %.1fs into the job, %d of %d samples trained (%d of %d trainers at the final barrier)",
			j.name, n, f.outage, st.Phase, st.Version, k.at.Sub(j.began).Seconds(), trained, j.total, waiting, len(j.trainers))
		j.outage(f.outage)
		k.mark = j.newestSnapshot()
		return k
	}
	return j.kill(n, rng)
}

// sigterm stops a trainer drawn from rng with SIGTERM, as an operator or
// Kubernetes does: it must drain its pushes, store the checkpoint of what
// the shards applied and leave gracefully (issue 20's second item: the
// shards once held 460 of its batches and its checkpoint 344). The
// supervisor starts it again.
func (j *faultJob) sigterm(n int, rng *rand.Rand) *faultKill {
	victim := j.trainers[rng.IntN(len(j.trainers))]
	st := j.state()
	k := &faultKill{n: n, fault: fault{kind: kindSIGTERM}, victim: victim, rev: j.registration(victim), version: st.Version}
	trained, waiting := j.progress()
	k.at = time.Now()
	victim.signal(syscall.SIGTERM)
	j.t.Logf("%s: fault %d: SIGTERM %s at %s(v%d), %.1fs into the job, %d of %d samples trained (%d of %d trainers at the final barrier)",
		j.name, n, victim.name, st.Phase, st.Version, k.at.Sub(j.began).Seconds(), trained, j.total, waiting, len(j.trainers))
	return k
}

// kill kills a victim drawn from rng: a shard, a trainer or the leading
// scheduler. The first kill is always a shard's: restarted 300ms later
// at the same address, well within its lease, it comes back empty while
// its predecessor's registration lives (issue 20's first item: such a
// shard once took part in a snapshot, which then held a third of the
// model and was recorded as good).
func (j *faultJob) kill(n int, rng *rand.Rand) *faultKill {
	kind, i := rng.IntN(3), rng.IntN(6)
	if n == 1 {
		kind = 0
	}
	victim := j.leader()
	switch {
	case kind == 0:
		victim = j.shards[i%len(j.shards)]
	case kind == 1:
		victim = j.trainers[i%len(j.trainers)]
	case victim == nil:
		j.fatalf("%s: kill %d: no leading scheduler", j.name, n)
	}
	st := j.state()
	k := &faultKill{n: n, fault: fault{kind: kindKill}, victim: victim, rev: j.registration(victim), version: st.Version}
	trained, waiting := j.progress()
	victim.mu.Lock()
	life := victim.lives
	victim.mu.Unlock()
	if n == 1 { // during a snapshot: the restarted shard must take no part in it
		go testutil.Conn(j.cli, j.prefix).RequestSnapshot(j.ctx, false) //nolint:errcheck // it may fail: the shard is gone
	}
	k.at = time.Now()
	victim.kill()
	j.t.Logf("%s: kill %d: kill -9 %s#%d at %s(v%d), %.1fs into the job, %d of %d samples trained (%d of %d trainers at the final barrier)",
		j.name, n, victim.name, life, st.Phase, st.Version, k.at.Sub(j.began).Seconds(), trained, j.total, waiting, len(j.trainers))
	return k
}

// waitRecovered waits until the cluster has recovered from k: the
// victim's new life is registered (the dead one's lease expired), the
// cluster serves at a version above k's (after a scheduler's death: under
// the other scheduler), and it has taken a snapshot since. With k nil, it
// waits for the cluster to serve and have a snapshot to roll back to
// (newestSnapshot).
func (j *faultJob) waitRecovered(k *faultKill) {
	var mark *snapshot.Manifest // the newest snapshot once the victim was back
	back, version, what := k == nil, uint64(0), "a snapshot holding the workers' checkpoints"
	if k != nil {
		version, what = k.version+1, fmt.Sprintf("the recovery from fault %d (%v)", k.n, k.fault)
		if k.fault.kind != kindKill || k.victim.kind == membership.KindScheduler {
			version = k.version
		}
		switch k.fault.kind {
		case kindOutage:
			back, mark = true, k.mark
		case kindCut: // back once registered again: the cut cost it its lease
			mark = k.mark
		}
	}
	j.waitFor(3*time.Minute, what, func() bool {
		st := j.state()
		if !back {
			rev := j.registration(k.victim)
			l := j.leader()
			back = rev != 0 && rev != k.rev && st.Version >= version &&
				(k.victim.kind != membership.KindScheduler || l != nil && l != k.victim)
			if k.fault.kind != kindCut {
				mark = j.newestSnapshot()
			}
			return false
		}
		m := j.newestSnapshot()
		return st.Phase == "SERVING" && m != nil && m.Version >= version && (mark == nil || m.Seq > mark.Seq)
	})
	if k == nil {
		return
	}
	j.t.Logf("%s: fault %d (%v): recovered %.1fs after it", j.name, k.n, k.fault, time.Since(k.at).Seconds())
	// A clean stop and an outage cost a pause, not a restore: the
	// cluster serves on at the version of the fault.
	if st := j.state(); k.fault.kind != kindKill && st.Version != k.version {
		j.errorf("%s: fault %d (%v): the cluster serves version %d, restored from %d: it cost a restore, not a pause",
			j.name, k.n, k.fault, st.Version, k.version)
	}
}

// openGate starts the gate worker: from now on the job can end.
func (j *faultJob) openGate() {
	j.open = true
	j.supervise(j.gate, &j.wg)
	trained, waiting := j.progress()
	j.t.Logf("%s: %.1fs into the job, %d of %d samples trained (%d of %d trainers at the final barrier): %s starts",
		j.name, time.Since(j.began).Seconds(), trained, j.total, waiting, len(j.trainers), j.gate.name)
}

// end waits for the job to end by itself and returns what it ended with:
// the time, the test AUC, and the samples in a snapshot of the final
// model.
func (j *faultJob) end(res faultRun) faultRun {
	t := j.t
	workers := append(slices.Clone(j.trainers), j.gate)
	j.waitFor(5*time.Minute, "the end of the job", func() bool {
		for _, w := range workers {
			if ok, _ := w.exit(); !ok {
				return false
			}
		}
		return true
	})
	j.healthy()
	res.seconds = time.Since(j.began).Seconds()
	aucs := make([]float64, len(workers))
	for i, w := range workers {
		sum := lastJSON(t, w.cur)
		aucs[i] = sum.TestAUC
		if e := sum.ExactlyOnce; e == nil || !e.Exact {
			j.errorf("%s: %s's summary: not exactly-once by the shards' account: %+v", j.name, w.name, e)
		}
	}
	for _, auc := range aucs[1:] {
		if math.Abs(auc-aucs[0]) > 1e-9 {
			j.errorf("%s: the workers evaluated different models: AUC %.6f and %.6f", j.name, aucs[0], auc)
		}
	}
	res.auc = aucs[0]
	t.Logf("%s: the job ended after %.1fs: test AUC %.4f; lives: %v", j.name, res.seconds, res.auc, j.lives())

	// The model's own history: the workers' checkpoints in a snapshot of
	// the final model.
	r, err := testutil.Conn(j.cli, j.prefix).RequestSnapshot(j.ctx, false)
	if err != nil {
		j.fatalf("%s: final snapshot: %v", j.name, err)
	}
	m, err := snapshot.ReadManifest(j.store, r.Seq)
	if err != nil {
		j.fatalf("%v", err)
	}
	// The shards' own records of the pushes they applied, per worker and
	// batch, against the workers' checkpoints (what the workers believe).
	if err := checkpoint.Consistent(m.Readers); err != nil {
		j.errorf("%s: final snapshot %d: %v", j.name, m.Seq, err)
	}
	res.applied, res.digest = shardApplied(t, m)
	if n, d := appliedSamples(t, m); n != res.applied || d != res.digest {
		j.errorf("%s: final snapshot %d: the checkpoints count %d samples (digest %x), the shards applied %d (%x)",
			j.name, m.Seq, n, d, res.applied, res.digest)
	}
	return res
}

// shardApplied returns the samples the shards applied by their own
// records in snapshot m (ams.Applied, under ams.AppliedKey), summed over
// the workers, and their digests; each worker's batches must be 0 to n-1
// once, and every shard's record the same.
func shardApplied(t *testing.T, m *snapshot.Manifest) (int64, uint64) {
	t.Helper()
	var first map[string]*ams.Applied
	for i := range m.Shards {
		var recs map[string]*ams.Applied
		if err := json.Unmarshal(m.Readers[ams.AppliedKey(i)], &recs); err != nil {
			t.Fatalf("snapshot %d: shard %d's records of applied pushes: %v", m.Seq, i, err)
		}
		for w, a := range recs {
			if !a.Exactly(a.Batches()) {
				t.Errorf("snapshot %d: shard %d applied batches %s of %s: not each of 0..n-1 once", m.Seq, i, a, w)
			}
			if first != nil && (first[w] == nil || !first[w].Equal(a)) {
				t.Errorf("snapshot %d: shard %d's record of %s (%s) differs from shard 0's", m.Seq, i, w, a)
			}
		}
		if first == nil {
			first = recs
		}
	}
	var n int64
	var d uint64
	for _, a := range first {
		n, d = n+a.Samples, d+a.Digest
	}
	return n, d
}

// lives lists the slots that had more than one life, with their lives.
func (j *faultJob) lives() []string {
	var out []string
	for _, s := range j.all {
		s.mu.Lock()
		if s.lives > 1 {
			out = append(out, fmt.Sprintf("%s %d", s.name, s.lives))
		}
		s.mu.Unlock()
	}
	return out
}

// The lines of a worker's output that reportedProgress reads.
var (
	progressLine = regexp.MustCompile(`: epoch \d+/\d+ batch \d+ samples (\d+) loss `)
	resumeLine   = regexp.MustCompile(`: resuming at epoch \d+ from .* \((\d+) samples applied before\)$`)
)

// progressSamples returns the samples of the attempt a worker's progress
// line reports, and false for another line.
func progressSamples(line string) (int64, bool) {
	m := progressLine.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, err == nil
}

// reportedProgress reads the output of a worker's life: the samples it
// reports trained over the whole job (those applied before its attempt,
// from the line of its resume, plus those of its attempt's latest
// progress line), and whether it waits at the final barrier. An attempt
// starts with "training on"; one that failed ends with "waiting for the
// cluster to be restored".
func reportedProgress(out string) (trained int64, waiting bool) {
	var base, resumed, cur int64
	for _, line := range strings.Split(out, "\n") {
		if n, ok := progressSamples(line); ok {
			cur = n
		} else if m := resumeLine.FindStringSubmatch(line); m != nil {
			resumed, _ = strconv.ParseInt(m[1], 10, 64)
		} else if strings.Contains(line, ": training on ") {
			base, resumed, cur, waiting = resumed, 0, 0, false
		} else if strings.Contains(line, "waiting for the cluster to be restored") {
			resumed = 0
		} else if strings.Contains(line, ": waiting for all ") {
			waiting = true
		}
	}
	return base + cur, waiting
}

// appliedSamples returns the samples in the history of m's model and the
// sum of their digests: the sums of the workers' checkpoints.
func appliedSamples(t *testing.T, m *snapshot.Manifest) (int64, uint64) {
	var n int64
	var d uint64
	for k, v := range m.Readers {
		if !strings.HasSuffix(k, "/checkpoint") {
			continue
		}
		var c struct {
			Applied int64  `json:"applied"`
			Digest  uint64 `json:"digest"`
		}
		if err := json.Unmarshal(v, &c); err != nil {
			t.Fatalf("snapshot %d: checkpoint %s = %s", m.Seq, k, v)
		}
		n, d = n+c.Applied, d+c.Digest
	}
	return n, d
}

// sourceDigest is the sum of src's samples' digests (reader.Digest); it
// closes src.
func sourceDigest(t *testing.T, src reader.Source, err error) uint64 {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, d, err := reader.Digest(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
