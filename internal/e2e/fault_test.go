package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/internal/etcdembed"
	"github.com/xdlgo/xps/internal/membership"
	"github.com/xdlgo/xps/internal/testutil"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
)

// faultConfig is the fault test's job: its data read in order, without
// shuffling (reader positions are file or Kafka offsets), progress every
// second. Over Kafka, train.epochs is 1: the epochs are in the topic.
const faultConfig = `
model:
  tables: [{name: emb, dim: 8, optimizer: {name: adagrad, lr: 0.05}, init: {kind: uniform, scale: 0.01}}]
  hidden: [32, 16]
train: {batch_size: 128, epochs: %d, progress_every: 1s, shuffle: false}
data: {train_samples: %d, test_samples: 10000, fields: 8, user_fields: 3, vocab: 2000, mean_bag: 2}
`

// The fault test's cluster settings.
const (
	faultLeaseTTL     = 2 * time.Second // of every member: how long a death goes unnoticed
	faultRestartDelay = 300 * time.Millisecond
	faultSnapEvery    = time.Second
	// The kills come in order at random points of [faultFirst, faultLast]
	// of the job's samples (one point in each of kills equal segments),
	// measured in the model's own history (the newest snapshot), then a
	// random delay of up to faultSnapEvery: the job must last long enough
	// past faultLast for the last kill to land while both workers train.
	faultFirst, faultLast = 0.05, 0.65
	// faultSamples is the default dataset: with 3 epochs, 14-25 s of
	// training from files and 17-32 s from Kafka for the two workers on a
	// 2-core machine, so that the snapshots that measure the progress
	// come at least every 10% of the job or so.
	faultSamples = 400000
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

// TestFaultInjection is the proof of issue 6: 3 AMS processes, 2 workers
// and 2 schedulers on loopback with a real etcd, training from files;
// kill -9 of a random shard, a random worker or the leading scheduler at
// random moments, each restarted by the test as a supervisor would; the
// job ends by itself. The samples in the final model's history (the
// workers' checkpoints in a snapshot taken at the end) are the dataset,
// once per epoch: as many (epochs x samples), and the same ones (the sum
// of their digests, each sample's position hashed, is the dataset's
// times the epochs). The test AUC is within 0.01 of the same job without
// faults. TestFaultInjectionKafka is the same over a Kafka topic.
//
// One fault at a time: kill i of K comes when the model's history (the
// newest snapshot) has passed a random point of the i-th of K equal
// segments of [5%, 65%] of the job, and the cluster has recovered from
// the previous kill (it serves and took a snapshot after the victim's
// lease expired); then a random delay of up to a snapshot period, so that
// kills land anywhere in a snapshot's cycle. Keying the kills to the
// progress keeps them inside the job however fast the machine trains. A
// killed process is restarted 300ms later; a new life that finds its
// predecessor's lease still live waits for it to expire (or, should it
// exit with membership.ErrMemberExists, is restarted too, as a supervisor
// restarting a failed service would); any other
// exit of a shard or scheduler, or a worker's failure, fails the test.
//
// CI runs the short variant (two kills, 400000 samples x 3 epochs). The
// long one:
//
//	XPS_FAULT_KILLS=6 XPS_FAULT_SAMPLES=1000000 XPS_FAULT_EPOCHS=3 \
//	    go test ./internal/e2e -run 'TestFaultInjection(Kafka)?$' -v -timeout 30m
//
// XPS_FAULT_SEED=N replays a run's plan (the kills' points, victims and
// delays; the timing of the processes is not replayed): the seed is
// printed first.
func TestFaultInjection(t *testing.T) {
	faultTest(t, faultSource{
		name:   "files",
		epochs: func(epochs int64) int64 { return epochs },
		start: func(t *testing.T, env faultEnv) (sched, worker []string) {
			return []string{"-train", env.train, "-split-bytes", "4096"}, []string{"-train", env.train}
		},
		digest: func(t *testing.T, env faultEnv) uint64 {
			src, err := reader.OpenFiles([]reader.FileSplit{{Path: env.train}}, reader.LibFFM, reader.StopOnBad)
			return sourceDigest(t, src, err) * uint64(env.epochs)
		},
	})
}

// first returns its first argument.
func first[A, B any](a A, _ B) A { return a }

// faultSource is where the fault test's job reads its training data.
type faultSource struct {
	name string
	// epochs is train.epochs of the job when the test's data is to be
	// trained on epochs times.
	epochs func(epochs int64) int64
	// start makes the generated training file readable by the job, as
	// env.epochs passes, and returns the scheduler's and the workers'
	// data flags.
	start func(t *testing.T, env faultEnv) (sched, worker []string)
	// digest returns the sum of the digests (reader.SampleDigest) of every
	// sample the job is to apply, epochs included, once start has run.
	digest func(t *testing.T, env faultEnv) uint64
}

// faultEnv is what a faultSource starts from.
type faultEnv struct {
	bin    string // the built commands
	train  string // the generated training file
	epochs int64  // passes over train
}

// faultTest runs the fault test over src: the job without faults, then
// with kills, and checks both.
func faultTest(t *testing.T, src faultSource) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	if raceEnabled {
		// The processes under test are built without the detector either
		// way: the default build's run is the test.
		t.Skip("fault-injection test runs in the default build, not under -race (its processes are not race-instrumented)")
	}
	began := time.Now()
	seed := uint64(envInt(t, "XPS_FAULT_SEED", time.Now().UnixNano()))
	kills := int(envInt(t, "XPS_FAULT_KILLS", 2))
	samples := envInt(t, "XPS_FAULT_SAMPLES", faultSamples)
	epochs := envInt(t, "XPS_FAULT_EPOCHS", 3)
	t.Logf("seed %d (XPS_FAULT_SEED=%d replays it), %d kills, %d samples x %d epochs from %s",
		seed, seed, kills, samples, epochs, src.name)
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	etcd, err := etcdembed.Start(ctx, etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	cli, err := membership.Dial(ctx, etcd.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, faultConfig, src.epochs(epochs), samples), 0o644); err != nil {
		t.Fatal(err)
	}
	train, test := filepath.Join(dir, "train.libffm"), filepath.Join(dir, "test.libffm")
	start(t, "ctrgen", filepath.Join(bin, "ctrgen"), "-config", cfg, "-train", train, "-test", test).wait(t, time.Minute)
	built := time.Since(began)
	env := faultEnv{bin: bin, train: train, epochs: epochs}
	schedData, workerData := src.start(t, env)
	wantDigest := src.digest(t, env)
	t.Logf("commands built in %.1fs, data ready in %.1fs", built.Seconds(), (time.Since(began) - built).Seconds())

	fc := &faultCluster{t: t, ctx: ctx, bin: bin, dir: dir, cli: cli, endpoints: strings.Join(etcd.Endpoints(), ","),
		cfg: cfg, test: test, schedData: schedData, workerData: workerData, total: epochs * samples}
	base := fc.run("base", 0, nil)
	faulty := fc.run("faults", kills, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	t.Logf("result: seed %d, %s, %d samples x %d epochs: without faults AUC %.4f in %.1fs; with %d of %d kills AUC %.4f in %.1fs; %.1fs in all",
		seed, src.name, samples, epochs, base.auc, base.seconds, faulty.kills, kills, faulty.auc, faulty.seconds, time.Since(began).Seconds())
	for _, r := range []faultRun{base, faulty} {
		if want := epochs * samples; r.applied != want {
			t.Errorf("%s: the final model's history holds %d samples, want %d (%d epochs of %d): a sample was lost or applied twice",
				r.name, r.applied, want, epochs, samples)
		}
		if r.digest != wantDigest {
			t.Errorf("%s: the final model's history has sample digest %x, the data %x: its samples are not the data's, each once per epoch",
				r.name, r.digest, wantDigest)
		}
	}
	if faulty.kills < kills {
		t.Errorf("only %d of %d kills happened before training ended", faulty.kills, kills)
	}
	if d := math.Abs(faulty.auc - base.auc); d > 0.01 {
		t.Errorf("AUC with faults %.4f differs from %.4f without by %.4f > 0.01", faulty.auc, base.auc, d)
	}
}

// faultCluster runs one cluster of the fault test.
type faultCluster struct {
	t                     *testing.T
	ctx                   context.Context
	bin, dir              string
	cli                   *clientv3.Client
	endpoints             string
	cfg, test             string
	schedData, workerData []string // flags naming the training data
	total                 int64    // samples the job applies: epochs x samples
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
	name   string
	args   []string
	mu     sync.Mutex
	cur    *proc // guarded by mu
	lives  int   // guarded by mu
	stop   bool  // guarded by mu: the run is over, start no more lives
	killed atomic.Bool
	exited chan error // the exit of a process the test did not kill
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
		s.cur = start(t, fmt.Sprintf("%s#%d", s.name, s.lives), filepath.Join(fc.bin, s.args[0]), s.args[1:]...)
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

func (s *slot) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed.Store(true)
	s.cur.cmd.Process.Signal(syscall.SIGKILL)
}

func (s *slot) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
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

func (fc *faultCluster) run(name string, kills int, rng *rand.Rand) faultRun {
	t := fc.t
	began := time.Now()
	prefix, err := membership.Prefix(name)
	if err != nil {
		t.Fatal(err)
	}
	snaps := filepath.Join(fc.dir, name+"-snapshots")
	ttl := faultLeaseTTL.String()
	common := []string{"-etcd", fc.endpoints, "-cluster", name, "-lease-ttl", ttl}
	var wg sync.WaitGroup
	var scheds, shards, workers []*slot
	for i := range 2 {
		scheds = append(scheds, &slot{name: name + "/scheduler-" + strconv.Itoa(i), args: slices.Concat([]string{"scheduler"},
			common, []string{"-id", "sched-" + strconv.Itoa(i), "-shards", "3", "-workers", "2",
				"-snapshot-store", snaps, "-snapshot-every", faultSnapEvery.String(), "-log-level", "info"}, fc.schedData)})
	}
	for i := range 3 {
		shards = append(shards, &slot{name: fmt.Sprintf("%s/ams-%d", name, i), args: slices.Concat([]string{"ams"},
			common, []string{"-id", fmt.Sprintf("ams-%d", i)})})
	}
	for i := range 2 {
		workers = append(workers, &slot{name: fmt.Sprintf("%s/worker-%d", name, i), args: slices.Concat([]string{"worker"},
			common, []string{"-config", fc.cfg, "-test", fc.test, "-json", "-workers", "2", "-worker-index", strconv.Itoa(i)},
			fc.workerData)})
	}
	all := slices.Concat(scheds, shards, workers)
	for _, s := range all {
		fc.supervise(s, &wg)
	}
	defer func() {
		for _, s := range all {
			s.mu.Lock()
			s.stop = true
			s.cur.cmd.Process.Kill()
			s.mu.Unlock()
		}
		wg.Wait()
		if t.Failed() {
			for _, s := range all {
				t.Logf("--- %s (last life):\n%s", s.name, s.output())
			}
		}
	}()
	// healthy fails the test when a shard or a scheduler exited by itself
	// (they run until stopped) or a worker failed.
	healthy := func() {
		t.Helper()
		for _, s := range all {
			if ok, err := s.exit(); ok && (err != nil || !slices.Contains(workers, s)) {
				t.Fatalf("%s exited by itself: %v", s.name, err)
			}
		}
	}
	// waitFor polls cond until it holds, failing on an unhealthy controlplane.
	waitFor := func(d time.Duration, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			healthy()
			if time.Now().After(deadline) {
				t.Fatalf("%s: timed out after %v waiting for %s", name, d, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The faults: one at a time, each at its point of the job (see
	// faultFirst), once the cluster has recovered from the last one: it
	// serves, and has taken a snapshot after the victim's lease expired.
	res := faultRun{name: name}
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	state := func() controlplane.ClusterState {
		var st controlplane.ClusterState
		if resp, err := fc.cli.Get(fc.ctx, controlplane.StateKey(prefix)); err == nil && len(resp.Kvs) > 0 {
			json.Unmarshal(resp.Kvs[0].Value, &st)
		}
		return st
	}
	training := func() bool {
		for _, w := range workers {
			if ok, _ := w.exit(); ok || strings.Contains(w.output(), "waiting for all 2 workers") {
				return false
			}
		}
		return true
	}
	points := make([]int64, kills)
	for i := range points {
		seg := (faultLast - faultFirst) / float64(kills)
		points[i] = int64((faultFirst + seg*(float64(i)+rng.Float64())) * float64(fc.total))
	}
	var last *snapshot.Manifest // the snapshot a kill waited for
	var killed time.Time
	for res.kills < kills && training() {
		waitFor(3*time.Minute, fmt.Sprintf("SERVING with a snapshot holding %d samples", points[res.kills]), func() bool {
			if !training() {
				return true
			}
			if state().Phase != "SERVING" {
				return false
			}
			seqs, _ := snapshot.Snapshots(store)
			for _, seq := range seqs {
				m, err := snapshot.ReadManifest(store, seq)
				if err != nil || len(m.Readers) == 0 {
					continue // being written, or pruned meanwhile
				}
				recovered := (last == nil || seq > last.Seq) && m.Created.After(killed.Add(faultLeaseTTL))
				if n, _ := appliedSamples(t, m); !recovered || n < points[res.kills] {
					return false
				}
				last = m
				return true
			}
			return false
		})
		delay := time.Duration(rng.Int64N(int64(faultSnapEvery)))
		kind, i := rng.IntN(3), rng.IntN(6)
		time.Sleep(delay)
		if !training() {
			break
		}
		victim := fc.leader(prefix, scheds)
		switch kind {
		case 0:
			victim = shards[i%len(shards)]
		case 1:
			victim = workers[i%len(workers)]
		}
		st := state()
		victim.mu.Lock()
		life := victim.lives
		victim.mu.Unlock()
		killed = time.Now()
		victim.kill()
		res.kills++
		t.Logf("%s: kill %d: kill -9 %s#%d at %s(v%d), %.1fs into the job, %v after snapshot %d (%d of %d samples)",
			name, res.kills, victim.name, life, st.Phase, st.Version, killed.Sub(began).Seconds(), delay.Round(time.Millisecond),
			last.Seq, first(appliedSamples(t, last)), fc.total)
	}

	// The job ends by itself.
	waitFor(5*time.Minute, "the end of the job", func() bool {
		for _, w := range workers {
			if ok, _ := w.exit(); !ok {
				return false
			}
		}
		return true
	})
	healthy()
	res.seconds = time.Since(began).Seconds()
	var sum summary
	for _, w := range workers {
		s := lastJSON(t, w.cur)
		if sum.TestAUC != 0 && math.Abs(s.TestAUC-sum.TestAUC) > 1e-9 {
			t.Errorf("%s: the workers evaluated different models: AUC %.6f and %.6f", name, sum.TestAUC, s.TestAUC)
		}
		sum = s
	}
	res.auc = sum.TestAUC
	var lives []string
	for _, s := range all {
		s.mu.Lock()
		if s.lives > 1 {
			lives = append(lives, fmt.Sprintf("%s %d", s.name, s.lives))
		}
		s.mu.Unlock()
	}
	t.Logf("%s: the job ended after %.1fs: test AUC %.4f; lives: %v", name, res.seconds, res.auc, lives)

	// The model's own history: the workers' checkpoints in a snapshot of
	// the final model.
	r, err := testutil.Conn(fc.cli, prefix).RequestSnapshot(fc.ctx)
	if err != nil {
		t.Fatalf("%s: final snapshot: %v", name, err)
	}
	m, err := snapshot.ReadManifest(store, r.Seq)
	if err != nil {
		t.Fatal(err)
	}
	res.applied, res.digest = appliedSamples(t, m)
	return res
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

// leader returns the slot of the leading scheduler (the election key with
// the lowest create revision).
func (fc *faultCluster) leader(prefix string, scheds []*slot) *slot {
	resp, err := fc.cli.Get(fc.ctx, controlplane.LeaderKey(prefix)+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(resp.Kvs) == 0 {
		return scheds[0]
	}
	id := string(resp.Kvs[0].Value)
	for _, s := range scheds {
		if strings.HasSuffix(s.name, strings.TrimPrefix(id, "sched")) && strings.Contains(s.name, "scheduler-") {
			return s
		}
	}
	return scheds[0]
}
