package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/cluster"
	"github.com/xdlgo/xps/snapshot"
)

// SnapshotRequestKey is written (any value) to ask the scheduler for a
// snapshot now; cmd/scheduler -snapshot-now does.
func SnapshotRequestKey(prefix string) string { return prefix + "/snapshot/request" }

// SnapshotLastKey holds the JSON SnapshotResult of the latest attempt.
func SnapshotLastKey(prefix string) string { return prefix + "/snapshot/last" }

// SnapshotResult is the outcome of one snapshot attempt.
type SnapshotResult struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Seconds float64   `json:"seconds"`
	Rows    int64     `json:"rows"`
	Workers int       `json:"workers"` // paused for it
	Removed []uint64  `json:"removed,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// snapshotOnce waits for the workers to pause for op, has every shard of
// m write its part of snapshot op.id, commits the manifest and prunes old
// snapshots. The caller resumes the workers.
func (s *Scheduler) snapshotOnce(ctx context.Context, m *ams.ShardMap, op *snapOp, workers []string, res *SnapshotResult) error {
	if m == nil {
		return errors.New("no shard map for the snapshot's version")
	}
	store, err := snapshot.OpenStore(s.opts.SnapshotStore, "")
	if err != nil {
		return err
	}
	defer store.Close()
	wctx, cancel := context.WithTimeout(ctx, s.opts.SnapshotPauseTimeout)
	err = cluster.WaitPauseAcks(wctx, s.cli, s.opts.Prefix, workers, op.pauseSeq)
	cancel()
	if err != nil {
		return fmt.Errorf("workers did not pause within %v: %w", s.opts.SnapshotPauseTimeout, err)
	}
	cl, err := client.New(m)
	if err != nil {
		return err
	}
	defer cl.Close()
	man, err := cl.WriteSnapshot(ctx, client.SnapshotOptions{Store: s.opts.SnapshotStore, Seq: uint64(op.id)})
	if err != nil {
		return err
	}
	for _, t := range man.Tables {
		for _, f := range t.Files {
			res.Rows += f.Rows
		}
	}
	res.Removed, err = snapshot.Prune(store, s.opts.SnapshotKeep)
	return err
}

// RequestSnapshot asks the cluster's scheduler for a snapshot now and
// waits for its result.
func RequestSnapshot(ctx context.Context, cli *clientv3.Client, prefix string) (SnapshotResult, error) {
	before, err := cli.Get(ctx, SnapshotLastKey(prefix))
	if err != nil {
		return SnapshotResult{}, err
	}
	rev := before.Header.Revision
	if _, err := cli.Put(ctx, SnapshotRequestKey(prefix), time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return SnapshotResult{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range cli.Watch(wctx, SnapshotLastKey(prefix), clientv3.WithRev(rev+1)) {
		for _, ev := range resp.Events {
			var r SnapshotResult
			if json.Unmarshal(ev.Kv.Value, &r) != nil {
				continue
			}
			if r.Error != "" {
				return r, errors.New("scheduler: snapshot: " + r.Error)
			}
			return r, nil
		}
	}
	return SnapshotResult{}, fmt.Errorf("scheduler: waiting for the snapshot: %w", context.Cause(ctx))
}
