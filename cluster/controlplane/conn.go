package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// ErrBadValue is returned (wrapped) when a stored value cannot be decoded.
var ErrBadValue = errors.New("controlplane: bad value")

// Conn is one process's view of a cluster's control plane: an etcd client
// and the cluster's key prefix. Every protocol of the package is a method
// set on it (one file per protocol). A Conn is safe for concurrent use; it
// does not own the client, which the caller closes after the last call.
type Conn struct {
	cli    *clientv3.Client
	prefix string
}

// New returns the Conn of the cluster under prefix ("": the default
// cluster, membership.DefaultPrefix).
func New(cli *clientv3.Client, prefix string) (*Conn, error) {
	if cli == nil {
		return nil, errors.New("controlplane: an etcd client is required")
	}
	if prefix == "" {
		prefix = membership.DefaultPrefix
	}
	if err := membership.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	return &Conn{cli: cli, prefix: prefix}, nil
}

// Client returns the etcd client.
func (c *Conn) Client() *clientv3.Client { return c.cli }

// Prefix returns the cluster's key prefix.
func (c *Conn) Prefix() string { return c.prefix }

// putJSON stores v as JSON under key; what names the value in errors.
func (c *Conn) putJSON(ctx context.Context, key, what string, v any, opts ...clientv3.OpOption) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("controlplane: %s: %w", what, err)
	}
	if _, err := c.cli.Put(ctx, key, string(b), opts...); err != nil {
		return fmt.Errorf("controlplane: put %s: %w", what, err)
	}
	return nil
}

// getJSON decodes the value under key into v; it reports false when the
// key does not exist.
func (c *Conn) getJSON(ctx context.Context, key, what string, v any) (bool, error) {
	resp, err := c.cli.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("controlplane: get %s: %w", what, err)
	}
	if len(resp.Kvs) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, v); err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrBadValue, what, err)
	}
	return true, nil
}

// waitFor returns the first value of key that accept takes, reading it and
// then watching it until ctx ends.
func waitFor[T any](ctx context.Context, cli *clientv3.Client, key string, accept func([]byte) (T, bool)) (T, error) {
	var zero T
	for {
		// Get, then watch from the next revision; a watch that fails (e.g.
		// compacted) starts over with a Get.
		resp, err := cli.Get(ctx, key)
		if err != nil {
			return zero, err
		}
		if len(resp.Kvs) > 0 {
			if v, ok := accept(resp.Kvs[0].Value); ok {
				return v, nil
			}
		}
		v, ok, err := watchFor(ctx, cli, key, resp.Header.Revision+1, accept)
		if ok || err != nil {
			return v, err
		}
	}
}

// watchFor watches key from rev until accept takes a value (returns it and
// true), ctx ends (returns its error) or the watch breaks (returns false,
// nil).
func watchFor[T any](ctx context.Context, cli *clientv3.Client, key string, rev int64, accept func([]byte) (T, bool)) (T, bool, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range cli.Watch(wctx, key, clientv3.WithRev(rev)) {
		if resp.Err() != nil {
			break
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypePut {
				if v, ok := accept(ev.Kv.Value); ok {
					return v, true, nil
				}
			}
		}
	}
	var zero T
	return zero, false, ctx.Err()
}

// waitChange blocks until a key under dir changes after revision rev, or
// ctx ends (its error is returned).
func (c *Conn) waitChange(ctx context.Context, dir string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	select {
	case <-c.cli.Watch(wctx, dir, clientv3.WithPrefix(), clientv3.WithRev(rev+1)):
	case <-ctx.Done():
	}
	return ctx.Err()
}
