package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/snapshot"
)

// ShapeStateKey is the state entry holding the network's input shape
// (JSON), which a model export keeps with the configuration.
const ShapeStateKey = ams.StateJobShape

// ExportOptions describe a model export to write.
type ExportOptions struct {
	// Store is the export store's location: a directory every shard can
	// reach or an HDFS URI, under one of the store roots each shard was
	// started with (a shard refuses any other with ams.ErrStoreNotAllowed).
	Store string
	// Seq numbers the export; it must be above every earlier one.
	Seq uint64
	// Base is the export a delta applies onto, Full the full export its
	// chain starts at; Base 0 asks for a full export.
	Base, Full uint64
	// Quant gives a table's encoding (export.FP32 when absent).
	Quant map[string]string
	// Job, Samples: the job's id and the samples the model has trained,
	// recorded in the manifest.
	Job     string
	Samples int64
}

// WriteExport asks every shard to write its part of export o.Seq into the
// store, then commits the manifest with the job's configuration and input
// shape (the state entries ConfigStateKey and ShapeStateKey): the export
// exists once it returns nil. A delta that a shard has no base for fails
// with an error wrapping ams.ErrNoExportBase: take a full export instead.
// It is consistent only if nothing pushes meanwhile; pausing the workers
// is the caller's job.
func (c *Client) WriteExport(ctx context.Context, o ExportOptions) (*export.Manifest, error) {
	state, err := c.GetState(ctx, "job/")
	if err != nil {
		return nil, err
	}
	m := &export.Manifest{Seq: o.Seq, Kind: export.KindFull, Full: o.Seq, Job: o.Job, Version: c.version, Samples: o.Samples}
	if o.Base != 0 {
		m.Kind, m.Base, m.Full = export.KindDelta, o.Base, o.Full
	}
	for _, e := range state {
		switch e.Key {
		case ConfigStateKey:
			m.Config = json.RawMessage(e.Value)
		case ShapeStateKey:
			m.Shape = json.RawMessage(e.Value)
		}
	}
	parts := make([]export.Part, len(c.stubs))
	err = eachShard(len(c.stubs), func(s int) error {
		resp, err := c.stubs[s].WriteExport(ctx, &amspb.WriteExportRequest{ClusterVersion: c.version,
			Store: o.Store, Seq: o.Seq, Base: o.Base, Index: uint32(s), Quant: o.Quant})
		if err != nil {
			return c.rpcError("export", s, err)
		}
		if err := json.Unmarshal(resp.Part, &parts[s]); err != nil {
			return fmt.Errorf("ams client: export: shard %s answered a bad part: %w", c.m.Shards[s], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	if err := export.Commit(store, m); err != nil {
		return nil, err
	}
	return m, nil
}
