package client

import (
	"context"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// Round is one worker's view of a round of synchronous training (sync
// mode): the Iter-th batch of every worker in epoch Epoch. Each shard
// applies a round, with the average of its workers' gradients, once every
// one of the Workers workers has pushed its part of it or has left the
// epoch (Done).
type Round struct {
	Epoch, Iter     uint32
	Worker, Workers int
	// Done: the worker has no batch for this round; it leaves the epoch.
	Done bool
}

func (r Round) proto() (*amspb.SyncRound, error) {
	if r.Workers < 1 || r.Worker < 0 || r.Worker >= r.Workers {
		return nil, fmt.Errorf("ams client: sync round: worker %d of %d", r.Worker, r.Workers)
	}
	return &amspb.SyncRound{Epoch: r.Epoch, Iter: r.Iter, Worker: uint32(r.Worker), Workers: uint32(r.Workers), Done: r.Done}, nil
}

// PullRound is PullRoute (creating missing rows) for round r of sync
// mode: every shard, also one that holds none of the route's ids, first
// waits until every round before r is applied there, so that the
// worker's part of r, pushed next, is of every shard's next round (a
// shard refuses parts too far ahead: ams.ErrRoundAhead). A shard waits a bounded time; when one stopped waiting first,
// PullRound returns pending, with rows and dense not (all) filled, and
// the caller asks again (a worker checks for a pause in between: the
// round may wait for a worker that paused).
func (c *Client) PullRound(ctx context.Context, r Round, route *Route, rows [][]float32, dense []Vector) (pending bool, err error) {
	pr, err := r.proto()
	if err != nil {
		return false, err
	}
	return c.pull(ctx, route, rows, dense, true, pr)
}

// PushRound sends this worker's part of round r to every shard: gradients
// as PushRoute does (a Done round carries none: route nil), and state,
// which the shard that keeps each key stores when it applies the round (a
// checkpoint that is in the model exactly when the round's gradients
// are). It returns when every shard has taken the part; the round is
// applied later, when its last part arrives.
func (c *Client) PushRound(ctx context.Context, r Round, route *Route, grads [][]float32, dense []Vector, state []StateEntry) error {
	pr, err := r.proto()
	if err != nil {
		return err
	}
	if r.Done && (route.Tables() > 0 || len(dense) > 0) {
		return fmt.Errorf("ams client: sync round %d/%d: a done part carries gradients", r.Epoch, r.Iter)
	}
	return c.push(ctx, ams.Origin{}, route, grads, dense, pr, state)
}
