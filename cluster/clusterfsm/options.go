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
	// ExportEvery is the period of model exports while SERVING, counted
	// like SnapshotEvery; a periodic snapshot that falls due at the same
	// tick goes first. The default value is 0: no periodic exports, only
	// requested ones.
	ExportEvery time.Duration
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
	// Pinned is the pinned snapshot among Snapshots (the newest whose
	// manifest says it is pinned), kept beyond Keep and the target of
	// RollbackRequested. The default value is 0: none.
	Pinned SnapshotID
	// LastSnapshot is the highest snapshot id ever used in the store,
	// complete or not: new snapshots get ids above it and above every one
	// of Snapshots. The default value is the highest of Snapshots, or 0.
	LastSnapshot SnapshotID
	// LastVersion is the highest cluster version published before (read
	// back from etcd by a restarted scheduler); every version the core
	// issues is higher, though an adopted cluster serves on at
	// Adopt.Version. The default value is 0 (the first version is 1),
	// raised to Adopt.Version when adopting; above it is an error.
	LastVersion uint64
	// Adopt, when not nil, is the cluster a previous leader left behind:
	// a scheduler that takes over (a standby elected, or a lone scheduler
	// restarted) adopts it instead of forming a new one. The core then
	// waits in FORMING for the first Tick, which ends the driver's initial
	// sync of the membership, and decides at that Tick: if the cluster was
	// serving and nothing of it was lost, it serves on at Adopt.Version
	// without publishing a map, restoring or snapshotting; otherwise its
	// state is lost and it is restored (see Adopted). Workers is not
	// waited for when adopting. The default value is nil: form a new
	// cluster.
	Adopt *Adopted
	// RejoinWait is how long the core waits, after a mapped shard or a
	// worker lost its lease while SERVING (Left, not graceful), for the
	// same life (Member.Life) to register again: the cluster is DEGRADED
	// meanwhile, workers paused, and nothing is restored. When every such
	// member is back in its life, and nothing else was lost, the cluster
	// serves on at the same version (Resume): a member cut off from etcd
	// for a while (an etcd outage, a network cut) costs a pause, not a
	// restore. A member back as another life, another loss, or the wait
	// running out restores as after any loss. An adopted cluster waits
	// likewise for the members that Adopted.Lives names. The default
	// value is 0: no wait, every lost lease restores.
	RejoinWait time.Duration
}

// Adopted describes the cluster a previous leader left behind, as the
// driver reads it back from etcd: the published shard map, the last
// recorded state and the data deal.
//
// At the first Tick the core serves on at Version (SERVING(Version),
// then Resume(Version), or a new deal at Version when the live workers
// are not the dealt ones) only if all of these hold:
//
//   - Serving is true;
//   - every shard of Shards is live, under an Incarnation not above
//     MaxIncarnation (when set), and none of them was lost (lease
//     expired, left, or replaced by a new life) since the core started;
//   - every worker of Workers that did not leave gracefully (listed in
//     Left, or a graceful Left event since the core started) is live,
//     and none of them died (lease expired, or replaced by a new life)
//     since the core started.
//
// Otherwise the state at Version is lost: the core enters
// DEGRADED(Version), pauses the workers, fills the slots of Shards (the
// same id live, or a spare) and restores the newest good snapshot at a
// version above Version, as after any loss; with no good snapshot it
// gives up.
type Adopted struct {
	// Version is the version of the published shard map, at least 1.
	Version uint64
	// Shards is the shard of each slot of the map at Version, in slot
	// order: Options.Shards distinct non-empty ids. (A scheduler restarted
	// with another N does not adopt: it forms and restores the newest
	// snapshot onto the new layout.)
	Shards []string
	// Serving says the state at Version is intact as the previous leader
	// last recorded it: SERVING(Version), or DEGRADED(Version) waiting only
	// for members of Lives to come back. When false (it was DEGRADED or RESTORING, or the
	// driver does not know), the state at Version is taken as lost and
	// the newest good snapshot is restored.
	Serving bool
	// Stopped says the previous leader last recorded STOPPED(Version):
	// the shards were stopped on purpose after the job. The core then
	// enters STOPPED(Version) at the first Tick and forms anew once every
	// slot holds a live shard (see Stopped), instead of taking the state
	// as lost. Not with Serving. The default value is false.
	Stopped bool
	// Workers lists the workers the data was last dealt among at Version
	// (the assignments in etcd). A listed worker that is not live at the
	// first Tick, and did not leave gracefully, died while no leader
	// watched: its pushes may be half applied, so the cluster rolls back
	// as when a worker dies while SERVING. When the live workers are not
	// exactly the listed ones, or one of them left gracefully, the data
	// is dealt anew at Version (pause, deal, resume: no rollback).
	// Passing none when the deal is unknown is safe: the data is then
	// dealt anew whenever workers are live, and no death is detected. A
	// worker that died and came back under the same id while no leader
	// watched is not detected either. Distinct non-empty ids; the
	// default value is none.
	Workers []string
	// Left lists the workers whose last life left gracefully, as the
	// left markers in etcd say (registering deletes a stale one): their
	// reader positions are stored, so their share is dealt anew without a
	// rollback. Ids not in Workers are ignored, so the driver may pass
	// every worker left marker. The default value is none.
	Left []string
	// MaxIncarnation, when not zero, is the highest Incarnation a live
	// shard of Shards may have to count as the life that holds its rows:
	// a higher one registered after the map was published, so it
	// restarted and holds no rows. The driver passes the etcd mod
	// revision of the shard map key (member Incarnations being create
	// revisions). The default value is 0: any incarnation counts.
	MaxIncarnation int64
	// Lives are the lives (Member.Life) of the shards of Shards and of
	// the workers of Workers, by "kind/id", as the previous leader
	// recorded them. A member live in its recorded life holds its state,
	// whatever its Incarnation; one live in another life does not; one
	// not live is waited for (Options.RejoinWait) instead of lost. The
	// default value is none: Incarnations decide, as above.
	Lives map[string]string
}

// EnsureDefaults fills zero fields with their default values, raises
// LastSnapshot to the highest of Snapshots and LastVersion to
// Adopt.Version.
func (o *Options) EnsureDefaults() {
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	for _, s := range o.Snapshots {
		o.LastSnapshot = max(o.LastSnapshot, s)
	}
	if o.Adopt != nil {
		o.LastVersion = max(o.LastVersion, o.Adopt.Version)
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
	if o.ExportEvery < 0 {
		errs = append(errs, fmt.Errorf("%w: ExportEvery %v is negative", ErrBadOptions, o.ExportEvery))
	}
	if o.SnapshotEvery < 0 {
		errs = append(errs, fmt.Errorf("%w: SnapshotEvery %v is negative", ErrBadOptions, o.SnapshotEvery))
	}
	if o.Keep < 1 {
		errs = append(errs, fmt.Errorf("%w: Keep %d is below 1", ErrBadOptions, o.Keep))
	}
	if o.RejoinWait < 0 {
		errs = append(errs, fmt.Errorf("%w: RejoinWait %v is negative", ErrBadOptions, o.RejoinWait))
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
	if o.Adopt != nil {
		errs = append(errs, o.validateAdopt()...)
	}
	return errors.Join(errs...)
}

func (o *Options) validateAdopt() []error {
	a := o.Adopt
	var errs []error
	if a.Version == 0 {
		errs = append(errs, fmt.Errorf("%w: Adopt.Version is 0", ErrBadOptions))
	}
	if a.Version >= 1<<63 {
		errs = append(errs, fmt.Errorf("%w: Adopt.Version %d is not below 2^63", ErrBadOptions, a.Version))
	}
	// A newer version than the adopted map's was issued: the map is not
	// the cluster's, and serving it would take the version back.
	if o.LastVersion > a.Version {
		errs = append(errs, fmt.Errorf("%w: LastVersion %d is above Adopt.Version %d", ErrBadOptions, o.LastVersion, a.Version))
	}
	if len(a.Shards) != o.Shards {
		errs = append(errs, fmt.Errorf("%w: Adopt.Shards lists %d shards, not Shards %d", ErrBadOptions, len(a.Shards), o.Shards))
	}
	errs = append(errs, distinctIDs("Adopt.Shards", a.Shards)...)
	errs = append(errs, distinctIDs("Adopt.Workers", a.Workers)...)
	if slices.Contains(a.Left, "") {
		errs = append(errs, fmt.Errorf("%w: Adopt.Left holds an empty id", ErrBadOptions))
	}
	if a.Serving && a.Stopped {
		errs = append(errs, fmt.Errorf("%w: Adopt.Serving and Adopt.Stopped are both set", ErrBadOptions))
	}
	if a.MaxIncarnation < 0 {
		errs = append(errs, fmt.Errorf("%w: Adopt.MaxIncarnation %d is negative", ErrBadOptions, a.MaxIncarnation))
	}
	return errs
}

// distinctIDs reports, once each, an empty id and every repeated id of
// field.
func distinctIDs(field string, ids []string) []error {
	var errs []error
	empty := false
	seen := make(map[string]int, len(ids))
	for _, id := range ids {
		if id == "" {
			empty = true
			continue
		}
		if seen[id]++; seen[id] == 2 {
			errs = append(errs, fmt.Errorf("%w: %s lists %q more than once", ErrBadOptions, field, id))
		}
	}
	if empty {
		errs = append(errs, fmt.Errorf("%w: %s holds an empty id", ErrBadOptions, field))
	}
	return errs
}
