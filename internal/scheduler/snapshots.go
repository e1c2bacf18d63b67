package scheduler

import (
	"context"
	"errors"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/checkpoint"
	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/snapshot"
)

// snapshotOnce waits for the workers to pause for op, has every shard of
// m write its part of snapshot op.id, commits the manifest if the parts
// make a whole model holding every state key of require, and prunes old
// snapshots. It returns the snapshot's state keys. A failed attempt's
// files are removed. The caller resumes the workers.
func (s *Scheduler) snapshotOnce(ctx context.Context, m *ams.ShardMap, op *snapOp, workers, require []string, res *controlplane.SnapshotResult) ([]string, error) {
	if m == nil {
		return nil, errors.New("no shard map for the snapshot's version")
	}
	store, err := snapshot.OpenStore(s.opts.Config.Snapshot.Store, "")
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := s.waitPaused(ctx, workers, op.pauseSeq); err != nil {
		return nil, err
	}
	cl, err := s.newClient(m)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	man, err := cl.WriteSnapshot(ctx, client.SnapshotOptions{Job: s.jobID, Store: s.opts.Config.Snapshot.Store, Seq: uint64(op.id), Require: require,
		Check: func(m *snapshot.Manifest) error { return checkpoint.Consistent(m.Readers) }})
	if err != nil {
		// This attempt's files, and those of any earlier failed one that a
		// shard went on writing after its attempt ended: one snapshot runs
		// at a time, so every incomplete one is dead now.
		if _, rerr := snapshot.RemoveIncomplete(store); rerr != nil {
			s.log.Warn("removing the failed snapshot's files", "seq", op.id, "err", rerr)
		}
		return nil, err
	}
	for _, t := range man.Tables {
		for _, f := range t.Files {
			res.Rows += f.Rows
		}
	}
	res.Applied = checkpoint.AppliedIn(man.Readers)
	res.Removed, err = snapshot.Prune(store, s.opts.Config.Snapshot.Keep)
	return manifestKeys(man), err
}
