package ctrtrain

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/kafkatest"
	"github.com/xdlgo/xps/tests/testutil"
)

// ctrMessages returns n libFFM messages of a learnable click model: the
// label follows field 0's token parity, with noise.
func ctrMessages(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 9))
	out := make([][]byte, n)
	for i := range out {
		a, b := rng.IntN(10), rng.IntN(30)
		y := 0
		if a < 5 {
			y = 1
		}
		if rng.IntN(10) == 0 {
			y = 1 - y
		}
		out[i] = fmt.Appendf(nil, "%d 0:a%d:1 1:b%d:1 2:c%d:1", y, a, b, rng.IntN(20))
	}
	return out
}

func produceMessages(t testing.TB, addrs []string, topic string, msgs [][]byte) {
	t.Helper()
	if err := kafkatest.Produce(context.Background(), addrs, topic, msgs); err != nil {
		t.Fatal(err)
	}
}

func kafkaConfig(addrs []string, topic string) config.Config {
	c := smallConfig()
	c.Train.Epochs = 1
	c.Model.Fields = 3
	c.Kafka = config.KafkaConfig{Brokers: addrs, Topic: topic, CommitEvery: 50 * time.Millisecond, MaxWait: 20 * time.Millisecond}
	c.EnsureDefaults()
	c.Model.Tables[0].Optimizer.LR = 0.3
	c.Model.DenseOptimizer.LR = 0.01
	return c
}

// storedPositions reads the positions kept in the model.
func storedPositions(t testing.TB, lc *cluster.Cluster, ctx context.Context) map[string]reader.Position {
	t.Helper()
	m, err := clusterShardMap(ctx, lc)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(m)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	kj := &kafkaJob{cl: cl, cfg: config.Config{Kafka: config.KafkaConfig{Topic: "ctr"}}}
	ps, err := kj.positions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reader.Position{}
	for _, p := range ps {
		out[p.File] = p
	}
	return out
}

// kafkaCluster starts a broker with topic ctr of partitions partitions and
// an embedded cluster of 2 shards under prefix; with deal, the cluster's
// scheduler deals the topic's partitions to the workers. Both close when
// the test ends.
func kafkaCluster(t *testing.T, ctx context.Context, partitions int, prefix string, deal bool, cfg config.Config) (*kafkatest.Broker, *cluster.Cluster) {
	t.Helper()
	b, err := kafkatest.Start(kafkatest.Options{Topics: map[string]int{"ctr": partitions}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if deal {
		cfg.Kafka = config.KafkaConfig{Brokers: b.Addrs(), Topic: "ctr"}
	}
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: prefix, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	return b, lc
}

// storedMessages sums the positions kept in the model: the messages read.
func storedMessages(t testing.TB, lc *cluster.Cluster, ctx context.Context) int64 {
	t.Helper()
	var n int64
	for _, p := range storedPositions(t, lc, ctx) {
		n += p.Offset
	}
	return n
}

// TestKafkaBoundedResumesFromTheModel trains on a topic, produces more,
// and trains again on the same model: the second job reads exactly the new
// messages, from the positions the first one stored in the AMS.
func TestKafkaBoundedResumesFromTheModel(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	b, lc := kafkaCluster(t, ctx, 4, "/xps/kafka-resume", false, config.Config{})
	msgs := ctrMessages(6000, 1)
	produceMessages(t, b.Addrs(), "ctr", msgs[:4000])
	cfg := kafkaConfig(b.Addrs(), "ctr")
	res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 4000 || len(res.Positions) != 4 {
		t.Fatalf("first job: %d samples, positions %v; want 4000 over 4 partitions", res.Samples, res.Positions)
	}
	stored := storedPositions(t, lc, ctx)
	var sum int64
	for p := range 4 {
		sum += stored[kafkasrc.StreamName("ctr", p)].Offset
	}
	if sum != 4000 {
		t.Fatalf("positions in the model %v sum to %d messages, want 4000", stored, sum)
	}
	if res.Progressive.Samples != 4000 || !(res.Progressive.AUC > 0.6) {
		t.Fatalf("progressive validation %+v: want 4000 samples and a learned model", res.Progressive)
	}
	produceMessages(t, b.Addrs(), "ctr", msgs[4000:])
	res, err = RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 2000 {
		t.Fatalf("second job trained %d samples, want the 2000 new ones", res.Samples)
	}
}

// TestKafkaPartitionsDealtAcrossWorkers runs two workers whose partitions
// the scheduler deals (and re-deals as the second joins): every message is
// trained on exactly once in all.
func TestKafkaPartitionsDealtAcrossWorkers(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	b, lc := kafkaCluster(t, ctx, 4, "/xps/kafka-deal", true, config.Config{})
	produceMessages(t, b.Addrs(), "ctr", ctrMessages(8000, 2))
	cfg := kafkaConfig(b.Addrs(), "ctr")
	cfg.Train.BatchSize = 32
	// Worker 1 joins once worker 0 has trained 20 of its 250 batches (a
	// progress line each): a re-deal while it trains.
	cfg.Train.ProgressEvery = time.Nanosecond
	results := runWorkers(t, ctx, 2, 20, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	if total := results[0].Samples + results[1].Samples; total != 8000 {
		t.Fatalf("workers trained %d + %d samples, want 8000 in all", results[0].Samples, results[1].Samples)
	}
	t.Logf("worker 0 trained %d samples, worker 1 %d", results[0].Samples, results[1].Samples)
	if n := storedMessages(t, lc, ctx); n != 8000 {
		t.Fatalf("positions in the model %v: %d messages, want 8000", storedPositions(t, lc, ctx), n)
	}
}

// TestKafkaFinishedWorkerIsDealtNothing is the end of a bounded job over
// Kafka with a worker joining late: worker 0 has read its partitions to
// their end and waits for the others, worker 1 is still reading its own,
// and worker 2 joins. The new deal must not give worker 0 (which reads no
// more) a partition worker 1 has not finished: the rest of it would never
// be read (the fault test lost 5,611 of 1,200,000 samples so). Worker 1 is
// held at a batch (its progress hook) from the moment it reads under the
// two-worker deal until the three-worker deal is out.
func TestKafkaFinishedWorkerIsDealtNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	b, lc := kafkaCluster(t, ctx, 4, "/xps/kafka-late", true, config.Config{})
	const total = 4000
	produceMessages(t, b.Addrs(), "ctr", ctrMessages(total, 3))
	conn, err := controlplane.New(lc.Etcd(), lc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	cfg := kafkaConfig(b.Addrs(), "ctr")
	cfg.Train.BatchSize = 32
	cfg.Train.ProgressEvery = time.Nanosecond // a report (worker 1's hook) after every batch
	cfg.Job.Workers = 3
	deal := func() controlplane.PartitionAssignment {
		a, _, err := conn.GetPartitionAssignment(ctx)
		if err != nil {
			t.Error(err)
		}
		return a
	}
	hold, held, release := holdUnderDeal(ctx, lc, deal, 1, 2)
	var wg sync.WaitGroup
	results, errs, progress := make([]JobResult, 3), make([]error, 3), make([]testutil.Buffer, 3)
	run := func(i int, onProgress func(job.Progress)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Index: i, Progress: &progress[i], OnProgress: onProgress}
			results[i], errs[i] = RunJob(ctx, o)
		}()
	}
	defer wg.Wait()
	run(1, hold)
	run(0, nil)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatalf("worker 1 never read under a deal with worker 0:\n%s\n%s", progress[0].String(), progress[1].String())
	}
	testutil.Eventually(t, time.Minute, "worker 0 waiting for the others", func() bool {
		return strings.Contains(progress[0].String(), "waiting for all 3 workers")
	})
	run(2, nil)
	testutil.Eventually(t, time.Minute, "a deal naming worker 2", func() bool {
		_, ok := deal().Workers[membership.WorkerName(2)]
		return ok
	})
	if a := deal(); len(a.Of(membership.WorkerName(0))) > 0 {
		t.Errorf("deal %d gives worker 0, which has read its partitions to their end, partitions %v", a.Generation, a.Of(membership.WorkerName(0)))
	}
	close(release)
	wg.Wait()
	var applied int64
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, progress[i].String())
		}
		applied += results[i].Applied
	}
	if read := storedMessages(t, lc, ctx); applied != total || read != total {
		for i := range progress {
			t.Logf("worker %d:\n%s", i, progress[i].String())
		}
		t.Fatalf("the workers applied %d samples and the positions in the model cover %d messages, want %d of each", applied, storedMessages(t, lc, ctx), total)
	}
}

// holdUnderDeal returns a progress hook for worker w that holds it, once,
// at the first batch it trains under a deal of n workers naming worker 0
// too (it has acknowledged the deal, so it reads that deal's partitions),
// until release is closed; held is closed when it is held.
func holdUnderDeal(ctx context.Context, lc *cluster.Cluster, deal func() controlplane.PartitionAssignment, w, n int) (hook func(job.Progress), held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook = func(job.Progress) {
		a := deal()
		if _, ok := a.Workers[membership.WorkerName(0)]; !ok || len(a.Workers) != n {
			return
		}
		resp, err := lc.Etcd().Get(ctx, controlplane.PartitionsAckKey(lc.Prefix(), membership.WorkerName(w)))
		if err != nil || len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != fmt.Sprint(a.Generation) {
			return
		}
		once.Do(func() {
			close(held)
			<-release
		})
	}
	return hook, held, release
}

// TestKafkaStreaming trains on a topic while a producer writes to it, then
// stops the job: it keeps up, reports its lag and progressive validation,
// and stores its positions when stopped.
func TestKafkaStreaming(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	exports := t.TempDir()
	b, lc := kafkaCluster(t, ctx, 2, "/xps/kafka-stream", false, config.Config{Export: export.Policy{Store: exports, Every: -time.Second}})
	msgs := ctrMessages(6000, 3)
	produceMessages(t, b.Addrs(), "ctr", msgs[:500]) // for the shape
	cfg := kafkaConfig(b.Addrs(), "ctr")
	cfg.Kafka.Streaming = true
	cfg.Train.ProgressEvery = 100 * time.Millisecond
	cfg.Job.Test = []string{writeFile(t, t.TempDir(), "test.libffm", string(bytes.Join(ctrMessages(1000, 4), []byte("\n")))+"\n")}
	jobCtx, stop := context.WithCancel(ctx)
	var progress testutil.Buffer
	done := make(chan struct{})
	var res JobResult
	var jobErr error
	go func() {
		defer close(done)
		res, jobErr = RunJob(jobCtx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &progress})
	}()
	for i := 500; i < len(msgs); i += 500 {
		produceMessages(t, b.Addrs(), "ctr", msgs[i:i+500])
		time.Sleep(50 * time.Millisecond)
	}
	// Wait until everything is trained on (the positions reach the end).
	testutil.Reaches(t, time.Minute, "the model's positions to hold every message", int64(len(msgs)),
		func() int64 { return storedMessages(t, lc, ctx) }, progress.String)
	// The topic is quiet now: the worker waits for messages, and must still
	// pause for an export at once (it once paused only after its next
	// batch: a snapshot or export of a quiet stream failed after the
	// scheduler's minute of waiting).
	exp, err := lc.Conn().RequestExport(ctx)
	if err != nil || exp.Kind != "full" || exp.Rows == 0 {
		t.Fatalf("an export of the quiet stream: %+v, %v", exp, err)
	}
	stop()
	<-done
	if jobErr != nil {
		t.Fatalf("stopped streaming job: %v", jobErr)
	}
	if !res.Stopped || res.Samples != int64(len(msgs)) || res.Progressive.Samples != int64(len(msgs)) || !(res.Progressive.AUC > 0.6) {
		t.Fatalf("result: stopped %v, %d samples, progressive %+v", res.Stopped, res.Samples, res.Progressive)
	}
	// A stream's stop is its end: it evaluates on the test set (it
	// printed AUC 0 on 0 samples before, issue 21).
	if res.TestSamples != 1000 || !(res.TestAUC > 0.6) {
		t.Fatalf("the stopped stream's test evaluation: %d samples, AUC %v; want 1000 and the model's AUC\n%s", res.TestSamples, res.TestAUC, progress.String())
	}
	out := progress.String()
	if !strings.Contains(out, " lag ") || !strings.Contains(out, "running auc") {
		t.Fatalf("progress lines lack the lag or the running AUC:\n%s", out)
	}
}

func clusterShardMap(ctx context.Context, lc *cluster.Cluster) (*ams.ShardMap, error) {
	return lc.Conn().WaitShardMap(ctx)
}

// TestKafkaStreamStopSavesAndRerunReadsOnlyNew is issue 57's case: a
// streaming job of an embedded cluster (worker -local) trains 20,000
// messages and is stopped (Ctrl-C cancels its context). The stop must
// save the model, positions included, in its snapshot store; the same job
// run again on a new embedded cluster over that store must train none of
// the first 20,000 messages and go on at the stored offsets. Before the
// fix the stop saved nothing (the store held only the empty first
// snapshot) and the second run trained the 20,000 again from offset 0.
func TestKafkaStreamStopSavesAndRerunReadsOnlyNew(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	b, err := kafkatest.Start(kafkatest.Options{Topics: map[string]int{"ctr": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	msgs := ctrMessages(23000, 5)
	produceMessages(t, b.Addrs(), "ctr", msgs[:20000])
	cfg := kafkaConfig(b.Addrs(), "ctr")
	cfg.Kafka.Streaming = true
	cfg.Job.ID = "stream-rerun"
	cfg.Snapshot.Store = t.TempDir()
	// stream runs the job on a cluster of its own until the model holds
	// positions summing to want, then stops it as Ctrl-C does.
	stream := func(run int, want int64) (JobResult, string) {
		opts := job.Options{Config: cfg, Progress: new(testutil.Buffer)}
		lc, err := cluster.StartFor(ctx, cluster.Options{Shards: 2, Prefix: fmt.Sprintf("/xps/stream-rerun-%d", run)}, &opts, true)
		if err != nil {
			t.Fatal(err)
		}
		defer lc.Close()
		if !opts.SaveOnStop {
			t.Fatal("an embedded cluster's job does not save its model on a stop")
		}
		jctx, stop := context.WithCancel(ctx)
		defer stop()
		done := make(chan struct{})
		var res JobResult
		var jobErr error
		go func() {
			defer close(done)
			res, jobErr = RunJob(jctx, opts)
		}()
		progress := opts.Progress.(*testutil.Buffer)
		testutil.Reaches(t, time.Minute, fmt.Sprintf("run %d: the model's positions to hold %d messages", run, want), want,
			func() int64 { return storedMessages(t, lc, ctx) }, progress.String)
		stop()
		<-done
		if jobErr != nil || !res.Stopped {
			t.Fatalf("run %d: the stopped stream: stopped %v, %v\n%s", run, res.Stopped, jobErr, progress.String())
		}
		if res.Model == nil || res.Model.Store != cfg.Snapshot.Store || res.Model.Rows == 0 {
			t.Fatalf("run %d: the stop saved no model: %+v\n%s", run, res.Model, progress.String())
		}
		return res, progress.String()
	}
	first, _ := stream(1, 20000)
	if first.Samples != 20000 {
		t.Fatalf("the first run trained %d samples, want 20000", first.Samples)
	}
	store, err := snapshot.OpenStore(cfg.Snapshot.Store, "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	man, _, err := snapshot.Latest(store)
	if err != nil || man.Seq != first.Model.Seq {
		t.Fatalf("the store's newest snapshot: %+v, %v; want the stop's, %d", man, err, first.Model.Seq)
	}
	produceMessages(t, b.Addrs(), "ctr", msgs[20000:])
	second, out := stream(2, 23000)
	if second.Samples != 3000 {
		t.Fatalf("the second run trained %d samples, want the 3000 new ones (none of the first 20000)\n%s", second.Samples, out)
	}
	if !strings.Contains(out, "resuming the stream from the positions stored in the model (20000 samples applied before)") {
		t.Fatalf("the second run did not say it resumes the stream:\n%s", out)
	}
	if second.Model.Seq <= first.Model.Seq {
		t.Fatalf("the second stop saved snapshot %d, not after the first's %d", second.Model.Seq, first.Model.Seq)
	}
}

// TestStopThatCannotSaveFails: when the stop's snapshot cannot be written
// (the store is gone: a file stands where its directory was), the stopped
// job says that the model is not saved and fails, instead of ending as if
// it had kept what it trained (issue 57).
func TestStopThatCannotSaveFails(t *testing.T) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	b, err := kafkatest.Start(kafkatest.Options{Topics: map[string]int{"ctr": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	produceMessages(t, b.Addrs(), "ctr", ctrMessages(2000, 6))
	cfg := kafkaConfig(b.Addrs(), "ctr")
	cfg.Kafka.Streaming = true
	cfg.Snapshot.Store = filepath.Join(t.TempDir(), "store")
	progress := new(testutil.Buffer)
	opts := job.Options{Config: cfg, Progress: progress}
	lc, err := cluster.StartFor(ctx, cluster.Options{Shards: 2, Prefix: "/xps/stop-cannot-save"}, &opts, true)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	jctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := RunJob(jctx, opts)
		done <- err
	}()
	testutil.Reaches(t, time.Minute, "the model's positions to hold 2000 messages", 2000,
		func() int64 { return storedMessages(t, lc, ctx) }, progress.String)
	if err := os.RemoveAll(cfg.Snapshot.Store); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Snapshot.Store, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop()
	err = <-done
	if err == nil || !strings.Contains(progress.String(), "the model is NOT saved") {
		t.Fatalf("a stop whose snapshot cannot be written: %v, want an error and a line saying the model is not saved\n%s", err, progress.String())
	}
}
