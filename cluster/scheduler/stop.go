package scheduler

import (
	"context"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/job/checkpoint"
)

// SaveOnStop takes the snapshot of a scheduler being stopped (Serve calls
// it on a signal, before Close), so that a cluster stopped in order
// (workers, then the scheduler, then the shards) keeps what was trained
// since its last snapshot: when this scheduler leads, the cluster serves,
// a snapshot store is set and the workers' checkpoints in the model count
// other samples applied than the last good snapshot holds (a bounded job's
// worker 0 saved its final model already: no second copy of it). It
// returns the snapshot's result and whether one was taken, within
// Options.StopSnapshotTimeout; a failed snapshot is an error.
func (s *Scheduler) SaveOnStop(ctx context.Context) (controlplane.SnapshotResult, bool, error) {
	if s.opts.Config.Snapshot.Store == "" || s.opts.StopSnapshotTimeout < 0 || s.Status().Phase != clusterfsm.Serving {
		return controlplane.SnapshotResult{}, false, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.StopSnapshotTimeout)
	defer cancel()
	if last, ok, err := s.conn.LastSnapshot(ctx); err == nil && ok && last.Error == "" {
		if applied, err := s.appliedNow(ctx); err == nil && applied == last.Applied {
			return last, false, nil
		}
	}
	s.log.Info("stopped while the cluster serves: taking a snapshot first (a second signal exits at once without it)", "within", s.opts.StopSnapshotTimeout)
	r, err := s.conn.RequestSnapshot(ctx, false)
	if err != nil {
		return r, false, fmt.Errorf("scheduler: the stop's snapshot: %w", err)
	}
	return r, true, nil
}

// appliedNow sums the samples applied that the workers' checkpoints in
// the model count, asking the shards of the published shard map.
func (s *Scheduler) appliedNow(ctx context.Context) (int64, error) {
	m, err := s.conn.GetShardMap(ctx)
	if err != nil {
		return 0, err
	}
	cl, err := s.newClient(m)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	entries, err := cl.GetState(ctx, ams.StateReaderPrefix)
	if err != nil {
		return 0, err
	}
	return checkpoint.Applied(entries), nil
}
