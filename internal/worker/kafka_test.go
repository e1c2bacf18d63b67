package worker

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/internal/kafkatest"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
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

// TestKafkaBoundedResumesFromTheModel trains on a topic, produces more,
// and trains again on the same model: the second job reads exactly the new
// messages, from the positions the first one stored in the AMS.
func TestKafkaBoundedResumesFromTheModel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := kafkatest.Start(kafkatest.Options{Topics: map[string]int{"ctr": 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/kafka-resume"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := kafkatest.Start(kafkatest.Options{Topics: map[string]int{"ctr": 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	produceMessages(t, b.Addrs(), "ctr", ctrMessages(8000, 2))
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/kafka-deal",
		Config: config.Config{Kafka: config.KafkaConfig{Brokers: b.Addrs(), Topic: "ctr"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := kafkaConfig(b.Addrs(), "ctr")
	cfg.Train.BatchSize = 32
	// Worker 1 joins while worker 0 is training: a re-deal.
	results := runWorkers(t, ctx, 2, 300*time.Millisecond, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	if total := results[0].Samples + results[1].Samples; total != 8000 {
		t.Fatalf("workers trained %d + %d samples, want 8000 in all", results[0].Samples, results[1].Samples)
	}
	t.Logf("worker 0 trained %d samples, worker 1 %d", results[0].Samples, results[1].Samples)
	stored := storedPositions(t, lc, ctx)
	var sum int64
	for _, p := range stored {
		sum += p.Offset
	}
	if sum != 8000 {
		t.Fatalf("positions in the model %v: %d messages, want 8000", stored, sum)
	}
}

// TestKafkaStreaming trains on a topic while a producer writes to it, then
// stops the job: it keeps up, reports its lag and progressive validation,
// and stores its positions when stopped.
func TestKafkaStreaming(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := kafkatest.Start(kafkatest.Options{Topics: map[string]int{"ctr": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exports := t.TempDir()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/kafka-stream",
		Config: config.Config{Export: export.Policy{Store: exports, Every: -time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	msgs := ctrMessages(6000, 3)
	produceMessages(t, b.Addrs(), "ctr", msgs[:500]) // for the shape
	cfg := kafkaConfig(b.Addrs(), "ctr")
	cfg.Kafka.Streaming = true
	cfg.Train.ProgressEvery = 100 * time.Millisecond
	cfg.Job.Test = []string{writeFile(t, t.TempDir(), "test.libffm", string(bytes.Join(ctrMessages(1000, 4), []byte("\n")))+"\n")}
	jobCtx, stop := context.WithCancel(ctx)
	var progress syncBuilder
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
	deadline := time.Now().Add(time.Minute)
	for {
		var sum int64
		for _, p := range storedPositions(t, lc, ctx) {
			sum += p.Offset
		}
		if sum == int64(len(msgs)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("positions reached %d of %d messages\n%s", sum, len(msgs), progress.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
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

// syncBuilder is a strings.Builder safe for a writer and a reader.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func clusterShardMap(ctx context.Context, lc *cluster.Cluster) (*ams.ShardMap, error) {
	return lc.Conn().WaitShardMap(ctx)
}
