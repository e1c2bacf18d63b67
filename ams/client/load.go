package client

import (
	"context"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// LoadRows sets the values of table's rows of ids (values holds dim
// values per id, in order), creating missing rows with a fresh optimizer
// state, and deletes the rows of deletes: each shard gets its ids. A warm
// start loads a model export through it. Nothing may push meanwhile.
func (c *Client) LoadRows(ctx context.Context, table string, dim int, ids []uint64, values []float32, deletes []uint64) error {
	n := len(c.stubs)
	byShard, vals, dels := make([][]uint64, n), make([][]float32, n), make([][]uint64, n)
	for k, id := range ids {
		s := c.m.ShardOf(table, id)
		byShard[s] = append(byShard[s], id)
		vals[s] = append(vals[s], values[k*dim:(k+1)*dim]...)
	}
	for _, id := range deletes {
		s := c.m.ShardOf(table, id)
		dels[s] = append(dels[s], id)
	}
	return eachShard(n, func(s int) error {
		if len(byShard[s])+len(dels[s]) == 0 {
			return nil
		}
		_, err := c.stubs[s].Load(ctx, &amspb.LoadRequest{ClusterVersion: c.version, Table: table, Ids: byShard[s],
			Values: ams.PackFloats(nil, vals[s]), Deletes: dels[s]})
		if err != nil {
			return c.rpcError("load rows into", s, err)
		}
		return nil
	})
}

// SetDense sets dense vector name to values (the whole vector: each shard
// gets its range) with a fresh optimizer state. Nothing may push
// meanwhile.
func (c *Client) SetDense(ctx context.Context, name string, values []float32) error {
	n := len(c.stubs)
	return eachShard(n, func(s int) error {
		lo, hi := ams.DenseRange(len(values), s, n)
		_, err := c.stubs[s].Load(ctx, &amspb.LoadRequest{ClusterVersion: c.version, Dense: name,
			DenseValues: ams.PackFloats(nil, values[lo:hi])})
		if err != nil {
			return c.rpcError("set dense values on", s, err)
		}
		return nil
	})
}
