package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/job/checkpoint"
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
	paused, err := s.waitPaused(ctx, workers, op.pauseSeq)
	res.Workers, res.Paused = len(paused), paused
	if err != nil {
		return nil, err
	}
	cl, err := s.newClient(m)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	man, err := s.writeSnapshot(ctx, cl, store, op, require)
	if err != nil {
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

// incompleteTries is how many times a snapshot whose parts do not make a
// whole model is written, and incompleteWait the wait before the next
// try, times the try's number.
const (
	incompleteTries = 5
	incompleteWait  = 100 * time.Millisecond
)

// writeSnapshot has the shards write snapshot op.id and commits it. Parts
// that do not make a whole model (snapshot.ErrIncomplete: most often a
// table a worker was declaring, created on some shards and not yet on the
// others, which a paused worker does not hold up) are written again, a
// few times, before the attempt fails. A failed write's files are
// removed.
func (s *Scheduler) writeSnapshot(ctx context.Context, cl *client.Client, store snapshot.Store, op *snapOp, require []string) (*snapshot.Manifest, error) {
	for try := 1; ; try++ {
		man, err := cl.WriteSnapshot(ctx, client.SnapshotOptions{Job: s.jobID, Store: s.opts.Config.Snapshot.Store, Seq: uint64(op.id), Require: require, Pinned: op.pin,
			Check: func(m *snapshot.Manifest) error { return checkpoint.Consistent(m.Readers) }})
		if err == nil {
			return man, nil
		}
		// This attempt's files, and those of any earlier failed one that a
		// shard went on writing after its attempt ended: one snapshot runs
		// at a time, so every incomplete one is dead now.
		if _, rerr := snapshot.RemoveIncomplete(store); rerr != nil {
			s.log.Warn("removing the failed snapshot's files", "seq", op.id, "err", rerr)
		}
		if !errors.Is(err, snapshot.ErrIncomplete) || try == incompleteTries {
			return nil, err
		}
		s.log.Info("snapshot parts incomplete; writing them again", "seq", op.id, "try", try, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(try) * incompleteWait):
		}
	}
}
