package xctrain

import (
	"context"
	"fmt"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
)

// The SLIDE layer lives in the worker, not on the shards, so the job takes
// part in the cluster's snapshots itself (see "Snapshots" in the package
// documentation): at a snapshot pause it waits for its pushes, writes the
// layer into the snapshot the scheduler named (controlplane.SnapshotTarget)
// as raw file LayerFile, and stores its Checkpoint, naming the file, in
// the AMS state (ams.CheckpointKey of the worker), which the shards then
// write into the same snapshot. Between snapshots it stores its progress
// (the samples applied, no file) every second, for the scheduler's
// snapshots every N samples. A job that starts on a model holding a
// Checkpoint with the layer (the cluster was restored from that snapshot)
// loads the layer and goes on from its position.

// LayerFile is the SLIDE layer's file in a snapshot. With several
// workers each writes its share as ShareFile.
const LayerFile = "output/slide.layer"

// ShareFile returns the file of worker index's share of the layer (of
// workers) in a snapshot.
func ShareFile(index, workers int) string {
	return fmt.Sprintf("output/slide.share-%d-of-%d.layer", index, workers)
}

// layerFile is the file this trainer writes its layer, or its share, as.
func (t *Trainer) layerFile() string {
	if p := t.opts.Peers; p != nil {
		return ShareFile(p.Index, p.Workers)
	}
	return LayerFile
}

// Checkpoint is the job's record in the model: the next epoch and batch,
// the samples and batches applied and, when stored for a snapshot, the
// layer's file in it.
type Checkpoint = checkpoint.Checkpoint

// commitEvery is how often the job stores its progress between snapshots.
const commitEvery = time.Second

// resume loads the layer of cp (verified against its size and SHA-256)
// and makes Run start at cp's position.
func (t *Trainer) resume(cp Checkpoint) error {
	lf, ok := cp.File(t.layerFile())
	if !ok {
		return fmt.Errorf("xctrain: the model's checkpoint (epoch %d, batch %d) names no SLIDE layer", cp.Epoch, cp.Batch)
	}
	store, err := snapshot.OpenStore(lf.Store, "")
	if err != nil {
		return fmt.Errorf("xctrain: the checkpoint's snapshot store: %w", err)
	}
	defer store.Close()
	f, err := snapshot.OpenFile(store, lf.Seq, lf.Meta)
	if err != nil {
		return fmt.Errorf("xctrain: the layer of snapshot %d: %w", lf.Seq, err)
	}
	defer f.Close()
	if err := t.out.Load(f); err != nil {
		return fmt.Errorf("xctrain: the layer of snapshot %d: %w", lf.Seq, err)
	}
	t.start = &cp
	return nil
}

// commitProgress stores the job's progress cp (no layer file) once every
// push of the batches it counts is applied, so that the scheduler's count
// of samples applied stays fresh between snapshots.
func (t *Trainer) commitProgress(ctx context.Context, cp Checkpoint) error {
	if err := t.waitPushes(); err != nil {
		return err
	}
	return checkpoint.Store(ctx, t.cl, t.opts.Name, cp)
}

// snapshotPause serves a pause request at a batch boundary: every push of
// the batches trained so far is applied first; then cp, the position
// after them, is stored, with the layer written into the snapshot when
// the pause is for one; then the pause is acknowledged and the resume
// awaited. A resume at a higher cluster version (the cluster was rolled
// back) ends the run with an error wrapping controlplane.ErrRestored: the
// lifecycle (package job) starts the next attempt from the restored model.
func (t *Trainer) snapshotPause(ctx context.Context, cp *Checkpoint) error {
	if err := t.waitPushes(); err != nil {
		return err
	}
	seq := t.opts.Job.PendingPause()
	tgt, ok, err := t.opts.Job.SnapshotTarget(ctx)
	if err != nil {
		return fmt.Errorf("xctrain: snapshot pause %d: %w", seq, err)
	}
	var into *controlplane.SnapshotTarget
	if ok && tgt.Pause == seq && tgt.Store != "" {
		into = &tgt
	}
	return t.pauseFor(ctx, seq, into, cp)
}

// pauseFor serves pause request seq once every push is applied: cp,
// unless nil, is stored, with the layer written into snapshot tgt when it
// is not nil; then the request is acknowledged and its resume awaited.
func (t *Trainer) pauseFor(ctx context.Context, seq uint64, tgt *controlplane.SnapshotTarget, cp *Checkpoint) error {
	switch {
	case cp == nil:
	case tgt != nil:
		if err := t.writeLayer(ctx, *tgt, *cp); err != nil {
			return fmt.Errorf("xctrain: writing the SLIDE layer into snapshot %d: %w", tgt.Seq, err)
		}
	default:
		if err := checkpoint.Store(ctx, t.cl, t.opts.Name, *cp); err != nil {
			return fmt.Errorf("xctrain: snapshot pause %d: %w", seq, err)
		}
	}
	if err := t.opts.Job.PauseFor(ctx, seq); err != nil {
		return fmt.Errorf("xctrain: snapshot pause %d: %w", seq, err)
	}
	return nil
}

// writeLayer saves the layer as layerFile of snapshot tgt.Seq and stores
// the Checkpoint naming it.
func (t *Trainer) writeLayer(ctx context.Context, tgt controlplane.SnapshotTarget, cp Checkpoint) error {
	store, err := snapshot.OpenStore(tgt.Store, "")
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := snapshot.CreateFile(store, tgt.Seq, t.layerFile())
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
	cp.Files = []checkpoint.File{{Store: tgt.Store, Seq: tgt.Seq, Meta: meta}}
	if err := checkpoint.Store(ctx, t.cl, t.opts.Name, cp); err != nil {
		return err
	}
	t.opts.Logger.Info("SLIDE layer written into the snapshot", "seq", tgt.Seq, "bytes", meta.Size,
		"epoch", cp.Epoch, "batch", cp.Batch)
	return nil
}

// modelCheckpoint is a Checkpoint counting the samples and batches the
// model has seen: res's, and those of the run it resumed, if any.
func (t *Trainer) modelCheckpoint(res Result) Checkpoint {
	cp := Checkpoint{Applied: res.Samples, Batches: res.Batches}
	if s := t.start; s != nil {
		cp.Applied += s.Applied
		cp.Batches += s.Batches
	}
	return cp
}

// holdPauses serves the pauses of the snapshots taken once training is
// over (the final model's, job.Env.SaveModel), as snapshotPause does at a
// batch boundary, with cp the final checkpoint, until ctx is done.
func (t *Trainer) holdPauses(ctx context.Context, cp Checkpoint) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if t.opts.Job.PauseRequested() {
			if err := t.snapshotPause(ctx, &cp); err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
