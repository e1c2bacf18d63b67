package client_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
)

// benchRows is the number of resident rows the pull/push benchmarks spread
// their random ids over.
const benchRows = 1 << 20

// benchPullPush measures rows/s of merged pulls or pushes of batch unique
// ids over real gRPC on loopback, against the given number of shards.
func benchPullPush(b *testing.B, shards, dim, batch int, push bool, opt string) {
	ctx := context.Background()
	m, _ := startShards(b, shards, 1)
	c, err := client.New(m)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: dim, Optimizer: ams.OptimizerSpec{Name: opt, LR: 0.05}}}, nil); err != nil {
		b.Fatal(err)
	}
	// Populate every row once.
	ids := make([]uint64, 1<<16)
	rows := make([]float32, len(ids)*dim)
	for lo := 0; lo < benchRows; lo += len(ids) {
		for i := range ids {
			ids[i] = uint64(lo + i)
		}
		if err := c.Pull(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: rows}}, nil, true); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	batchIDs := make([]uint64, batch)
	buf := make([]float32, batch*dim)
	for i := range buf {
		buf[i] = 0.001
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range batchIDs {
			batchIDs[k] = rng.Uint64N(benchRows)
		}
		tables := []client.Table{{Name: "emb", IDs: batchIDs, Rows: buf}}
		if push {
			err = c.Push(ctx, tables, nil)
		} else {
			err = c.Pull(ctx, tables, nil, true)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.N*batch*dim*4)/b.Elapsed().Seconds()/1e6, "payload-MB/s")
}

func BenchmarkPull_2Shards_Dim16_Batch8k(b *testing.B) {
	benchPullPush(b, 2, 16, 8192, false, "adagrad")
}
func BenchmarkPull_1Shard_Dim16_Batch8k(b *testing.B) {
	benchPullPush(b, 1, 16, 8192, false, "adagrad")
}
func BenchmarkPush_2Shards_Dim16_Adagrad_Batch8k(b *testing.B) {
	benchPullPush(b, 2, 16, 8192, true, "adagrad")
}
func BenchmarkPush_1Shard_Dim16_Adagrad_Batch8k(b *testing.B) {
	benchPullPush(b, 1, 16, 8192, true, "adagrad")
}

// benchBatch measures one training step's data plane: the pull of a
// batch's unique ids (routed once, as a worker does) and the push of their
// gradients with the batch's origin, over the stream to each of two
// shards, the TCP stream or (grpc) the gRPC one. Shards and client share
// the process, so allocs/op counts both sides of a step.
func benchBatch(b *testing.B, ids, dim int, grpcStream bool) {
	ctx := context.Background()
	m, _ := startShards(b, 2, 1)
	var extra []grpc.DialOption
	if grpcStream {
		extra = append(extra, grpc.WithUserAgent("bench")) // any option of its own keeps the stream on gRPC
	}
	c, err := client.New(m, extra...)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	spec := ams.TableSpec{Name: "emb", Dim: dim, Optimizer: ams.OptimizerSpec{Name: "adagrad", LR: 0.05}}
	if err := c.Declare(ctx, []ams.TableSpec{spec}, nil); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]uint64, ids)
	for k := range batch {
		batch[k] = rng.Uint64N(benchRows)
	}
	r := c.NewRoute()
	if err := r.Add("emb", batch); err != nil {
		b.Fatal(err)
	}
	rows := [][]float32{make([]float32, ids*dim)}
	for i := range rows[0] {
		rows[0][i] = 0.001
	}
	step := func(i int) {
		if err := c.PullRoute(ctx, r, rows, nil, true); err != nil {
			b.Fatal(err)
		}
		if err := c.PushBatch(ctx, ams.Origin{Worker: "bench", Batch: uint64(i)}, r, rows, nil); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 { // the pools and the shards' rows grown
		step(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(20 + i)
	}
	b.ReportMetric(float64(b.N*ids)/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkBatch_9kIDs_Dim18: the XDL model's batch of 256 samples (about
// 9,000 unique ids of dim 18) on the TCP stream and on the gRPC stream.
func BenchmarkBatch_9kIDs_Dim18_TCP(b *testing.B)  { benchBatch(b, 9000, 18, false) }
func BenchmarkBatch_9kIDs_Dim18_GRPC(b *testing.B) { benchBatch(b, 9000, 18, true) }

// BenchmarkBatch_92kIDs_Dim18_TCP: its batch of 5000 (about 92,000 unique
// ids, 46,000 a shard).
func BenchmarkBatch_92kIDs_Dim18_TCP(b *testing.B) { benchBatch(b, 92000, 18, false) }
