package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/snapshot"
)

// SnapshotOptions describe a snapshot to write.
type SnapshotOptions struct {
	// Store is the snapshot store's location: a directory every shard can
	// reach (shared, or local to a one-machine cluster) or an HDFS URI,
	// under one of the store roots each shard was started with (a shard
	// refuses any other with ams.ErrStoreNotAllowed; so does Restore).
	Store string
	// Seq numbers the snapshot; it must be above every earlier one.
	Seq uint64
	// Config is the job's configuration, kept in the manifest (optional).
	// The default value is the state entry ConfigStateKey, where workers
	// store theirs.
	Config json.RawMessage
	// Require lists state keys the snapshot must hold (those of the model
	// the cluster restored or last saved: entries are never deleted), on
	// top of the checks of snapshot.Manifest.CheckComplete.
	Require []string
	// Job is the id of the job whose model the snapshot holds, recorded in
	// the manifest.
	Job string
	// Pinned marks the snapshot pinned in its manifest
	// (snapshot.Manifest.Pinned).
	Pinned bool
	// Check, when set, is called with the assembled manifest before it is
	// written (after CheckComplete): an error fails the snapshot and
	// nothing is committed. The scheduler checks that the shards' records
	// of applied pushes agree with the workers' checkpoints
	// (checkpoint.Consistent).
	Check func(*snapshot.Manifest) error
}

// ConfigStateKey is the state entry holding the job's configuration
// (JSON): a snapshot keeps it as its manifest's Config.
const ConfigStateKey = ams.StateJobConfig

// WriteSnapshot asks every shard to write its part of a snapshot (rows,
// dense ranges, state entries such as reader positions) into the store,
// then, if the parts make a whole model (snapshot.Manifest.CheckComplete
// with o.Require), writes the manifest with the shard map: the snapshot
// exists once it returns nil. It is consistent only if nothing pushes meanwhile; pausing
// the workers is the caller's (the scheduler's) job.
func (c *Client) WriteSnapshot(ctx context.Context, o SnapshotOptions) (*snapshot.Manifest, error) {
	parts := make([]snapshot.Part, len(c.stubs))
	err := eachShard(len(c.stubs), func(s int) error {
		resp, err := c.stubs[s].WriteSnapshot(ctx, &amspb.WriteSnapshotRequest{ClusterVersion: c.version,
			Store: o.Store, Seq: o.Seq, Index: uint32(s)})
		if err != nil {
			return c.rpcError("snapshot", s, err)
		}
		if err := json.Unmarshal(resp.Part, &parts[s]); err != nil {
			return fmt.Errorf("ams client: snapshot: shard %s answered a bad part: %w", c.m.Shards[s], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	shardMap, err := c.m.Marshal()
	if err != nil {
		return nil, err
	}
	m := &snapshot.Manifest{Seq: o.Seq, Version: c.version, Shards: len(c.stubs), Job: o.Job, Pinned: o.Pinned, Config: o.Config, ShardMap: shardMap}
	for i := range parts {
		if v, ok := parts[i].State[ConfigStateKey]; ok {
			if m.Config == nil {
				m.Config = v
			}
			delete(parts[i].State, ConfigStateKey)
		}
	}
	for _, p := range parts {
		if err := m.Add(p); err != nil {
			return nil, err
		}
	}
	store, err := snapshot.OpenStore(o.Store, "")
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := m.CheckComplete(o.Require, ConfigStateKey); err != nil {
		return nil, err
	}
	if o.Check != nil {
		if err := o.Check(m); err != nil {
			return nil, fmt.Errorf("ams client: snapshot %d: %w", o.Seq, err)
		}
	}
	if err := snapshot.Commit(store, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Restore asks every shard to replace its rows, dense values and state
// with its share, under this client's shard map, of snapshot seq in the
// store (which may have been written by another number of shards), at
// this client's cluster version: each shard refuses older versions from
// then on. It returns the rows the shards hold afterwards. Verify the
// snapshot first (snapshot.Latest); nothing may pull or push meanwhile.
// Seq 0 restores nothing: every shard starts the version empty, as the
// scheduler begins a new cluster (shard.Begin).
func (c *Client) Restore(ctx context.Context, store string, seq uint64) (int64, error) {
	rows, errs := c.restore(ctx, store, seq, nil)
	var n int64
	for _, r := range rows {
		n += int64(r)
	}
	return n, errors.Join(errs...)
}

// RestoreEach is Restore reporting one error per shard, in map order; with
// only set, it restores just the shards whose only[i] is true (a retry of
// those that failed) and reports nil for the others.
func (c *Client) RestoreEach(ctx context.Context, store string, seq uint64, only []bool) []error {
	_, errs := c.restore(ctx, store, seq, only)
	return errs
}

func (c *Client) restore(ctx context.Context, store string, seq uint64, only []bool) ([]uint64, []error) {
	rows := make([]uint64, len(c.stubs))
	errs := make([]error, len(c.stubs))
	shardMap, err := c.m.Marshal()
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return rows, errs
	}
	eachShard(len(c.stubs), func(s int) error {
		if only != nil && (s >= len(only) || !only[s]) {
			return nil
		}
		resp, err := c.stubs[s].Restore(ctx, &amspb.RestoreRequest{ClusterVersion: c.version, Store: store, Seq: seq,
			ShardMap: shardMap, Index: uint32(s)})
		if err != nil {
			errs[s] = c.rpcError("restore", s, err)
			return nil
		}
		rows[s] = resp.Rows
		return nil
	})
	return rows, errs
}
