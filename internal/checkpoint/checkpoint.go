// Package checkpoint is the one record of how far a worker's job got,
// kept in the model (an AMS state entry, ams.CheckpointKey) so that it is
// snapshotted atomically with the rows and rolled back with them. Every
// job (the CTR trainer, the SLIDE job) writes the same type; the worker
// reads it when it resumes, and the scheduler sums its Applied counts for
// snapshots every N samples.
//
// # Invariants
//
//  1. A worker stores its checkpoint only after the pushes of every sample
//     it counts are applied, so a snapshot never holds a checkpoint ahead
//     of its rows.
//  2. Applied and Digest count the samples applied over the whole job,
//     across restarts: a resumed job adds to the checkpoint it resumed.
//  3. Files name state the worker keeps itself (the SLIDE layer), written
//     into the snapshot before the checkpoint that names it; a checkpoint
//     stored between snapshots (progress) names no files, so a job finding
//     one without the files it needs cannot resume from it and says so.
package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
)

// ErrBad is returned (wrapped) for a checkpoint that cannot be decoded.
var ErrBad = errors.New("checkpoint: bad checkpoint in the model")

// Checkpoint is how far a worker's job got.
type Checkpoint struct {
	// Epoch is the epoch being read (1-based); EpochDone says it was read
	// to its end (the next one starts from the beginning).
	Epoch     int  `json:"epoch"`
	EpochDone bool `json:"epoch_done,omitempty"`
	// Batch is the next batch of Epoch to train (from 0), for jobs that
	// resume by batch over data held in memory in a fixed order.
	Batch int `json:"batch,omitempty"`
	// Positions are the reader positions after the last applied sample,
	// one per stream, for jobs that resume by position.
	Positions []reader.Position `json:"positions,omitempty"`
	// Applied counts the samples applied to the model by this worker, over
	// the whole job: the model's own history, rolled back with it.
	Applied int64 `json:"applied"`
	// Batches counts the batches applied, like Applied.
	Batches int64 `json:"batches,omitempty"`
	// Digest is the sum (mod 2^64) of the applied samples'
	// reader.SampleDigest: with Applied, it shows which samples the model
	// holds, not only how many.
	Digest uint64 `json:"digest,omitempty"`
	// Sync marks a checkpoint of sync mode; Round is then the round (the
	// batch of the epoch, from 0) the worker pushes next, when the epoch
	// is not done.
	Sync  bool   `json:"sync,omitempty"`
	Round uint32 `json:"round,omitempty"`
	// Files are the files of worker-held state in the snapshot this
	// checkpoint was stored for (none between snapshots).
	Files []File `json:"files,omitempty"`
	// Done marks a job that finished: there is nothing to resume.
	Done bool `json:"done,omitempty"`
}

// File is a file of worker-held state in a snapshot.
type File struct {
	// Store and Seq locate the snapshot; Meta is the file in it (its name,
	// size and SHA-256).
	Store string            `json:"store"`
	Seq   uint64            `json:"seq"`
	Meta  snapshot.FileMeta `json:"meta"`
}

// File returns the file named name, and false when c has none.
func (c Checkpoint) File(name string) (File, bool) {
	for _, f := range c.Files {
		if f.Meta.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// Store stores c in the model as worker's checkpoint.
func Store(ctx context.Context, cl *client.Client, worker string, c Checkpoint) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := cl.PutState(ctx, []client.StateEntry{{Key: ams.CheckpointKey(worker), Value: b}}); err != nil {
		return fmt.Errorf("checkpoint: store %s's: %w", worker, err)
	}
	return nil
}

// Load returns worker's checkpoint in the model, and false when there is
// none (a new job).
func Load(ctx context.Context, cl *client.Client, worker string) (Checkpoint, bool, error) {
	key := ams.CheckpointKey(worker)
	entries, err := cl.GetState(ctx, key)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("checkpoint: read %s's from the model: %w", worker, err)
	}
	for _, e := range entries {
		if e.Key == key {
			c, err := Decode(e.Value)
			if err != nil {
				return Checkpoint{}, false, fmt.Errorf("%w: %s: %w", ErrBad, key, err)
			}
			return c, true, nil
		}
	}
	return Checkpoint{}, false, nil
}

// Decode decodes a stored checkpoint.
func Decode(b []byte) (Checkpoint, error) {
	var c Checkpoint
	err := json.Unmarshal(b, &c)
	return c, err
}

// Applied sums Applied over the worker checkpoints among entries (the
// model's reader state, ams.StateReaderPrefix); undecodable ones count
// nothing.
func Applied(entries []client.StateEntry) int64 {
	var n int64
	for _, e := range entries {
		n += applied(e.Key, e.Value)
	}
	return n
}

// AppliedIn sums Applied over the worker checkpoints among a snapshot
// manifest's readers (snapshot.Manifest.Readers), as Applied does.
func AppliedIn(readers map[string]json.RawMessage) int64 {
	var n int64
	for k, v := range readers {
		n += applied(k, v)
	}
	return n
}

// applied is the samples applied of the checkpoint stored under key, 0
// when key is no worker's checkpoint or its value does not decode.
func applied(key string, value []byte) int64 {
	if !ams.IsCheckpointKey(key) {
		return 0
	}
	c, err := Decode(value)
	if err != nil {
		return 0
	}
	return c.Applied
}
