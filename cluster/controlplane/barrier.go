package controlplane

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// The barrier protocol: members that must all reach a point before any
// goes on (the workers before their final evaluation) each put a key
// under the barrier's directory, under their own lease, and wait until n
// keys are there.

// Barrier marks the registered member reg as arrived at the barrier name (a
// key under the member's lease, so a member that dies stops counting) and
// blocks until n members have arrived or ctx ends.
func (c *Conn) Barrier(ctx context.Context, reg *membership.Registration, name string, n int) error {
	if err := membership.ValidateName("barrier", name); err != nil {
		return err
	}
	m := reg.Member()
	dir := BarrierPrefix(c.prefix, name)
	key := dir + m.Kind + "." + m.ID
	put, err := c.cli.Put(ctx, key, m.String(), clientv3.WithLease(reg.Lease()))
	if err != nil {
		return fmt.Errorf("controlplane: barrier %s: %w", name, err)
	}
	// arrived counts the members at the barrier at revision rev. Counting
	// at an arrival's revision matters: members that passed the barrier
	// and left since would no longer be counted now.
	arrived := func(rev int64) (bool, error) {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.cli.Get(ctx, dir, opts...)
		if err != nil {
			return false, fmt.Errorf("controlplane: barrier %s: %w", name, err)
		}
		return int(resp.Count) >= n, nil
	}
	// First count at our own arrival: members that were there then count
	// even if they have passed and left since.
	done, err := arrived(put.Header.Revision)
	if done || err != nil {
		return err
	}
	// Then watch every arrival after ours (not from the Get's header
	// revision, which may be later and skip one).
	rev := put.Header.Revision
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range c.cli.Watch(wctx, dir, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("controlplane: barrier %s: %w", name, err)
		}
		// Count at each arrival's own revision: a response's header
		// revision may be later, after members that passed have left.
		for _, ev := range wr.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			if done, err := arrived(ev.Kv.ModRevision); done || err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("controlplane: barrier %s: %w", name, err)
	}
	return fmt.Errorf("controlplane: barrier %s: watch closed", name)
}
