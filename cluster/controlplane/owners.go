package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// The owner-address protocol of a SLIDE job with several workers (package
// sparsenet/slide/dslide): each worker serves its share of the layer to
// the others over gRPC. At the start of each attempt a worker puts the
// address it serves on, with the attempt's cluster version, under its
// lease (PutOwnerAddr); the workers then wait until every worker has put
// its address for this version or a later one (WaitOwnerAddrs). A worker
// that dies takes its address with its lease; a restarted one puts its
// new address at its next attempt.

// OwnerAddr is one worker's published share address.
type OwnerAddr struct {
	Addr    string `json:"addr"`
	Version uint64 `json:"version"`
}

// PutOwnerAddr publishes worker index's address for the attempt at
// version, under reg's lease.
func (c *Conn) PutOwnerAddr(ctx context.Context, reg *membership.Registration, index int, a OwnerAddr) error {
	return c.putJSON(ctx, OwnerAddrKey(c.prefix, index), "owner address", a, clientv3.WithLease(reg.Lease()))
}

// WaitOwnerAddrs waits until workers 0..n-1 have each published an address
// for version or later, and returns them by index.
func (c *Conn) WaitOwnerAddrs(ctx context.Context, n int, version uint64) ([]string, error) {
	dir := OwnerAddrPrefix(c.prefix)
	for {
		resp, err := c.cli.Get(ctx, dir, clientv3.WithPrefix())
		if err != nil {
			return nil, fmt.Errorf("controlplane: owner addresses: %w", err)
		}
		addrs := make([]string, n)
		have := 0
		for _, kv := range resp.Kvs {
			i, err := strconv.Atoi(string(kv.Key[len(dir):]))
			if err != nil || i < 0 || i >= n {
				continue // another job's size: not ours to read
			}
			var a OwnerAddr
			if err := json.Unmarshal(kv.Value, &a); err != nil {
				return nil, fmt.Errorf("%w: owner address %s: %w", ErrBadValue, kv.Key, err)
			}
			if a.Version >= version && addrs[i] == "" {
				addrs[i] = a.Addr
				have++
			}
		}
		if have == n {
			return addrs, nil
		}
		if err := c.waitChange(ctx, dir, resp.Header.Revision); err != nil {
			return nil, fmt.Errorf("controlplane: owner addresses: %w", err)
		}
	}
}

// WorkersLeft returns which of the named workers have left the cluster
// cleanly (a job that ended, with or without an error) and not registered
// again: a SLIDE job's workers, whose rounds need every worker, stop
// waiting for them.
func (c *Conn) WorkersLeft(ctx context.Context, names []string) ([]string, error) {
	dir := LeftPrefix(c.prefix) + membership.KindWorker + "/"
	resp, err := c.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("controlplane: workers left: %w", err)
	}
	var left []string
	for _, kv := range resp.Kvs {
		if id := string(kv.Key[len(dir):]); slices.Contains(names, id) {
			left = append(left, id)
		}
	}
	return left, nil
}
