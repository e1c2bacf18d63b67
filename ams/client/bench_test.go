package client_test

import (
	"context"
	"math/rand/v2"
	"testing"

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
