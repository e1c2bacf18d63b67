package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/snapshot"
)

// rollbackOp is a rollback to the pinned snapshot in progress: asked for
// by request (an etcd revision), to snapshot want.
type rollbackOp struct {
	want    clusterfsm.SnapshotID
	request int64
}

// requestRollback feeds a rollback request to the core (a worker keeping
// its job's best model, controlplane.RequestRollback); one refused is
// answered at once, one the core queued (during a cut) when it runs or is
// refused (clusterfsm.Refused). The rollback that starts is recorded at
// its clusterfsm.StartRollback.
func (s *Scheduler) requestRollback(ctx context.Context) {
	if s.fsm == nil {
		return
	}
	if err := s.step(ctx, clusterfsm.RollbackRequested{}); err != nil {
		s.refuseRollback(ctx, err)
	}
}

// refuseRollback answers the newest rollback request with err.
func (s *Scheduler) refuseRollback(ctx context.Context, err error) {
	s.putRollbackResult(ctx, controlplane.RollbackResult{Time: time.Now().UTC(), Error: err.Error(), Request: s.lastRollbackRequest})
}

// rolledBack answers the rollback in progress once the cluster serves
// again (to: the state entered), before the workers resume: they read
// the answer as they start at its version (controlplane.LastRollback).
// The snapshots after the restored one, which the core forgot, are
// removed from the store. A cluster that failed answers it with the
// failure.
func (s *Scheduler) rolledBack(ctx context.Context, to clusterfsm.State) {
	op := s.rb
	if op == nil || to.Phase != clusterfsm.Serving && to.Phase != clusterfsm.Failed {
		return
	}
	s.rb = nil
	res := controlplane.RollbackResult{Seq: uint64(s.restoring), Version: to.Version, Time: time.Now().UTC(), Request: op.request}
	switch {
	case to.Phase == clusterfsm.Failed:
		res.Error = "the cluster failed during the rollback"
	case s.restoring != op.want:
		res.Error = fmt.Sprintf("the pinned %v failed to restore: the cluster restored %v", op.want, s.restoring)
	default:
		removed, err := s.removeAfter(uint64(op.want))
		res.Removed = removed
		if err != nil {
			s.log.Warn("removing the snapshots after the rollback's", "snapshot", op.want.String(), "err", err)
		}
		s.log.Info("rolled back", "snapshot", op.want.String(), "version", to.Version, "removed", removed)
	}
	s.putRollbackResult(ctx, res)
}

// removeAfter removes the snapshots after seq from the store: a rollback
// to seq discarded the model they hold.
func (s *Scheduler) removeAfter(seq uint64) ([]uint64, error) {
	store, err := snapshot.OpenStore(s.opts.Config.Snapshot.Store, "")
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return snapshot.RemoveAfter(store, seq)
}

func (s *Scheduler) putRollbackResult(ctx context.Context, res controlplane.RollbackResult) {
	s.retry(ctx, "record the rollback result", func(ctx context.Context) error {
		return s.conn.PutRollbackResult(ctx, res)
	})
}
