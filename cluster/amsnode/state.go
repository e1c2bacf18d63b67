package amsnode

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams"
)

// checkState is the shard's check of a state entry before it is stored
// (shard.Options.CheckState): a value under a worker's checkpoint key
// (ams.CheckpointKey) must be the JSON of a checkpoint, an object whose
// counts are numbers that can be (no negative epoch, batch, samples or
// batches; positions with offsets of zero or more). Before, a value that
// was no checkpoint was stored from any client and failed every later
// snapshot (issue 48). It reads the JSON of job/checkpoint's
// Checkpoint, whose package the AMS binary does not link (it imports the
// sample reader): TestCheckStateTakesEveryCheckpoint holds the two
// together. Other keys pass.
func checkState(key string, value []byte) error {
	if !ams.IsCheckpointKey(key) {
		return nil
	}
	var c struct {
		Epoch     int64 `json:"epoch"`
		Batch     int64 `json:"batch"`
		Applied   int64 `json:"applied"`
		Batches   int64 `json:"batches"`
		Positions []struct {
			Offset int64 `json:"offset"`
		} `json:"positions"`
	}
	if err := json.Unmarshal(value, &c); err != nil {
		return fmt.Errorf("not a checkpoint: %w", err)
	}
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"epoch", c.Epoch}, {"batch", c.Batch}, {"applied", c.Applied}, {"batches", c.Batches}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("a checkpoint's %s %d is negative", f.name, f.v))
		}
	}
	for i, p := range c.Positions {
		if p.Offset < 0 {
			errs = append(errs, fmt.Errorf("a checkpoint's position %d has offset %d", i, p.Offset))
		}
	}
	return errors.Join(errs...)
}
