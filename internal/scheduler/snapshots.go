package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/checkpoint"
	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/snapshot"
)

// snapshotOnce waits for the workers to pause for op, has every shard of
// m write its part of snapshot op.id, commits the manifest and prunes old
// snapshots. The caller resumes the workers.
func (s *Scheduler) snapshotOnce(ctx context.Context, m *ams.ShardMap, op *snapOp, workers []string, res *controlplane.SnapshotResult) error {
	if m == nil {
		return errors.New("no shard map for the snapshot's version")
	}
	store, err := snapshot.OpenStore(s.opts.Config.Snapshot.Store, "")
	if err != nil {
		return err
	}
	defer store.Close()
	wctx, cancel := context.WithTimeout(ctx, s.opts.SnapshotPauseTimeout)
	err = s.conn.WaitPauseAcks(wctx, workers, op.pauseSeq)
	cancel()
	if err != nil {
		return fmt.Errorf("workers did not pause within %v: %w", s.opts.SnapshotPauseTimeout, err)
	}
	cl, err := client.New(m)
	if err != nil {
		return err
	}
	defer cl.Close()
	man, err := cl.WriteSnapshot(ctx, client.SnapshotOptions{Store: s.opts.Config.Snapshot.Store, Seq: uint64(op.id)})
	if err != nil {
		return err
	}
	for _, t := range man.Tables {
		for _, f := range t.Files {
			res.Rows += f.Rows
		}
	}
	res.Applied = checkpoint.AppliedIn(man.Readers)
	res.Removed, err = snapshot.Prune(store, s.opts.Config.Snapshot.Keep)
	return err
}
