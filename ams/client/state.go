package client

import (
	"context"
	"slices"
	"strings"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// StateEntry is a named value kept beside the model on the shards.
type StateEntry struct {
	Key   string
	Value []byte
}

// stateShard is the shard that holds key: FNV-1a of the key modulo the
// number of shards (state moves with the shard map, like rows).
func (c *Client) stateShard(key string) int { return ams.StateShard(key, len(c.stubs)) }

// PutState stores entries on the shards that own their keys, one request
// per shard in parallel. An empty value deletes the key. A shard's refusal
// stores nothing of that shard's entries.
func (c *Client) PutState(ctx context.Context, entries []StateEntry) error {
	per := make([][]*amspb.StateEntry, len(c.stubs))
	for _, e := range entries {
		s := c.stateShard(e.Key)
		per[s] = append(per[s], &amspb.StateEntry{Key: e.Key, Value: e.Value})
	}
	return eachShard(len(c.stubs), func(s int) error {
		if len(per[s]) == 0 {
			return nil
		}
		if _, err := c.stubs[s].PutState(ctx, &amspb.PutStateRequest{ClusterVersion: c.version, Entries: per[s]}); err != nil {
			return c.rpcError("put state to", s, err)
		}
		return nil
	})
}

// GetState returns every entry whose key starts with prefix, from all
// shards, sorted by key.
func (c *Client) GetState(ctx context.Context, prefix string) ([]StateEntry, error) {
	per := make([][]*amspb.StateEntry, len(c.stubs))
	err := eachShard(len(c.stubs), func(s int) error {
		resp, err := c.stubs[s].GetState(ctx, &amspb.GetStateRequest{ClusterVersion: c.version, Prefix: prefix})
		if err != nil {
			return c.rpcError("get state from", s, err)
		}
		per[s] = resp.Entries
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []StateEntry
	for _, es := range per {
		for _, e := range es {
			out = append(out, StateEntry{Key: e.Key, Value: e.Value})
		}
	}
	slices.SortFunc(out, func(a, b StateEntry) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
