package ctrtrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/job/tracker"
	"github.com/xdlgo/xps/job/trainrun"
	"github.com/xdlgo/xps/model/ctr"
)

// ErrSync reports a job that cannot run in sync mode.
var ErrSync = errors.New("worker: sync mode")

// round returns this worker's round iter of epoch (rounds count epochs
// from 0).
func (r *run) round(epoch int, done bool) client.Round {
	so := r.t.opts.Sync
	return client.Round{Epoch: uint32(epoch - 1), Iter: r.syncIter, Worker: so.Worker, Workers: so.Workers, Done: done}
}

// pullStep pulls s's batch: in sync mode for the next round, once every
// shard has applied the previous one. While the round waits for other
// workers the worker still pauses when asked (a worker the round waits
// for may be paused for a snapshot).
func (r *run) pullStep(ctx context.Context, s *state) error {
	t := r.t
	if t.opts.Sync == nil {
		return t.pull(ctx, s, true)
	}
	if err := t.route(s); err != nil {
		return err
	}
	for {
		pending, err := t.cl.PullRound(ctx, r.round(r.tk.Epoch(), false), s.route, s.rows, []client.Vector{{Name: ctr.DenseName, Values: s.params}})
		if err != nil || !pending {
			return err
		}
		if t.pauseRequested() {
			if err := r.Pause(ctx, nil); err != nil { // sync mode: the checkpoint goes with the round
				return err
			}
		}
	}
}

// joinRound marks s's batch, in sync mode, as this worker's part of the
// next round, with the checkpoint of the model once the round is applied.
func (r *run) joinRound(s *state, ev tracker.BatchTrained) error {
	if r.t.opts.Sync == nil {
		s.round, s.roundState = nil, nil
		return nil
	}
	rd := r.round(r.tk.Epoch(), false)
	c := r.tk.After(ev)
	c.Sync, c.Round = true, rd.Iter+1
	e, err := r.t.checkpointEntry(c)
	if err != nil {
		return err
	}
	s.round, s.roundState = &rd, e
	return nil
}

// LeaveRound ends this worker's epoch in sync mode: its part of the next
// round is done, with c, the checkpoint of the finished epoch.
func (r *run) LeaveRound(ctx context.Context, c Checkpoint) error {
	t := r.t
	c.Sync = true
	e, err := t.checkpointEntry(c)
	if err != nil {
		return err
	}
	if err := t.cl.PushRound(ctx, r.round(c.Epoch, true), nil, nil, nil, e); err != nil {
		return fmt.Errorf("worker: leave sync epoch %d: %w", c.Epoch, err)
	}
	return nil
}

// checkpointEntry encodes c as the state entry of this worker's
// checkpoint.
func (t *Trainer) checkpointEntry(c Checkpoint) ([]client.StateEntry, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("worker: encode checkpoint: %w", err)
	}
	return []client.StateEntry{{Key: t.opts.Sync.Key, Value: b}}, nil
}

// pushRound pushes pb as this worker's part of round rd, through the
// route of its batch's pull.
func (t *Trainer) pushRound(ctx context.Context, pb *trainrun.Push, rd client.Round, state []client.StateEntry) error {
	return t.cl.PushRound(ctx, rd, pb.Route, pb.Grads, pb.Vecs, state)
}
