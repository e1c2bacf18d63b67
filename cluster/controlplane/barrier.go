package controlplane

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// The barrier protocol: members that must all reach a point before any
// goes on (the workers before their final evaluation) each put a key
// P/barriers/<kind>.<id>/<name>, under their own lease, and wait until n
// members of their kind have one for the barrier's name. The member comes
// first in the key so that a worker's etcd role can hold it to its own
// arrivals (WorkerAccess); every arrival of the cluster is under one
// prefix, which each count reads (a handful of keys: one per member and
// barrier passed while it lives).

// Barrier marks the registered member reg as arrived at the barrier name (a
// key under the member's lease, so a member that dies stops counting) and
// blocks until n members have arrived or ctx ends.
func (c *Conn) Barrier(ctx context.Context, reg *membership.Registration, name string, n int) error {
	if err := membership.ValidateName("barrier", name); err != nil {
		return err
	}
	m := reg.Member()
	dir := BarriersPrefix(c.prefix)
	put, err := c.cli.Put(ctx, BarrierKey(c.prefix, m.Kind, m.ID, name), m.String(), clientv3.WithLease(reg.Lease()))
	if err != nil {
		return fmt.Errorf("controlplane: barrier %s: %w", name, err)
	}
	// arrived counts the members at the barrier at revision rev. Counting
	// at an arrival's revision matters: members that passed the barrier
	// and left since would no longer be counted now.
	arrived := func(rev int64) (bool, error) {
		resp, err := c.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(rev))
		if err != nil {
			return false, fmt.Errorf("controlplane: barrier %s: %w", name, err)
		}
		return countArrivals(resp.Kvs, dir, m.Kind, name) >= n, nil
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
			if _, at, ok := barrierArrival(string(ev.Kv.Key), dir); ev.Type != clientv3.EventTypePut || !ok || at != name {
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

// countArrivals counts the keys of kvs (under dir, BarriersPrefix) that
// are arrivals of members of kind at the barrier name. A key of another
// form (written by hand, or by a writer of no role on a cluster without
// TLS) is not counted.
func countArrivals(kvs []*mvccpb.KeyValue, dir, kind, name string) int {
	n := 0
	for _, kv := range kvs {
		if member, at, ok := barrierArrival(string(kv.Key), dir); ok && at == name && strings.HasPrefix(member, kind+".") {
			n++
		}
	}
	return n
}

// barrierArrival splits a key under dir (BarriersPrefix) into its member
// ("<kind>.<id>") and the barrier's name, with ok false for a key of
// another form.
func barrierArrival(key, dir string) (member, name string, ok bool) {
	rest, ok := strings.CutPrefix(key, dir)
	if !ok {
		return "", "", false
	}
	member, name, ok = strings.Cut(rest, "/")
	if !ok || member == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return member, name, true
}
