package controlplane

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/reader"
)

// The file assignment protocol: with several workers reading files, the
// leading scheduler divides the training files among them (whole files,
// and byte ranges of large ones: reader.Assign) and publishes each
// worker's share (PutAssignment); worker i waits for its own
// (WaitAssignment) before it reads.

// Assignment is what the scheduler hands a worker: its share of the
// training files. Splits may be empty (more workers than pieces of data).
type Assignment struct {
	Splits []reader.FileSplit `json:"splits"`
}

// PutAssignment stores worker's assignment.
func (c *Conn) PutAssignment(ctx context.Context, worker string, splits []reader.FileSplit) error {
	if err := membership.ValidateName("worker", worker); err != nil {
		return err
	}
	if splits == nil {
		splits = []reader.FileSplit{}
	}
	return c.putJSON(ctx, AssignKey(c.prefix, worker), "assignment of "+worker, Assignment{Splits: splits})
}

// WaitAssignment waits for worker's assignment and returns its splits.
func (c *Conn) WaitAssignment(ctx context.Context, worker string) ([]reader.FileSplit, error) {
	var last error
	a, err := waitFor(ctx, c.cli, AssignKey(c.prefix, worker), func(b []byte) (Assignment, bool) {
		var a Assignment
		if err := json.Unmarshal(b, &a); err != nil {
			last = err
			return a, false
		}
		return a, true
	})
	if err != nil {
		if last != nil {
			return nil, fmt.Errorf("controlplane: wait assignment of %s: %w (last value: %v)", worker, err, last)
		}
		return nil, fmt.Errorf("controlplane: wait assignment of %s: %w", worker, err)
	}
	return a.Splits, nil
}
