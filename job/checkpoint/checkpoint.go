package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	// Best is the validation record of a job with a validation set (the
	// first worker's): the best figure met so far and the evaluations
	// since, rolled back with the model it judged.
	Best *Best `json:"best,omitempty"`
}

// Best is the best validation figure of a job so far.
type Best struct {
	// Value is the figure (train.valid_metric), When the evaluation that
	// met it ("epoch 4", "batch 300").
	Value float64 `json:"value"`
	When  string  `json:"when"`
	// Since counts the evaluations after it that did not beat it.
	Since int `json:"since,omitempty"`
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

// ErrInconsistent is returned (wrapped) by Consistent.
var ErrInconsistent = errors.New("checkpoint: the shards applied other batches than the checkpoints count")

// Consistent checks that a consistent snapshot's state entries (the
// manifest's Readers: the checkpoints, and every shard's records of
// applied pushes under ams.AppliedKey) agree: each shard holds, of each
// worker, exactly the batches 0 to Batches-1 of its checkpoint, with its
// Applied samples and Digest, and no shard holds pushes of a worker
// without a checkpoint. Sync-mode checkpoints are not checked (a round is
// applied once by its number, and its pushes name no batch). It is the
// proof, from what the shards applied, that the snapshot's model holds
// every counted sample once and nothing else.
func Consistent(readers map[string]json.RawMessage) error {
	cps := map[string]Checkpoint{}
	var shards []string
	for k, v := range readers {
		switch {
		case ams.IsCheckpointKey(k):
			c, err := Decode(v)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrBad, k, err)
			}
			worker := strings.TrimSuffix(strings.TrimPrefix(k, ams.StateReaderPrefix), "/checkpoint")
			cps[worker] = c
		case strings.HasPrefix(k, ams.StateAppliedPrefix):
			shards = append(shards, k)
		}
	}
	slices.Sort(shards)
	var errs []error
	for _, k := range shards {
		var recs map[string]*ams.Applied
		if err := json.Unmarshal(readers[k], &recs); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInconsistent, k, err)
		}
		for _, w := range slices.Sorted(maps.Keys(cps)) {
			c := cps[w]
			if c.Sync {
				continue
			}
			if err := c.matches(w, k, recs[w]); err != nil {
				errs = append(errs, err)
			}
		}
		for _, w := range slices.Sorted(maps.Keys(recs)) {
			if _, ok := cps[w]; !ok && recs[w] != nil && len(recs[w].Ranges) > 0 {
				errs = append(errs, fmt.Errorf("shard record %s holds batches %s of %s, which has no checkpoint", k, recs[w], w))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInconsistent, errors.Join(errs...))
	}
	return nil
}

// matches reports whether a, the record of worker's pushes kept by shard
// (nil: none), holds exactly the batches c counts, with c's samples and
// digest.
func (c Checkpoint) matches(worker, shard string, a *ams.Applied) error {
	if a == nil {
		a = &ams.Applied{}
	}
	if a.Exactly(uint64(c.Batches)) && a.Samples == c.Applied && a.Digest == c.Digest {
		return nil
	}
	return fmt.Errorf("%s's checkpoint counts batches [0,%d) of %d samples (digest %x), shard %s applied %s of %d samples (digest %x)",
		worker, c.Batches, c.Applied, c.Digest, shard, a, a.Samples, a.Digest)
}

// Verified is a worker's account of its pushes by the shards' records
// (Verify): what the model holds of the worker, not what it believes.
type Verified struct {
	// Exact: every shard applied each of the batches the checkpoint
	// counts once, and nothing else of the worker.
	Exact bool `json:"exact"`
	// Checked is false where no check applies (sync mode, whose rounds are
	// applied once by number and name no batch).
	Checked bool `json:"checked"`
	// Batches, Samples and Digest are the shards' (the first shard's when
	// they disagree); Shards is how many agreed with the checkpoint.
	Batches uint64 `json:"batches"`
	Samples int64  `json:"samples"`
	Digest  uint64 `json:"digest"`
	Shards  int    `json:"shards"`
	// Problem says what disagrees, when not Exact.
	Problem string `json:"problem,omitempty"`
	// NotVerified says why a check could not be made (a read that failed,
	// a shard or etcd that did not answer in time): the verdict is then
	// neither exactly-once nor its opposite, and Exact is false.
	NotVerified string `json:"not_verified,omitempty"`
}

// Verify compares worker's checkpoint in the model with every shard's
// record of its pushes. The error is for a check that could not run
// (shards unreachable); a mismatch is a Verified that is not Exact.
func Verify(ctx context.Context, cl *client.Client, worker string) (Verified, error) {
	c, _, err := Load(ctx, cl, worker)
	if err != nil {
		return Verified{}, err
	}
	recs, err := cl.Applied(ctx, worker)
	if err != nil {
		return Verified{}, fmt.Errorf("checkpoint: verify %s's pushes: %w", worker, err)
	}
	if c.Sync {
		return Verified{}, nil
	}
	v := Verified{Exact: true, Checked: true}
	var errs []error
	for s, a := range recs {
		if s == 0 {
			v.Batches, v.Samples, v.Digest = a.Batches(), a.Samples, a.Digest
		}
		if err := c.matches(worker, cl.ShardMap().Shards[s], a); err != nil {
			errs = append(errs, err)
			continue
		}
		v.Shards++
	}
	if len(errs) > 0 {
		v.Exact, v.Problem = false, errors.Join(errs...).Error()
	}
	return v, nil
}
