package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
)

// TestRequestLimits: a pull or push whose part for a shard breaks the
// limits of one request (ams.CheckRequestSize) fails on the client, as
// ams.ErrTooLarge (a case of ams.ErrBadRequest), before anything is sent;
// a dense vector whose shard range could not travel in one request is
// refused when declared.
func TestRequestLimits(t *testing.T) {
	ctx := context.Background()
	m, shards := startShards(t, 1, 1)
	c := newClient(t, m)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, ams.MaxRequestIDs+1)
	for i := range ids {
		ids[i] = uint64(i)
	}
	tables := []client.Table{{Name: "emb", IDs: ids, Rows: make([]float32, len(ids))}}
	if err := c.Pull(ctx, tables, nil, true); !errors.Is(err, ams.ErrTooLarge) || !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("pull of %d ids = %v, want ams.ErrTooLarge and ams.ErrBadRequest", len(ids), err)
	}
	if err := c.Push(ctx, tables, nil); !errors.Is(err, ams.ErrTooLarge) {
		t.Fatalf("push of %d ids = %v, want ams.ErrTooLarge", len(ids), err)
	}
	grad := []client.Vector{{Name: "mlp", Values: make([]float32, ams.MaxDenseValues+1)}}
	if err := c.Push(ctx, nil, grad); !errors.Is(err, ams.ErrTooLarge) {
		t.Fatalf("push of a dense gradient of %d values to one shard = %v, want ams.ErrTooLarge", len(grad[0].Values), err)
	}
	st, err := shards[0].Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Pulls != 0 || st.Pushes != 0 || st.Tables[0].Rows != 0 {
		t.Fatalf("the shard served %d pulls and %d pushes and holds %d rows, want none: the client sent them", st.Pulls, st.Pushes, st.Tables[0].Rows)
	}
	dense := []client.Dense{{Spec: ams.DenseSpec{Name: "mlp", Size: ams.MaxDenseValues + 1}}}
	if err := c.Declare(ctx, nil, dense); !errors.Is(err, ams.ErrTooLarge) {
		t.Fatalf("declare of a dense vector of %d values on one shard = %v, want ams.ErrTooLarge", dense[0].Spec.Size, err)
	}
}

// TestPullRoundAsksEveryShard: in sync mode the barrier waits at every
// shard, also one that holds none of the batch's ids, so that the
// worker's next part is of every shard's next round (a shard refuses
// parts too far ahead). Here shard 0 has applied round (0,0) and shard 1
// has not: a pull of round (0,1) whose ids are all shard 0's is pending.
func TestPullRoundAsksEveryShard(t *testing.T) {
	ctx := context.Background()
	m, shards := startShards(t, 2, 1)
	c := newClient(t, m)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	for w := range 2 {
		if err := shards[0].PushRound(1, shard.RoundPart{Round: shard.Round{Epoch: 0, Iter: 0}, Worker: w, Workers: 2}); err != nil {
			t.Fatal(err)
		}
	}
	id := uint64(0)
	for m.ShardOf("emb", id) != 0 {
		id++
	}
	route := c.NewRoute()
	if err := route.Add("emb", []uint64{id}); err != nil {
		t.Fatal(err)
	}
	rows := [][]float32{make([]float32, 2)}
	r := client.Round{Epoch: 0, Iter: 1, Worker: 0, Workers: 2}
	pending, err := c.PullRound(ctx, r, route, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !pending {
		t.Fatal("the pull of round (0,1) was served while shard 1 has not applied round (0,0)")
	}
}
