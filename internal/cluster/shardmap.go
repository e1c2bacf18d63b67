package cluster

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
)

// PublishShardMap validates m and stores it under <prefix>/shardmap,
// replacing any earlier map.
func PublishShardMap(ctx context.Context, cli *clientv3.Client, prefix string, m *ams.ShardMap) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("cluster: publish shard map: %w", err)
	}
	b, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("cluster: publish shard map: %w", err)
	}
	if _, err := cli.Put(ctx, ShardMapKey(prefix), string(b)); err != nil {
		return fmt.Errorf("cluster: publish shard map: %w", err)
	}
	return nil
}

// GetShardMap returns the published shard map. It fails with ErrNoShardMap
// when none is published, and with ams.ErrBadShardMap when the stored map is
// invalid.
func GetShardMap(ctx context.Context, cli *clientv3.Client, prefix string) (*ams.ShardMap, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	resp, err := cli.Get(ctx, ShardMapKey(prefix))
	if err != nil {
		return nil, fmt.Errorf("cluster: get shard map: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w under %s", ErrNoShardMap, prefix)
	}
	m, err := ams.UnmarshalShardMap(resp.Kvs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("cluster: get shard map: %w", err)
	}
	return m, nil
}

// WaitShardMap blocks until a valid shard map is published under prefix and
// returns it. An invalid map is skipped (the wait goes on); the error
// returned when ctx ends mentions it.
func WaitShardMap(ctx context.Context, cli *clientv3.Client, prefix string) (*ams.ShardMap, error) {
	return WaitShardMapVersion(ctx, cli, prefix, 0)
}

// WaitShardMapVersion is WaitShardMap for a map whose Version is at least
// minVersion: a worker that learns of a restore waits for the new map with it.
func WaitShardMapVersion(ctx context.Context, cli *clientv3.Client, prefix string, minVersion uint64) (*ams.ShardMap, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	var last error // why the last map seen was not accepted
	m, err := waitFor(ctx, cli, ShardMapKey(prefix), func(b []byte) (*ams.ShardMap, bool) {
		m, err := ams.UnmarshalShardMap(b)
		switch {
		case err != nil:
			last = err
		case m.Version < minVersion:
			last = fmt.Errorf("cluster: shard map version %d < %d", m.Version, minVersion)
		default:
			return m, true
		}
		return nil, false
	})
	if err != nil {
		if last != nil {
			return nil, fmt.Errorf("cluster: wait shard map: %w (last map seen: %v)", err, last)
		}
		return nil, fmt.Errorf("cluster: wait shard map: %w", err)
	}
	return m, nil
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
