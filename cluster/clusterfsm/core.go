package clusterfsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Core is the cluster state machine. It does no I/O, reads no clock and
// starts no goroutine: the driver feeds it events with Step and carries
// out the returned actions. It is not safe for concurrent use.
type Core struct {
	opts  Options
	state State
	now   time.Time // latest Tick

	members map[string]Member // live members by "kind/id"

	// slots[i] is the shard of slot i of the current map; nil while
	// FORMING. A slot is filled when its shard is live.
	slots []string
	// restored[i]: slot i reported the current restore attempt done.
	restored []bool

	good     []SnapshotID // good snapshots, ascending, at most opts.Keep and pinned
	lastSnap SnapshotID   // highest id handed out
	pending  SnapshotID   // snapshot in progress (TakeSnapshot not yet answered)
	aborted  bool         // AbortSnapshot was sent for pending
	// pinned is the pinned snapshot (0: none), kept in good beyond
	// opts.Keep while it is good; pendingPin: pending is to be pinned.
	pinned     SnapshotID
	pendingPin bool
	// rollingBack: the restore in progress is a rollback's (to pinned).
	rollingBack bool
	// lastExp is the highest export id handed out, expPending the export
	// in progress (TakeExport not yet answered), expAborted whether
	// AbortExport was sent for it, expMark when the last periodic export
	// was due. A snapshot and an export never run at once (busy).
	lastExp, expPending ExportID
	expAborted          bool
	expMark             time.Time
	// snapMark is when the last snapshot started or serving began; the
	// zero time means "at the next tick".
	snapMark time.Time
	// redeal: a worker joined or left gracefully during a snapshot; deal
	// the data anew when it is done.
	redeal bool
	// queue holds the requests that came during a cut, until CutSettled
	// (queue.go).
	queue queue

	// model: there is a model to lose, so no good snapshot left means
	// FAILED: the cluster served, was adopted, or started with snapshots
	// (of an earlier run). Without one a lost shard costs nothing: the
	// cluster is begun again, empty.
	model bool

	// adopt is Options.Adopt until the first tick decides on it, then nil.
	adopt *Adopted
	// dealt is adopt.Workers, sorted, less those that left gracefully
	// (adopt.Left, or a graceful leave since).
	dealt []string
	// adoptRedeal: a dealt worker left gracefully; deal the data anew.
	adoptRedeal bool
	// adoptLost says why the adopted state is lost, if a mapped shard or
	// a dealt worker was lost before the first tick; else "".
	adoptLost string

	// away holds the members waited for (Options.RejoinWait), by
	// "kind/id", with the life that may come back: while it is not empty
	// the cluster is DEGRADED, nothing is restored, and awaySince is when
	// the wait began.
	away      map[string]string
	awaySince time.Time
}

// New returns a Core in state FORMING, or an error wrapping ErrBadOptions.
// It keeps no slice of opts.
func New(opts Options) (*Core, error) {
	opts.Snapshots = slices.Clone(opts.Snapshots)
	if opts.Adopt != nil {
		a := *opts.Adopt
		a.Shards, a.Workers, a.Left = slices.Clone(a.Shards), slices.Clone(a.Workers), slices.Clone(a.Left)
		a.Lives = maps.Clone(a.Lives)
		opts.Adopt = &a
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	good := slices.Clone(opts.Snapshots)
	slices.Sort(good)
	good = slices.Compact(good)
	c := &Core{
		opts:     opts,
		state:    State{Phase: Forming, Version: opts.LastVersion},
		members:  make(map[string]Member),
		away:     make(map[string]string),
		good:     good,
		lastSnap: opts.LastSnapshot,
		adopt:    opts.Adopt,
		model:    opts.Adopt != nil || len(good) > 0,
	}
	if slices.Contains(good, opts.Pinned) {
		c.pinned = opts.Pinned
	}
	c.prune()
	if a := c.adopt; a != nil {
		for _, id := range a.Workers {
			if slices.Contains(a.Left, id) {
				c.adoptRedeal = true
				continue
			}
			c.dealt = append(c.dealt, id)
		}
		slices.SortFunc(c.dealt, CompareIDs)
	}
	return c, nil
}

// State returns the current state.
func (c *Core) State() State { return c.state }

// Now returns the time of the latest Tick (the zero time before any).
func (c *Core) Now() time.Time { return c.now }

// Slots returns the shard of each slot of the current map (nil while
// FORMING, even when adopting). A slot whose shard is not live is waiting for a replacement.
func (c *Core) Slots() []string { return slices.Clone(c.slots) }

// Away returns the members waited for (Options.RejoinWait), by
// "kind/id", with the lives that may come back; while there are any the
// cluster is DEGRADED with its state intact but for them.
func (c *Core) Away() map[string]string { return maps.Clone(c.away) }

// Snapshots returns the good snapshots the core would fall back to,
// oldest first.
func (c *Core) Snapshots() []SnapshotID { return slices.Clone(c.good) }

// Pending returns the snapshot in progress, or zero.
func (c *Core) Pending() SnapshotID { return c.pending }

// Pinned returns the pinned snapshot while it is good, or 0.
func (c *Core) Pinned() SnapshotID { return c.pinned }

// Members returns the live members of kind ("" for every kind), by kind
// and then ID (digit runs compared as numbers: ams-2 before ams-10).
func (c *Core) Members(kind Kind) []Member {
	var out []Member
	for _, m := range c.members {
		if kind == "" || m.Kind == kind {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Member) int {
		if a.Kind != b.Kind {
			return strings.Compare(string(a.Kind), string(b.Kind))
		}
		return CompareIDs(a.ID, b.ID)
	})
	return out
}

func (c *Core) ids(kind Kind) []string {
	ms := c.Members(kind)
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func (c *Core) live(kind Kind, id string) bool {
	_, ok := c.members[string(kind)+"/"+id]
	return ok
}

// Step applies one event and returns what the driver must do.
func (c *Core) Step(ev Event) Output {
	var o Output
	switch t := ev.(type) {
	case Tick:
		c.tick(&o, t.Now)
		return o
	case CutSettled: // also when FAILED: the queued requests are answered
		c.settle(&o)
		return o
	}
	if c.state.Phase == Failed {
		o.Rejected = fmt.Errorf("%w: %v ignored", ErrFailed, ev)
		return o
	}
	switch ev := ev.(type) {
	case Joined:
		c.join(&o, ev.Member)
	case Left:
		c.leave(&o, ev)
	case SnapshotRequested:
		c.requestSnapshot(&o, ev.Pin)
	case RollbackRequested:
		c.rollback(&o)
	case ExportRequested:
		c.requestExport(&o)
	case ExportDone:
		c.exportDone(&o, ev)
	case SnapshotDone:
		c.snapshotDone(&o, ev)
	case RestoreDone:
		c.restoreDone(&o, ev)
	default:
		o.Rejected = fmt.Errorf("%w: unknown event type %T", ErrBadEvent, ev)
	}
	return o
}

func (c *Core) emit(o *Output, a Action) { o.Actions = append(o.Actions, a) }

func (c *Core) setState(o *Output, to State, cause string) {
	c.emit(o, Transition{From: c.state, To: to, Cause: cause})
	c.state = to
}

func (c *Core) tick(o *Output, now time.Time) {
	if now.Before(c.now) {
		o.Rejected = fmt.Errorf("%w: tick at %v is before %v", ErrStale, now, c.now)
		return
	}
	c.now = now
	if c.adopt != nil {
		c.decideAdoption(o)
		return
	}
	if len(c.away) > 0 && now.Sub(c.awaySince) >= c.opts.RejoinWait {
		c.awayLost(o, fmt.Sprintf("%s not back within %v", strings.Join(slices.Sorted(maps.Keys(c.away)), ", "), c.opts.RejoinWait))
		return
	}
	if c.state.Phase != Serving || c.busy() {
		return
	}
	if c.opts.SnapshotEvery > 0 {
		if c.snapMark.IsZero() {
			c.snapMark = now
		} else if now.Sub(c.snapMark) >= c.opts.SnapshotEvery {
			c.takeSnapshot(o, false)
			return
		}
	}
	if c.opts.ExportEvery > 0 {
		if c.expMark.IsZero() {
			c.expMark = now
		} else if now.Sub(c.expMark) >= c.opts.ExportEvery {
			c.takeExport(o)
		}
	}
}

// busy reports whether a snapshot or an export is in progress: each
// pauses the workers, so they take turns.
func (c *Core) busy() bool { return c.pending != 0 || c.expPending != 0 }

func (c *Core) join(o *Output, m Member) {
	if err := m.validate(); err != nil {
		o.Rejected = err
		return
	}
	if life, ok := c.away[m.key()]; ok {
		delete(c.away, m.key())
		c.members[m.key()] = m
		if m.Life != life {
			c.awayLost(o, fmt.Sprintf("%v came back as another life", m))
			return
		}
		if len(c.away) == 0 {
			c.rejoined(o, "rejoined "+m.String())
		}
		return
	}
	if old, ok := c.members[m.key()]; ok {
		if old == m {
			o.Rejected = fmt.Errorf("%w: %v already joined", ErrStale, m)
			return
		}
		if c.opts.RejoinWait > 0 && m.Life != "" && old.Life == m.Life {
			// Registered again in the same life (its lease expired
			// unseen): its state is intact, nothing was lost.
			c.members[m.key()] = m
			return
		}
		// A new life under the same id: the old one is gone, though the
		// driver did not see it go. The new one is live first, so that a
		// restarted shard takes its own slot back.
		c.members[m.key()] = m
		c.lost(o, old, false, fmt.Sprintf("%v replaced by %v", old, m))
		if c.state.Phase == Failed {
			return
		}
	}
	c.members[m.key()] = m
	cause := "joined " + m.String()
	switch {
	case c.state.Phase == Forming && c.adopt == nil && m.Kind != KindScheduler:
		c.tryForm(o, cause)
	case c.state.Phase == Degraded && m.Kind == KindAMS && len(c.away) == 0: // else a spare waits
		c.tryRestore(o, cause)
	case c.state.Phase == Stopped && m.Kind == KindAMS:
		c.restart(o, cause)
	case c.state.Phase == Serving && m.Kind == KindWorker:
		c.dealAnew(o)
	}
}

func (c *Core) leave(o *Output, ev Left) {
	m := ev.Member
	if err := m.validate(); err != nil {
		o.Rejected = err
		return
	}
	if cur, ok := c.members[m.key()]; !ok || cur != m {
		o.Rejected = fmt.Errorf("%w: %v is not a live member", ErrStale, m)
		return
	}
	delete(c.members, m.key())
	c.lost(o, m, ev.Graceful, ev.String())
}

// lost handles the loss of m, already removed from the live members.
func (c *Core) lost(o *Output, m Member, graceful bool, cause string) {
	if c.adopt != nil {
		c.adoptionLoss(m, graceful, cause)
		return
	}
	if !graceful && c.mayRejoin(m) {
		if c.state.Phase == Serving {
			c.degrade(o, cause)
			c.awaySince = c.now
		}
		c.away[m.key()] = m.Life
		return
	}
	if len(c.away) > 0 && (m.Kind == KindWorker && !graceful || m.Kind == KindAMS && slices.Contains(c.slots, m.ID)) {
		c.awayLost(o, cause) // state lost while waiting: restore now
		return
	}
	switch m.Kind {
	case KindAMS:
		if !slices.Contains(c.slots, m.ID) {
			return // forming, or a spare: no rows lost
		}
		if graceful && len(c.ids(KindWorker)) == 0 && (c.state.Phase == Serving || c.state.Phase == Restoring) {
			c.stop(o, cause+" with no worker live")
			c.restart(o, cause) // at once if a spare fills the slot
			return
		}
		switch c.state.Phase {
		case Serving:
			c.degrade(o, cause)
			c.tryRestore(o, cause)
		case Restoring:
			// The attempt is abandoned; the next one, once the slot is
			// filled again, runs at a new version so that late replies of
			// this one are stale.
			c.setState(o, State{Phase: Degraded, Version: c.state.Version}, cause)
			c.tryRestore(o, cause)
		}
		// Degraded: one more slot to fill; nothing else changes.
	case KindWorker:
		if c.state.Phase != Serving {
			return // forming, or paused until the next resume anyway
		}
		if graceful {
			c.dealAnew(o)
			return
		}
		// Its pushes may be half applied and its positions are not at a
		// batch boundary: the whole cluster rolls back, as in XDL.
		c.degrade(o, cause)
		c.tryRestore(o, cause)
	}
}

// mayRejoin reports whether m, whose lease expired, is waited for rather
// than lost: its life is known, the wait is on, and it is a mapped shard
// or a worker of a cluster serving (or already waiting).
func (c *Core) mayRejoin(m Member) bool {
	if c.opts.RejoinWait <= 0 || m.Life == "" {
		return false
	}
	if cur, ok := c.members[m.key()]; ok && cur.Life != m.Life {
		return false // replaced by another life: dead
	}
	if c.state.Phase != Serving && !(c.state.Phase == Degraded && len(c.away) > 0) {
		return false
	}
	return m.Kind == KindWorker || m.Kind == KindAMS && slices.Contains(c.slots, m.ID)
}

// awayLost ends the wait for the away members: state was lost after all
// (a member came back as another life, another was lost, or the wait ran
// out). The cluster, DEGRADED, restores as after any loss.
func (c *Core) awayLost(o *Output, cause string) {
	clear(c.away)
	c.awaySince = time.Time{}
	c.tryRestore(o, cause)
}

// rejoined serves on at the version the cluster was DEGRADED at: every
// member waited for came back in its life, with its state, and nothing
// else was lost. The map is the same: deal the data among the live
// workers and resume.
func (c *Core) rejoined(o *Output, cause string) {
	c.awaySince = time.Time{}
	v := c.state.Version
	c.setState(o, State{Phase: Serving, Version: v}, cause)
	c.model = true
	c.redeal = false
	c.snapMark = c.now
	c.emit(o, AssignReaders{Version: v, Workers: c.ids(KindWorker)})
	c.emit(o, Resume{Version: v})
}

// degrade leaves SERVING: abort the snapshot in progress, pause workers.
func (c *Core) degrade(o *Output, cause string) { c.leaveServing(o, Degraded, cause) }

// stop enters STOPPED: a shard of the map left on purpose while no worker
// was live, an orderly end (see Stopped). A restore in progress is
// abandoned (its late answers are stale); workers that join meanwhile
// stay paused until the cluster forms again.
func (c *Core) stop(o *Output, cause string) {
	c.restored = nil
	c.leaveServing(o, Stopped, cause)
}

// leaveServing enters phase (DEGRADED or STOPPED) at the current version:
// abort the snapshot or export in progress, pause workers.
func (c *Core) leaveServing(o *Output, phase Phase, cause string) {
	v := c.state.Version
	c.setState(o, State{Phase: phase, Version: v}, cause)
	if c.pending != 0 && !c.aborted {
		c.emit(o, AbortSnapshot{ID: c.pending})
		c.aborted = true
	}
	if c.expPending != 0 && !c.expAborted {
		c.emit(o, AbortExport{ID: c.expPending})
		c.expAborted = true
	}
	c.emit(o, PauseWorkers{Version: v})
}

// tryForm forms the cluster once enough shards and workers are live.
func (c *Core) tryForm(o *Output, cause string) {
	shards := c.ids(KindAMS)
	if len(shards) < c.opts.Shards || len(c.ids(KindWorker)) < c.opts.Workers {
		return
	}
	c.slots = shards[:c.opts.Shards:c.opts.Shards]
	c.startRestore(o, cause) // the newest good snapshot, or none: begin empty
}

// tryRestore fills the slots whose shard is gone with spare shards and
// starts a restore once every slot is filled.
func (c *Core) tryRestore(o *Output, cause string) {
	if len(c.good) == 0 && c.pending == 0 && c.model {
		c.fail(o, cause)
		return
	}
	if !c.fillSlots() {
		return
	}
	if len(c.good) == 0 && c.model {
		return // the aborted snapshot may yet have committed: wait for it
	}
	c.startRestore(o, cause)
}

// restart forms a STOPPED cluster again once every slot holds a live
// shard, as a restarted scheduler would: it restores the newest good
// snapshot or, with none, begins a new model empty (the rows went with
// the shards that left on purpose). An aborted snapshot still unanswered
// is waited for, since it may have committed.
func (c *Core) restart(o *Output, cause string) {
	if !c.fillSlots() {
		return
	}
	if len(c.good) == 0 {
		if c.pending != 0 {
			return
		}
		c.model = false
	}
	c.startRestore(o, cause)
}

// fillSlots gives the slots whose shard is gone to spare shards (the
// lowest ids first) and reports whether every slot now holds a live
// shard.
func (c *Core) fillSlots() bool {
	var spares []string
	for _, id := range c.ids(KindAMS) {
		if !slices.Contains(c.slots, id) {
			spares = append(spares, id)
		}
	}
	for i, id := range c.slots {
		if c.live(KindAMS, id) {
			continue
		}
		if len(spares) == 0 {
			return false
		}
		c.slots[i], spares = spares[0], spares[1:]
	}
	return true
}

// fail gives up: state was lost and no snapshot is left to restore.
func (c *Core) fail(o *Output, cause string) { c.giveUp(o, ErrNoSnapshot, cause) }

func (c *Core) giveUp(o *Output, err error, cause string) {
	c.setState(o, State{Phase: Failed, Version: c.state.Version}, cause)
	c.emit(o, GiveUp{Err: err})
}

// startRestore orders every slot to restore the newest good snapshot at a
// new version or, with none (a cluster without a model), to begin the
// version empty (Restore of snapshot 0).
func (c *Core) startRestore(o *Output, cause string) {
	var s SnapshotID
	switch {
	case c.rollingBack && slices.Contains(c.good, c.pinned):
		s = c.pinned // a rollback interrupted by a loss goes on
	case len(c.good) > 0:
		s = c.good[len(c.good)-1]
	}
	c.restoreOf(o, s, cause)
}

// restoreOf orders every slot to restore snapshot s at a new version.
// From SERVING (a rollback) it pauses the workers first.
func (c *Core) restoreOf(o *Output, s SnapshotID, cause string) {
	v := c.state.Version
	if c.state.Phase == Serving {
		c.emit(o, PauseWorkers{Version: v})
	}
	v++
	c.setState(o, State{Phase: Restoring, Version: v, Snapshot: s}, cause)
	c.restored = make([]bool, len(c.slots))
	c.emit(o, PublishShardMap{Version: v, Shards: slices.Clone(c.slots)})
	c.emit(o, Restore{Snapshot: s, Version: v, Shards: slices.Clone(c.slots)})
}

// serve enters SERVING(v): publish the map when it is new, deal the data,
// resume the workers.
func (c *Core) serve(o *Output, v uint64, cause string) {
	fromRestore := c.state.Phase == Restoring
	c.setState(o, State{Phase: Serving, Version: v}, cause)
	if !fromRestore {
		c.emit(o, PublishShardMap{Version: v, Shards: slices.Clone(c.slots)})
	}
	c.model = true
	c.restored = nil
	c.redeal = false
	c.snapMark = c.now
	c.emit(o, AssignReaders{Version: v, Workers: c.ids(KindWorker)})
	c.emit(o, Resume{Version: v})
}

// dealAnew deals the data among the live workers without a rollback:
// pause at a batch boundary (positions stored on the AMS), deal, resume.
// During a snapshot or an export it waits for it to finish.
func (c *Core) dealAnew(o *Output) {
	if c.busy() {
		c.redeal = true
		return
	}
	v := c.state.Version
	c.redeal = false
	c.emit(o, PauseWorkers{Version: v})
	c.emit(o, AssignReaders{Version: v, Workers: c.ids(KindWorker)})
	c.emit(o, Resume{Version: v})
}

func (c *Core) takeSnapshot(o *Output, pin bool) {
	c.lastSnap++
	c.pending, c.aborted, c.pendingPin = c.lastSnap, false, pin
	c.snapMark = c.now
	c.emit(o, TakeSnapshot{ID: c.pending, Version: c.state.Version, Pin: pin})
}

// prune forgets the good snapshots beyond the newest opts.Keep, but the
// pinned one (kept on top of them, as snapshot.Prune keeps it).
func (c *Core) prune() {
	var keep []SnapshotID
	for i, id := range c.good {
		if id == c.pinned || i >= len(c.good)-c.opts.Keep {
			keep = append(keep, id)
		}
	}
	c.good = keep
}

// rollback restores the pinned snapshot at a new version, on request
// (RollbackRequested). Once every shard restored it the snapshots after
// it are forgotten; if it fails to restore, the newest good one is
// restored instead, as after any failed restore.
func (c *Core) rollback(o *Output) {
	switch {
	case !c.mayCut(o, RollbackRequest, false):
	case c.pinned == 0 || !slices.Contains(c.good, c.pinned):
		o.Rejected = ErrNoPinned
	default:
		c.emit(o, StartRollback{To: c.pinned})
		c.restoreOf(o, c.pinned, "rollback to pinned "+c.pinned.String()+" requested")
		c.rollingBack = true
	}
}

func (c *Core) requestSnapshot(o *Output, pin bool) {
	if c.mayCut(o, SnapshotRequest, pin) {
		c.takeSnapshot(o, pin)
	}
}

func (c *Core) takeExport(o *Output) {
	c.lastExp++
	c.expPending, c.expAborted = c.lastExp, false
	c.expMark = c.now
	c.emit(o, TakeExport{ID: c.expPending, Version: c.state.Version})
}

func (c *Core) requestExport(o *Output) {
	if c.mayCut(o, ExportRequest, false) {
		c.takeExport(o)
	}
}

// exportDone ends the export in progress; a new deal of the data that
// waited for it goes ahead.
func (c *Core) exportDone(o *Output, ev ExportDone) {
	if ev.ID == 0 || ev.ID != c.expPending {
		o.Rejected = fmt.Errorf("%w: export #%d is not in progress", ErrStale, ev.ID)
		return
	}
	c.expPending, c.expAborted = 0, false
	if c.state.Phase == Serving && c.redeal {
		c.dealAnew(o)
	}
}

func (c *Core) snapshotDone(o *Output, ev SnapshotDone) {
	if ev.ID == 0 {
		o.Rejected = fmt.Errorf("%w: snapshot id 0", ErrBadEvent)
		return
	}
	if ev.ID != c.pending {
		o.Rejected = fmt.Errorf("%w: %v is not in progress", ErrStale, ev.ID)
		return
	}
	c.pending, c.aborted = 0, false
	if ev.Err == nil {
		// Ids only grow, so appending keeps good sorted.
		c.good = append(c.good, ev.ID)
		if c.pendingPin {
			c.pinned = ev.ID
		}
		c.prune()
	}
	c.pendingPin = false
	switch {
	case c.state.Phase == Serving && c.redeal:
		c.dealAnew(o)
	case c.state.Phase == Degraded && len(c.away) == 0:
		c.tryRestore(o, ev.String())
	case c.state.Phase == Stopped:
		c.restart(o, ev.String())
	}
}

func (c *Core) restoreDone(o *Output, ev RestoreDone) {
	if ev.Shard == "" {
		o.Rejected = fmt.Errorf("%w: %v", ErrBadEvent, ev)
		return
	}
	i := slices.Index(c.slots, ev.Shard)
	if c.state.Phase != Restoring || ev.Version != c.state.Version || ev.Snapshot != c.state.Snapshot ||
		i < 0 || c.restored[i] {
		o.Rejected = fmt.Errorf("%w: %v", ErrStale, ev)
		return
	}
	begin := c.state.Snapshot == 0
	if ev.Err != nil && begin {
		// Emptying a shard cannot fail for its data: the shard is broken
		// or unreachable at the address it registered.
		c.giveUp(o, fmt.Errorf("%w: %w", ErrBegin, ev.Err), ev.String())
		return
	}
	if ev.Err != nil {
		// The snapshot is bad (the driver retries passing errors itself):
		// forget it and fall back to the previous one.
		c.good = slices.DeleteFunc(c.good, func(s SnapshotID) bool { return s == ev.Snapshot })
		if c.pinned == ev.Snapshot {
			c.pinned, c.rollingBack = 0, false
		}
		switch {
		case len(c.good) > 0:
			c.startRestore(o, ev.String())
		case c.pending != 0:
			c.setState(o, State{Phase: Degraded, Version: c.state.Version}, ev.String())
		default:
			c.fail(o, ev.String())
		}
		return
	}
	c.restored[i] = true
	if slices.Contains(c.restored, false) {
		return
	}
	if begin {
		c.serve(o, c.state.Version, "every shard began empty")
		if !c.opts.SkipInitialSnapshot {
			c.takeSnapshot(o, false)
		}
		return
	}
	if i := slices.Index(c.good, c.state.Snapshot); c.rollingBack && i >= 0 {
		c.good = c.good[:i+1] // the snapshots after it are a discarded future
	}
	c.rollingBack = false
	c.serve(o, c.state.Version, "every shard restored "+c.state.Snapshot.String())
}
