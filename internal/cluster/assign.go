package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/reader"
)

// AssignPrefix is the directory of the scheduler's data assignments, one
// key per worker.
func AssignPrefix(prefix string) string { return prefix + "/assign/" }

// WorkerName is the member id of worker i of a job: the worker registers
// under it and the scheduler publishes its assignment under it.
func WorkerName(i int) string { return fmt.Sprintf("worker-%d", i) }

// AssignKey is the key of worker's data assignment.
func AssignKey(prefix, worker string) string { return AssignPrefix(prefix) + worker }

// Assignment is what the scheduler hands a worker: its share of the
// training files. Splits may be empty (more workers than pieces of data).
type Assignment struct {
	Splits []reader.FileSplit `json:"splits"`
}

// PutAssignment stores worker's assignment.
func PutAssignment(ctx context.Context, cli *clientv3.Client, prefix, worker string, splits []reader.FileSplit) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if err := checkName("worker", worker); err != nil {
		return err
	}
	if splits == nil {
		splits = []reader.FileSplit{}
	}
	b, err := json.Marshal(Assignment{Splits: splits})
	if err != nil {
		return fmt.Errorf("cluster: assignment: %w", err)
	}
	if _, err := cli.Put(ctx, AssignKey(prefix, worker), string(b)); err != nil {
		return fmt.Errorf("cluster: put assignment of %s: %w", worker, err)
	}
	return nil
}

// WaitAssignment waits for worker's assignment and returns its splits.
func WaitAssignment(ctx context.Context, cli *clientv3.Client, prefix, worker string) ([]reader.FileSplit, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	var last error
	a, err := waitFor(ctx, cli, AssignKey(prefix, worker), func(b []byte) (Assignment, bool) {
		var a Assignment
		if err := json.Unmarshal(b, &a); err != nil {
			last = err
			return a, false
		}
		return a, true
	})
	if err != nil {
		if last != nil {
			return nil, fmt.Errorf("cluster: wait assignment of %s: %w (last value: %v)", worker, err, last)
		}
		return nil, fmt.Errorf("cluster: wait assignment of %s: %w", worker, err)
	}
	return a.Splits, nil
}
