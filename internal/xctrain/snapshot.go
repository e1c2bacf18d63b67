package xctrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/snapshot"
)

// The SLIDE layer lives in the worker, not on the shards, so the job takes
// part in the cluster's snapshots itself (see "Snapshots" in the package
// documentation): at a snapshot pause it waits for its pushes, writes the
// layer into the snapshot the scheduler named (controlplane.SnapshotTarget) as
// raw file LayerFile, and records a Checkpoint under CheckpointKey in the
// AMS state, which the shards then write into the same snapshot. A job
// that starts on a model holding a Checkpoint (the cluster was restored
// from that snapshot) loads the layer and goes on from its position.

// CheckpointKey is the AMS state entry of the job's Checkpoint.
const CheckpointKey = "xc/checkpoint"

// LayerFile is the SLIDE layer's file in a snapshot.
const LayerFile = "output/slide.layer"

// Checkpoint is where a snapshot's layer is and how far training had got
// when it was written.
type Checkpoint struct {
	// Store and Seq locate the snapshot; Layer is the layer's file in it.
	Store string            `json:"store,omitempty"`
	Seq   uint64            `json:"seq,omitempty"`
	Layer snapshot.FileMeta `json:"layer"`
	// Epoch (from 1) and Batch (from 0, within the epoch) are the next
	// batch to train; Samples and Batches count those trained before it.
	Epoch   int   `json:"epoch"`
	Batch   int   `json:"batch"`
	Samples int64 `json:"samples"`
	Batches int64 `json:"batches"`
	// Done marks a job that finished: there is nothing to resume.
	Done bool `json:"done,omitempty"`
}

// readCheckpoint returns the Checkpoint the model holds, if any.
func readCheckpoint(ctx context.Context, cl *client.Client) (Checkpoint, bool, error) {
	es, err := cl.GetState(ctx, CheckpointKey)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("xctrain: reading the checkpoint: %w", err)
	}
	for _, e := range es {
		if e.Key != CheckpointKey {
			continue
		}
		var cp Checkpoint
		if err := json.Unmarshal(e.Value, &cp); err != nil {
			return Checkpoint{}, false, fmt.Errorf("xctrain: the model's checkpoint %s: %w", CheckpointKey, err)
		}
		return cp, true, nil
	}
	return Checkpoint{}, false, nil
}

// putCheckpoint stores cp in the AMS state.
func putCheckpoint(ctx context.Context, cl *client.Client, cp Checkpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	if err := cl.PutState(ctx, []client.StateEntry{{Key: CheckpointKey, Value: b}}); err != nil {
		return fmt.Errorf("xctrain: storing the checkpoint: %w", err)
	}
	return nil
}

// resume loads the layer of cp (verified against its size and SHA-256)
// and makes Run start at cp's position.
func (t *Trainer) resume(cp Checkpoint) error {
	store, err := snapshot.OpenStore(cp.Store, "")
	if err != nil {
		return fmt.Errorf("xctrain: the checkpoint's snapshot store: %w", err)
	}
	defer store.Close()
	f, err := snapshot.OpenFile(store, cp.Seq, cp.Layer)
	if err != nil {
		return fmt.Errorf("xctrain: the layer of snapshot %d: %w", cp.Seq, err)
	}
	defer f.Close()
	if err := t.out.Load(f); err != nil {
		return fmt.Errorf("xctrain: the layer of snapshot %d: %w", cp.Seq, err)
	}
	t.start = &cp
	return nil
}

// snapshotPause serves a pause request at a batch boundary: every push of
// the batches trained so far is applied first; when the pause is for a
// snapshot, the layer goes into it and the position into the model's
// state; then the pause is acknowledged and the resume awaited. next is
// the position of the next batch. A resume at a higher cluster version
// (the cluster was rolled back) ends the run with an error wrapping
// controlplane.ErrRestored: the job is restarted and resumes from the model.
func (t *Trainer) snapshotPause(ctx context.Context, next Checkpoint) error {
	pz := t.opts.Pauser
	if err := t.waitPushes(); err != nil {
		return err
	}
	seq := pz.Pending()
	tgt, ok, err := t.opts.Conn.GetSnapshotTarget(ctx)
	if err != nil {
		return fmt.Errorf("xctrain: snapshot pause %d: %w", seq, err)
	}
	if ok && tgt.Pause == seq && tgt.Store != "" {
		if err := t.writeLayer(ctx, tgt, next); err != nil {
			return fmt.Errorf("xctrain: writing the SLIDE layer into snapshot %d: %w", tgt.Seq, err)
		}
	}
	if err := pz.PauseFor(ctx, seq); err != nil {
		if errors.Is(err, controlplane.ErrRestored) {
			return fmt.Errorf("xctrain: %w; restart the job to resume from the restored model", err)
		}
		return fmt.Errorf("xctrain: snapshot pause %d: %w", seq, err)
	}
	return nil
}

// writeLayer saves the layer as LayerFile of snapshot tgt.Seq and stores
// the Checkpoint naming it.
func (t *Trainer) writeLayer(ctx context.Context, tgt controlplane.SnapshotTarget, cp Checkpoint) error {
	store, err := snapshot.OpenStore(tgt.Store, "")
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := snapshot.CreateFile(store, tgt.Seq, LayerFile)
	if err != nil {
		return err
	}
	if err := t.out.Save(w); err != nil {
		w.Abort()
		return err
	}
	meta, err := w.Close()
	if err != nil {
		return err
	}
	cp.Store, cp.Seq, cp.Layer = tgt.Store, tgt.Seq, meta
	if err := putCheckpoint(ctx, t.cl, cp); err != nil {
		return err
	}
	t.opts.Logger.Info("SLIDE layer written into the snapshot", "seq", tgt.Seq, "bytes", meta.Size,
		"epoch", cp.Epoch, "batch", cp.Batch)
	return nil
}
