package clusterfsm

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// DefaultKeep is the default value of Options.Keep.
const DefaultKeep = 3

// Options configures a Core.
type Options struct {
	// Shards is the number N of AMS shards, the slots of the shard map.
	// The cluster forms once N shards are live and never changes N: a lost
	// shard's slot is filled by the restarted shard or by a spare. (To
	// change N, restart the scheduler with the new N: it forms and
	// restores the latest snapshot onto the new layout.) Required, 1 to
	// 65535.
	Shards int
	// Workers is the number of workers to wait for while FORMING. Workers
	// that join later get a share of the data then. The default value is 0
	// (form as soon as the shards are live).
	Workers int
	// SnapshotEvery is the period of snapshots while SERVING: one starts
	// at the first tick at least SnapshotEvery after the start of the
	// previous one, or after the cluster (re)started serving. The default
	// value is 0: no periodic snapshots, only requested ones.
	SnapshotEvery time.Duration
	// SkipInitialSnapshot turns off the snapshot taken as soon as a new
	// cluster serves. Without that snapshot, a failure before the first
	// periodic one leaves nothing to roll back to and the core gives up.
	// The default value is false (take it).
	SkipInitialSnapshot bool
	// Keep is how many of the newest good snapshots the core remembers as
	// fallbacks; set it to the K given to snapshot.Prune, since older ones
	// are gone. The default value is DefaultKeep (3).
	Keep int
	// Snapshots lists good snapshots already in the store (the driver
	// lists them, newest checked with snapshot.Latest). When there are any,
	// a forming cluster restores the newest instead of starting afresh:
	// this is how a restarted job or scheduler resumes. The default value
	// is none.
	Snapshots []SnapshotID
	// LastSnapshot is the highest snapshot id ever used in the store,
	// complete or not: new snapshots get ids above it and above every one
	// of Snapshots. The default value is the highest of Snapshots, or 0.
	LastSnapshot SnapshotID
	// LastVersion is the highest cluster version published before (read
	// back from etcd by a restarted scheduler); every version the core
	// issues is higher. The default value is 0 (the first version is 1).
	LastVersion uint64
}

// EnsureDefaults fills zero fields with their default values, and raises
// LastSnapshot to the highest of Snapshots.
func (o *Options) EnsureDefaults() {
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	for _, s := range o.Snapshots {
		o.LastSnapshot = max(o.LastSnapshot, s)
	}
}

// Validate reports every problem with the options at once. Call
// EnsureDefaults first (New does).
func (o *Options) Validate() error {
	var errs []error
	if o.Shards < 1 || o.Shards > 1<<16-1 {
		errs = append(errs, fmt.Errorf("%w: Shards %d is not in [1, 65535]", ErrBadOptions, o.Shards))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("%w: Workers %d is negative", ErrBadOptions, o.Workers))
	}
	if o.SnapshotEvery < 0 {
		errs = append(errs, fmt.Errorf("%w: SnapshotEvery %v is negative", ErrBadOptions, o.SnapshotEvery))
	}
	if o.Keep < 1 {
		errs = append(errs, fmt.Errorf("%w: Keep %d is below 1", ErrBadOptions, o.Keep))
	}
	if slices.Contains(o.Snapshots, 0) {
		errs = append(errs, fmt.Errorf("%w: Snapshots holds the zero id", ErrBadOptions))
	}
	// Below 2^63, so that ids and versions can grow by one per second
	// for longer than anything runs.
	if o.LastSnapshot >= 1<<63 {
		errs = append(errs, fmt.Errorf("%w: LastSnapshot %v is not below 2^63", ErrBadOptions, o.LastSnapshot))
	}
	if o.LastVersion >= 1<<63 {
		errs = append(errs, fmt.Errorf("%w: LastVersion %d is not below 2^63", ErrBadOptions, o.LastVersion))
	}
	return errors.Join(errs...)
}
