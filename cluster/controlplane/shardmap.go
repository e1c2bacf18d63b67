package controlplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams"
)

// The shard map protocol: the leading scheduler publishes the versioned
// map of partitions to shards (PublishShardMap) whenever the cluster
// forms or is restored; workers wait for a map (WaitShardMap), and after a
// restore for one of the new version (WaitShardMapVersion).

// ErrNoShardMap is returned (wrapped) by GetShardMap when none has been
// published.
var ErrNoShardMap = errors.New("controlplane: no shard map")

// PublishShardMap validates m and stores it, replacing any earlier map.
func (c *Conn) PublishShardMap(ctx context.Context, m *ams.ShardMap) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("controlplane: publish shard map: %w", err)
	}
	b, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("controlplane: publish shard map: %w", err)
	}
	if _, err := c.cli.Put(ctx, ShardMapKey(c.prefix), string(b)); err != nil {
		return fmt.Errorf("controlplane: publish shard map: %w", err)
	}
	return nil
}

// GetShardMap returns the published shard map. It fails with ErrNoShardMap
// when none is published, and with ams.ErrBadShardMap when the stored map is
// invalid.
func (c *Conn) GetShardMap(ctx context.Context) (*ams.ShardMap, error) {
	m, _, err := c.LatestShardMap(ctx)
	if err == nil && m == nil {
		err = fmt.Errorf("%w under %s", ErrNoShardMap, c.prefix)
	}
	return m, err
}

// LatestShardMap returns the published shard map and the etcd revision
// that wrote it, or nil and 0 when none is published. A new leading
// scheduler adopts a cluster from it: the revision orders the shards'
// incarnations.
func (c *Conn) LatestShardMap(ctx context.Context) (*ams.ShardMap, int64, error) {
	resp, err := c.cli.Get(ctx, ShardMapKey(c.prefix))
	if err != nil {
		return nil, 0, fmt.Errorf("controlplane: get shard map: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	m, err := ams.UnmarshalShardMap(resp.Kvs[0].Value)
	if err != nil {
		return nil, 0, fmt.Errorf("controlplane: get shard map: %w", err)
	}
	return m, resp.Kvs[0].ModRevision, nil
}

// WaitShardMap blocks until a valid shard map is published and returns it.
// An invalid map is skipped (the wait goes on); the error returned when ctx
// ends mentions it.
func (c *Conn) WaitShardMap(ctx context.Context) (*ams.ShardMap, error) {
	return c.WaitShardMapVersion(ctx, 0)
}

// WaitServing waits until the cluster serves a version and returns that
// version's shard map: a map is published before its shards are begun
// (a new cluster) or restored, and requests at its version fail until
// then. A failed cluster's resume is returned with ErrClusterFailed.
func (c *Conn) WaitServing(ctx context.Context) (*ams.ShardMap, error) {
	sm, err := c.WaitShardMap(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.WaitRestored(ctx, sm.Version-1)
	if err != nil {
		return nil, err
	}
	if r.Version == sm.Version {
		return sm, nil
	}
	return c.WaitShardMapVersion(ctx, r.Version)
}

// WaitShardMapVersion is WaitShardMap for a map whose Version is at least
// minVersion: a worker that learns of a restore waits for the new map with it.
func (c *Conn) WaitShardMapVersion(ctx context.Context, minVersion uint64) (*ams.ShardMap, error) {
	var last error // why the last map seen was not accepted
	m, err := waitFor(ctx, c.cli, ShardMapKey(c.prefix), func(b []byte) (*ams.ShardMap, bool) {
		m, err := ams.UnmarshalShardMap(b)
		switch {
		case err != nil:
			last = err
		case m.Version < minVersion:
			last = fmt.Errorf("controlplane: shard map version %d < %d", m.Version, minVersion)
		default:
			return m, true
		}
		return nil, false
	})
	if err != nil {
		if last != nil {
			return nil, fmt.Errorf("controlplane: wait shard map: %w (last map seen: %v)", err, last)
		}
		return nil, fmt.Errorf("controlplane: wait shard map: %w", err)
	}
	return m, nil
}
