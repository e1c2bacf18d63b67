package clusterfsm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrBadOptions is returned (wrapped) by Options.Validate and New.
	ErrBadOptions = errors.New("clusterfsm: bad options")
	// ErrBadEvent is the Output.Rejected cause of a malformed event: an
	// unknown kind, an empty id, a zero snapshot id, an unknown event type.
	ErrBadEvent = errors.New("clusterfsm: bad event")
	// ErrStale is the Output.Rejected cause of an event that no longer
	// means anything: a leave of a member that is not live (or of another
	// incarnation), a replayed join, a SnapshotDone for a snapshot that is
	// not in progress, a RestoreDone of another attempt, a tick older than
	// the last one.
	ErrStale = errors.New("clusterfsm: stale event")
	// ErrNotServing is the Output.Rejected (or Refused.Err) cause of a
	// snapshot, a rollback or an export requested while the cluster is
	// not SERVING.
	ErrNotServing = errors.New("clusterfsm: cluster is not serving")
	// ErrNoPinned is the Output.Rejected cause of a rollback requested
	// while no pinned snapshot is among the good ones.
	ErrNoPinned = errors.New("clusterfsm: no pinned snapshot to roll back to")
	// ErrFailed is the Output.Rejected cause of every event (ticks aside)
	// after the core gave up.
	ErrFailed = errors.New("clusterfsm: cluster has failed")
	// ErrNoSnapshot is carried by GiveUp when the cluster lost state and no
	// good snapshot is left to roll back to.
	ErrNoSnapshot = errors.New("clusterfsm: no good snapshot to restore")
	// ErrBegin is carried (wrapped) by GiveUp when a shard failed to begin
	// a new cluster's version empty: it is broken, or unreachable at the
	// address it registered.
	ErrBegin = errors.New("clusterfsm: a shard failed to begin the new cluster")
)

// Kind is a member's kind. The values equal package membership's KindAMS,
// KindWorker and KindScheduler, so a driver converts with Kind(m.Kind).
type Kind string

// Member kinds.
const (
	KindAMS       Kind = "ams"
	KindWorker    Kind = "worker"
	KindScheduler Kind = "scheduler"
)

func (k Kind) valid() bool { return k == KindAMS || k == KindWorker || k == KindScheduler }

// Member names one incarnation of a process.
type Member struct {
	// Kind is KindAMS, KindWorker or KindScheduler.
	Kind Kind
	// ID is unique among live members of the same kind; a restarted process
	// usually comes back under the same ID.
	ID string
	// Incarnation tells apart the lives of one ID. The driver uses the etcd
	// create revision of the member key; any value works as long as a new
	// life gets a new one. A Left must carry the incarnation of the live
	// member, or it is stale.
	Incarnation int64
	// Life tells apart the processes of one ID, where Incarnation tells
	// apart registrations: a process whose lease expired (etcd out of
	// reach for longer than the TTL) registers again, a new incarnation of
	// the same life, with its state (a shard's rows) intact; a restarted
	// process is a new life. The driver uses the process's PID and start
	// time. Empty: unknown, every registration counts as a new life (see
	// Options.RejoinWait).
	Life string
}

// String returns "kind/id", with "#incarnation" when it is not zero and
// "@life" when it is set.
func (m Member) String() string {
	s := string(m.Kind) + "/" + m.ID
	if m.Incarnation != 0 {
		s += "#" + strconv.FormatInt(m.Incarnation, 10)
	}
	if m.Life != "" {
		s += "@" + m.Life
	}
	return s
}

func (m Member) key() string { return string(m.Kind) + "/" + m.ID }

func (m Member) validate() error {
	if !m.Kind.valid() {
		return fmt.Errorf("%w: unknown member kind %q", ErrBadEvent, m.Kind)
	}
	if m.ID == "" {
		return fmt.Errorf("%w: empty %s id", ErrBadEvent, m.Kind)
	}
	return nil
}

// SnapshotID is a snapshot's sequence number, the seq of package
// snapshot's Dir(seq). Zero means none.
type SnapshotID uint64

// String returns "snap-<n>".
func (s SnapshotID) String() string {
	if s == 0 {
		return "empty"
	}
	return "snap-" + strconv.FormatUint(uint64(s), 10)
}

// Phase is the kind of a cluster state.
type Phase uint8

// Phases, in the order a healthy cluster meets them.
const (
	// Forming: waiting for Options.Shards AMS shards and Options.Workers
	// workers or, adopting a cluster (Options.Adopt), for the first Tick.
	Forming Phase = iota + 1
	// Serving: every shard of the published map is live and workers train
	// at State.Version.
	Serving
	// Degraded: state was lost (a mapped shard, or a worker, died); workers
	// are paused; waiting for every slot of the map to hold a live shard.
	Degraded
	// Restoring: every shard was ordered to restore State.Snapshot at
	// State.Version; waiting for each to report.
	Restoring
	// Failed: state was lost and no good snapshot is left. Terminal.
	Failed
	// Stopped: a shard of the map left on purpose (its left marker was
	// written) while no worker was live: the job finished, or none
	// began, and its processes are being stopped. An orderly end, not a
	// loss to recover from; workers are paused. Once every slot holds a
	// live shard again the cluster forms anew, as a restarted scheduler
	// would (the newest good snapshot, or a new model begun empty).
	Stopped
)

func (p Phase) String() string {
	switch p {
	case Forming:
		return "FORMING"
	case Serving:
		return "SERVING"
	case Degraded:
		return "DEGRADED"
	case Restoring:
		return "RESTORING"
	case Failed:
		return "FAILED"
	case Stopped:
		return "STOPPED"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// State is the cluster state.
type State struct {
	Phase Phase
	// Version is the highest cluster version the core has issued (0 while
	// FORMING a new cluster, Options.LastVersion for a restarted one): the
	// serving version while SERVING, the version of the restore attempt
	// while RESTORING. It never decreases.
	Version uint64
	// Snapshot is the snapshot being restored while RESTORING, else zero.
	Snapshot SnapshotID
}

// String renders the state as in the design notes: FORMING, SERVING(v1),
// DEGRADED(v1), RESTORING(snap-3 v2), FAILED, STOPPED(v2).
func (s State) String() string {
	switch s.Phase {
	case Serving, Degraded, Stopped:
		return fmt.Sprintf("%s(v%d)", s.Phase, s.Version)
	case Restoring:
		return fmt.Sprintf("%s(%s v%d)", s.Phase, s.Snapshot, s.Version)
	}
	return s.Phase.String()
}

// Event is an input of Core.Step: Joined, Left, Tick, SnapshotRequested,
// SnapshotDone, RollbackRequested, ExportRequested, ExportDone,
// CutSettled or RestoreDone.
type Event interface {
	isEvent()
	String() string
}

// Joined: a member registered (its key appeared in etcd).
type Joined struct{ Member Member }

// Left: a member is gone. Graceful is true when it left on purpose (its
// left marker was written); otherwise its lease expired. Only a worker's
// graceful leave is treated differently: it stored its reader positions
// before leaving, so its data is dealt to the others without a rollback.
type Left struct {
	Member   Member
	Graceful bool
}

// LeaseExpired returns the event of m's lease expiring.
func LeaseExpired(m Member) Left { return Left{Member: m} }

// Tick: time passed. Now is the driver's clock; the core reads no other.
type Tick struct{ Now time.Time }

// SnapshotRequested: someone (CLI, RPC) asked for a snapshot now. Pin
// asks that it be pinned (see RollbackRequested): a worker keeping the
// best model of its job so far.
type SnapshotRequested struct{ Pin bool }

// RollbackRequested: someone (a worker whose job ends with the best model
// it met, not the last) asked for the cluster to go back to the pinned
// snapshot, as after a failure but on purpose: pause, restore it at a new
// version, serve. The good snapshots newer than it are forgotten (their
// model is a future the job discarded; the driver removes them from the
// store).
type RollbackRequested struct{}

// ExportRequested: someone (CLI) asked for a model export now.
type ExportRequested struct{}

// ExportDone answers a TakeExport (or its AbortExport): Err nil means the
// export's manifest was committed.
type ExportDone struct {
	ID  ExportID
	Err error
}

// CutSettled: the driver has carried out the end of the snapshot or the
// export whose SnapshotDone or ExportDone it fed last (resumed the
// workers the cut paused, recorded its result). The requests queued
// meanwhile (Queued) go now, in order: the snapshot, the rollback, the
// export, each started, queued again or refused (Refused) as if it had
// just been requested. Fed at any other time it only does the same with
// what is queued.
type CutSettled struct{}

// SnapshotDone answers a TakeSnapshot (or its AbortSnapshot): Err nil
// means the manifest of snapshot ID was committed.
type SnapshotDone struct {
	ID  SnapshotID
	Err error
}

// RestoreDone answers a Restore for one shard: Err nil means Shard now
// holds Snapshot's rows of its partitions and serves at Version.
type RestoreDone struct {
	Shard    string
	Snapshot SnapshotID
	Version  uint64
	Err      error
}

func (Joined) isEvent()            {}
func (Left) isEvent()              {}
func (Tick) isEvent()              {}
func (SnapshotRequested) isEvent() {}
func (RollbackRequested) isEvent() {}
func (ExportRequested) isEvent()   {}
func (ExportDone) isEvent()        {}
func (CutSettled) isEvent()        {}
func (SnapshotDone) isEvent()      {}
func (RestoreDone) isEvent()       {}

func (e Joined) String() string { return "joined " + e.Member.String() }

func (e Left) String() string {
	if e.Graceful {
		return "left " + e.Member.String()
	}
	return "lease expired " + e.Member.String()
}

func (e Tick) String() string { return "tick " + e.Now.UTC().Format(time.RFC3339Nano) }
func (e SnapshotRequested) String() string {
	if e.Pin {
		return "pinned snapshot requested"
	}
	return "snapshot requested"
}
func (RollbackRequested) String() string { return "rollback requested" }
func (ExportRequested) String() string   { return "export requested" }
func (e ExportDone) String() string {
	if e.Err != nil {
		return fmt.Sprintf("export #%d failed: %v", e.ID, e.Err)
	}
	return fmt.Sprintf("export #%d done", e.ID)
}

func (CutSettled) String() string { return "cut settled" }

func (e SnapshotDone) String() string {
	if e.Err != nil {
		return fmt.Sprintf("%s failed: %v", e.ID, e.Err)
	}
	return e.ID.String() + " done"
}

func (e RestoreDone) String() string {
	if e.Err != nil {
		return fmt.Sprintf("restore of %s v%d failed on %s: %v", e.Snapshot, e.Version, e.Shard, e.Err)
	}
	return fmt.Sprintf("%s restored %s v%d", e.Shard, e.Snapshot, e.Version)
}

// Action is an output of Core.Step, for the driver to carry out in order.
type Action interface {
	isAction()
	String() string
}

// Transition: the state changed. The driver records it (log, etcd event,
// status page); there is nothing else to do for it.
type Transition struct {
	From, To State
	// Cause says which event caused it, for humans.
	Cause string
}

// PublishShardMap: publish the shard map of Version, with Shards[i] the
// shard of slot i (partitions go to slots round-robin, as
// ams.NewShardMap does, so a slot keeps its partitions across versions).
type PublishShardMap struct {
	Version uint64
	Shards  []string
}

// PauseWorkers: every worker stops training at its next batch boundary
// and waits for Resume; what it had not pushed at Version is dropped.
type PauseWorkers struct{ Version uint64 }

// AbortSnapshot: the cluster left SERVING while snapshot ID was being
// taken. Do not commit its manifest if that has not happened yet, do not
// resume workers on its behalf, and answer with a SnapshotDone (nil Err
// only if the manifest had already been committed).
type AbortSnapshot struct{ ID SnapshotID }

// ExportID numbers the model exports a Core orders (the export's own
// sequence number in its store is the driver's).
type ExportID uint64

// AbortExport: the cluster left SERVING while export ID was being taken:
// stop it, do not resume workers on its behalf, and answer with an
// ExportDone.
type AbortExport struct{ ID ExportID }

// TakeExport: take model export ID at Version as a consistent cut, as a
// snapshot is taken (pause the workers at a batch boundary, have every
// shard write its part, commit the manifest last, resume the workers),
// and answer with exactly one ExportDone. Exports and snapshots never
// overlap.
type TakeExport struct {
	ID      ExportID
	Version uint64
}

// TakeSnapshot: take consistent snapshot ID at Version: pause workers at a
// batch boundary, have every shard write its part (rows, dense
// parameters, reader positions), commit the manifest last, resume the
// workers, and answer with exactly one SnapshotDone. Pin marks a pinned
// snapshot (SnapshotRequested.Pin): the driver records it in the
// snapshot's manifest (snapshot.Manifest.Pinned), so that pruning keeps
// it and a restarted scheduler knows it (Options.Pinned).
type TakeSnapshot struct {
	ID      SnapshotID
	Version uint64
	Pin     bool
}

// Restore: order every shard of Shards (slot order, as published at
// Version) to restore Snapshot as version Version, refusing any request
// of an older version from then on, and answer each with a RestoreDone.
// Snapshot 0 restores nothing: each shard begins Version empty (a new
// cluster's birth; shards serve no version before).
type Restore struct {
	Snapshot SnapshotID
	Version  uint64
	Shards   []string
}

// AssignReaders: deal the training data (file splits, Kafka partitions)
// among Workers; each reloads the reader positions of its share from the
// AMS (where a restore or a pause left them) before reading at Version.
// Workers not listed read nothing.
type AssignReaders struct {
	Version uint64
	Workers []string
}

// Resume: workers train again, at Version. Workers already training at
// Version carry on: after adopting a cluster (Options.Adopt) the core
// asks it to release workers that the dead leader left paused.
type Resume struct{ Version uint64 }

// GiveUp: the cluster cannot recover; stop the job with Err.
type GiveUp struct{ Err error }

// Request is the kind of an on-demand request that the core queues while
// a snapshot or an export is in progress (Queued, Refused).
type Request uint8

// Requests.
const (
	// SnapshotRequest is a SnapshotRequested.
	SnapshotRequest Request = iota + 1
	// RollbackRequest is a RollbackRequested.
	RollbackRequest
	// ExportRequest is an ExportRequested.
	ExportRequest
)

func (r Request) String() string {
	switch r {
	case SnapshotRequest:
		return "snapshot"
	case RollbackRequest:
		return "rollback"
	case ExportRequest:
		return "export"
	}
	return fmt.Sprintf("Request(%d)", int(r))
}

// Queued: a request came while a snapshot or an export was in progress
// (both pause the workers, so cuts take turns). The core keeps it, one of
// each kind (a second one of a kind already queued joins it), until the
// next CutSettled starts or refuses it. Pin: the queued snapshot is to be
// pinned (one pinned request among those it stands for is enough).
// Nothing to carry out: log it; its requester is answered when it has
// run, or is refused.
type Queued struct {
	Request Request
	Pin     bool
}

// Refused: a queued request was refused when its turn came (CutSettled):
// answer its requester with Err as if Step had rejected the request
// itself (wrapping ErrNotServing, ErrNoPinned or ErrFailed).
type Refused struct {
	Request Request
	Err     error
}

// StartRollback: a rollback to the pinned snapshot To starts (on request,
// or queued); the restore that follows is its. Answer its requester once
// the cluster serves again (To restored, or another snapshot if To failed
// to restore) or has failed.
type StartRollback struct{ To SnapshotID }

func (Transition) isAction()      {}
func (PublishShardMap) isAction() {}
func (PauseWorkers) isAction()    {}
func (AbortSnapshot) isAction()   {}
func (AbortExport) isAction()     {}
func (TakeExport) isAction()      {}
func (TakeSnapshot) isAction()    {}
func (Restore) isAction()         {}
func (AssignReaders) isAction()   {}
func (Resume) isAction()          {}
func (GiveUp) isAction()          {}
func (Queued) isAction()          {}
func (Refused) isAction()         {}
func (StartRollback) isAction()   {}

func (a Transition) String() string { return fmt.Sprintf("%s -> %s: %s", a.From, a.To, a.Cause) }
func (a PublishShardMap) String() string {
	return fmt.Sprintf("publish v%d [%s]", a.Version, strings.Join(a.Shards, " "))
}
func (a PauseWorkers) String() string  { return fmt.Sprintf("pause v%d", a.Version) }
func (a AbortSnapshot) String() string { return "abort " + a.ID.String() }
func (a AbortExport) String() string   { return fmt.Sprintf("abort export #%d", a.ID) }
func (a TakeExport) String() string    { return fmt.Sprintf("export #%d v%d", a.ID, a.Version) }
func (a TakeSnapshot) String() string {
	if a.Pin {
		return fmt.Sprintf("snapshot %s v%d pinned", a.ID, a.Version)
	}
	return fmt.Sprintf("snapshot %s v%d", a.ID, a.Version)
}
func (a Restore) String() string {
	return fmt.Sprintf("restore %s v%d [%s]", a.Snapshot, a.Version, strings.Join(a.Shards, " "))
}
func (a AssignReaders) String() string {
	return fmt.Sprintf("assign v%d [%s]", a.Version, strings.Join(a.Workers, " "))
}
func (a Resume) String() string { return fmt.Sprintf("resume v%d", a.Version) }
func (a GiveUp) String() string { return fmt.Sprintf("give up: %v", a.Err) }
func (a Queued) String() string {
	if a.Pin {
		return "queue " + a.Request.String() + " pinned"
	}
	return "queue " + a.Request.String()
}
func (a Refused) String() string       { return fmt.Sprintf("refuse %v: %v", a.Request, a.Err) }
func (a StartRollback) String() string { return "rollback to " + a.To.String() }

// Output is what one Step asks of the driver: the Actions, in order. When
// the event changed nothing, Rejected says why (wrapping ErrBadEvent,
// ErrStale, ErrNotServing, ErrNoPinned or ErrFailed); the driver logs
// it, or returns it to whoever requested a snapshot, a rollback or an
// export.
type Output struct {
	Actions  []Action
	Rejected error
}

// String renders o one action per line, then "rejected: <err>" if any.
func (o Output) String() string {
	var b strings.Builder
	for _, a := range o.Actions {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	if o.Rejected != nil {
		fmt.Fprintf(&b, "rejected: %v\n", o.Rejected)
	}
	return b.String()
}
