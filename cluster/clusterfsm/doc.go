// Package clusterfsm is the cluster state machine of the scheduler: the
// I/O-free core that decides, from membership and progress events, when the
// cluster serves, pauses, rolls back to a snapshot and resumes. A driver
// (the scheduler) feeds it events and carries out the actions it returns;
// the core reads no clock, does no I/O and starts no goroutine, so tests
// drive it with scripts and random sequences, no sleeps (see testdata/).
//
// # States
//
//	FORMING --N shards (and M workers) live--> RESTORING(empty v)    new cluster
//	FORMING --N shards (and M workers) live--> RESTORING(s)          known snapshots
//	FORMING --first tick, adopted state intact--> SERVING(va)        adoption
//	FORMING --first tick, adopted state lost--> DEGRADED(va)         adoption
//	SERVING(v) --mapped shard lost, or worker died--> DEGRADED
//	DEGRADED --every slot holds a live shard--> RESTORING(s) at v' > v
//	RESTORING(s) --every shard restored s--> SERVING(v')
//	RESTORING(empty v) --every shard began v--> SERVING(v)           initial snapshot
//	RESTORING(empty v) --a shard failed to begin--> FAILED           terminal
//	RESTORING(s) --a shard failed to restore s--> RESTORING(s') at v'' > v'
//	RESTORING(s) --a mapped shard lost--> DEGRADED
//	DEGRADED or RESTORING --no good snapshot left--> FAILED          terminal
//	DEGRADED, no model yet --every slot filled--> RESTORING(empty v')
//	SERVING or RESTORING --a mapped shard left, no worker live--> STOPPED
//	STOPPED --every slot filled--> RESTORING(s), or (empty v') with none
//	SERVING(v) --rollback requested, a pinned snapshot p--> RESTORING(p v+1)
//	FORMING --first tick, adopted state stopped--> STOPPED(va)        adoption
//
// State.Version is the cluster version. Every restore attempt takes a new
// one, so a reply of an abandoned attempt is told apart from the current
// one by its version alone; in the common case SERVING(v) resumes as
// SERVING(v+1), and after a fallback or an abandoned attempt versions skip.
// An adopted cluster (Options.Adopt) keeps the version va of its map.
//
// # Inputs (Event)
//
// Joined and Left (Graceful false: the lease expired) with a Member of kind
// ams, worker or scheduler; Tick(now); SnapshotRequested(pin);
// SnapshotDone(id, err); RollbackRequested; ExportRequested; ExportDone(id,
// err); CutSettled (the driver has done its part of a cut's end);
// RestoreDone(shard, snapshot, version, err).
//
// # Outputs (Action)
//
// Transition (record it); PublishShardMap(v, shards); PauseWorkers(v);
// TakeSnapshot(id, v); AbortSnapshot(id); Restore(s, v, shards);
// AssignReaders(v, workers) (deal the data, reload reader positions from
// the AMS); Resume(v); GiveUp(err); StartRollback(to) (the restore that
// follows is a rollback's: answer its requester when it ends);
// Queued(request, pin) (a request waits for the cut in progress: log it);
// Refused(request, err) (answer a queued request's requester with err).
// Output.Rejected says why an event changed nothing (ErrStale,
// ErrBadEvent, ErrNotServing, ErrNoPinned, ErrFailed).
//
// # Design choices
//
//   - Birth. A new cluster's shards start blank, serving no version (a
//     process restarted under a live id must not serve its predecessor's
//     version empty), so the core begins them: RESTORING(empty v), a
//     Restore of snapshot 0, each shard answering RestoreDone like any
//     restore; then SERVING(v) and the initial snapshot. Until the
//     cluster has a model (it served, was adopted, or started with
//     snapshots) a lost shard loses nothing: once its slot is filled the
//     cluster begins again at a new version instead of failing. A shard
//     that fails to begin is broken or unreachable at the address it
//     registered: the core gives up with ErrBegin.
//   - Shard count. Options.Shards is the fixed number N of slots of the
//     shard map. FORMING gives the slots to the first N live shards by id
//     (digit runs as numbers); more are spares. A lost slot is filled by
//     the same id coming back or, if one is live first, by a spare (lowest
//     id), so recovery does not wait for a restart when a spare exists. A
//     slot keeps its partitions across versions. Changing N means
//     restarting the scheduler with the new N: it forms and restores the
//     latest snapshot onto the new layout.
//   - A shard dies (lease expiry or graceful leave: its rows are gone
//     either way) while SERVING: DEGRADED, workers pause; every shard then
//     restores the newest good snapshot. A spare shard dying changes
//     nothing.
//   - A worker dies while SERVING: as in XDL the whole cluster rolls back
//     to the newest good snapshot, since its pushes may be half applied;
//     at resume the data (files, Kafka partitions) is dealt among the live
//     workers, who take their positions from the restored AMS, so the dead
//     worker's share resumes elsewhere or on its replacement. A worker
//     that leaves gracefully, or joins, while SERVING only triggers a new
//     deal at the same version (pause at a batch boundary, deal, resume),
//     deferred to the end of a snapshot in progress. Workers come and go
//     freely outside SERVING: they get their share at the next resume.
//   - A shard dies while RESTORING: the attempt is abandoned (DEGRADED);
//     once its slot is filled again a new attempt of the same snapshot
//     runs at a new version.
//   - Lost leases that come back (Options.RejoinWait). A mapped shard or
//     a worker whose lease expires while SERVING may still be running,
//     cut off from etcd (an etcd outage, a network cut), with its state;
//     when its life (Member.Life) is known the core waits for it,
//     DEGRADED with workers paused, restoring nothing. If every member
//     waited for registers again in the same life and nothing else was
//     lost, the cluster serves on at the same version (AssignReaders,
//     Resume): an outage costs a pause, not a restore. A member back as
//     another life, another loss, or the wait running out (at a Tick)
//     restores as after any loss; a spare shard that joins meanwhile
//     waits too. An adopted cluster waits likewise for the members of
//     Adopted.Lives not live at its first Tick, and counts a live member
//     in its recorded life as holding its state whatever its
//     incarnation. A new incarnation of a live member in the same life
//     (its lease expired unseen) loses nothing.
//   - An orderly end. A mapped shard that leaves gracefully (its left
//     marker written: SIGTERM) while SERVING or RESTORING with no worker
//     live (the job finished, or none began) stops the cluster:
//     STOPPED, a clean state, not a loss to recover from, so no snapshot
//     is needed and nothing fails. A snapshot or export in progress is
//     aborted, a restore abandoned, and workers that join meanwhile stay
//     paused. Once every slot holds a live shard again (the same id, or a
//     spare) the cluster forms anew as a restarted scheduler would: it
//     restores the newest good snapshot or, with none (and no aborted
//     snapshot unanswered), begins a new model empty at a new version. A
//     shard leaving while a worker is live is a loss as above.
//   - A second failure while DEGRADED only empties another slot.
//   - A restore fails on any shard: the snapshot is taken as bad (the
//     driver retries passing errors itself) and the previous good one is
//     restored at a new version. With none left the core gives up
//     (GiveUp(ErrNoSnapshot), FAILED), unless an aborted snapshot is still
//     unanswered: it waits in DEGRADED for its answer, since it may have
//     committed. Losing state with no snapshot at all gives up likewise;
//     the initial snapshot (Options.SkipInitialSnapshot false) keeps that
//     window short.
//   - A pinned snapshot (SnapshotRequested with Pin: a worker keeping its
//     job's best model so far, early stopping) is kept among the good ones
//     beyond Options.Keep until another is pinned. RollbackRequested
//     restores it on purpose, as after a loss (pause, RESTORING at a new
//     version, SERVING); a loss during the rollback restores it again, and
//     once it is restored the good snapshots after it are forgotten: they
//     hold a future the job discarded. A pinned snapshot that fails to
//     restore is pinned no more, and the newest good one is restored.
//   - Snapshots run only while SERVING, one at a time: a requested one is
//     refused while the cluster does not serve (ErrNotServing) and queued
//     while another cut runs (see the next choices); periodic ones
//     (Options.SnapshotEvery) start at the first tick at least a period
//     after the start of the previous one or the start of serving. A
//     snapshot in progress when the cluster leaves SERVING is aborted;
//     its SnapshotDone is still awaited, and a success counts (the
//     manifest was committed before the abort took effect, so it is a
//     consistent snapshot).
//   - Model exports (TakeExport) are cuts like snapshots, with the same
//     rules (SERVING only, periodic by Options.ExportEvery or requested,
//     aborted when the cluster leaves SERVING), and a snapshot and an
//     export never run at once: both pause the workers, so a requested
//     one is queued, and a periodic one waits for the next tick, while
//     the other runs, and a new deal of the data waits for either. An
//     export is not a restore point: ExportDone changes no snapshot list.
//   - Requests during a cut. A snapshot, a rollback or an export
//     requested while SERVING with a snapshot or an export in progress is
//     queued (Queued), not refused: the core keeps one of each kind, so
//     requests of a kind coalesce, and a queued snapshot is pinned if any
//     request it stands for was. The queue waits for the driver to have
//     settled the end of the cut (CutSettled, fed after it resumed the
//     workers the cut paused and recorded its result, so that the next
//     cut's pause comes after that resume and that record). It is then
//     taken whole and replayed in a fixed order, the snapshot, the
//     rollback, the export, each stepped as if just requested: it starts,
//     is refused (Refused: the cluster left SERVING or FAILED meanwhile,
//     or no pinned snapshot is good), or is queued again behind a cut an
//     earlier one started (a queued rollback or export waits for a queued
//     snapshot; a rollback that starts leaves SERVING, so an export queued
//     with it is refused). Leaving SERVING keeps the queue: it is answered
//     when the aborted cut's end is settled. The queue lives in the Core
//     only: a scheduler that loses the leadership drops it with its Core,
//     and the next leader starts with none (its requesters are never
//     answered).
//   - Stale events change nothing and are rejected with ErrStale: a
//     replayed join, a Left of a member that is not live or of another
//     incarnation, a SnapshotDone of a snapshot not in progress, a
//     RestoreDone of another version, snapshot or shard, or a duplicate.
//     A Joined of a new incarnation of a live member counts as the old one
//     dying first.
//   - Scheduler members are tracked and change nothing.
//   - Scheduler failover. A scheduler that takes over (a standby
//     elected, or a lone one restarted) finds the cluster running at the
//     version va of the map in etcd. With Options.Adopt it adopts that
//     cluster instead of forming one: it stays FORMING while the driver
//     feeds its initial sync, and the first Tick (the end of the sync)
//     decides, knowing every live member. If the previous leader last
//     recorded SERVING(va), every shard of the map is live in the life
//     that held its rows, and every worker of the data deal is live, it
//     serves on at va: no map is published (the map of va is the
//     previous leader's), nothing is restored, no initial snapshot is
//     taken, and periodic ones count from the adoption. The workers carry
//     on with their shares (Resume(va) only releases those a dead leader
//     left paused), unless the live workers are not the dealt ones or one
//     of those left gracefully: then the data is dealt anew at va, as
//     when a worker joins a serving cluster. Otherwise state was lost
//     while no leader watched (a mapped shard died or restarted, a dealt
//     worker died, or the cluster was not serving): DEGRADED(va), workers
//     paused, the slots of the adopted map filled as after a loss, and
//     the newest good snapshot restored at a version above va; with none,
//     the core gives up. A loss before the first Tick counts, even when
//     the member is back by then. A cluster the previous leader recorded
//     STOPPED (Adopted.Stopped) is STOPPED(va) again at the first Tick. Deciding at the first Tick rather than
//     at the last shard's join keeps the decision from hanging on the
//     order of the sync, and sees every worker.
//
// # Invariants
//
//  1. State.Version never decreases. Each PublishShardMap carries a
//     version above every earlier one (and above an adopted map's), and
//     each version's map is published once: an adopted map never again;
//     Restore goes with the map just published.
//  2. Every PublishShardMap lists N distinct live shards.
//  3. Resume(v) is asked only when v is the newest published version
//     (the adopted one included), every shard of its map is live and, if
//     v was a restore attempt, every one of them answered RestoreDone(s,
//     v) without error.
//  4. While SERVING or RESTORING every shard of the newest map is live.
//  5. TakeSnapshot is asked only while SERVING, with no other snapshot
//     unanswered, with ids strictly increasing above Options.LastSnapshot.
//     Leaving SERVING aborts the snapshot in progress and pauses workers;
//     so does finding the adopted state lost.
//  6. Restore always targets the newest good snapshot: committed
//     (SnapshotDone without error, or listed in Options.Snapshots), among
//     the newest Options.Keep, and not refused by an earlier restore; or,
//     with none and no model yet, snapshot 0 (begin empty). A cluster with
//     a model is never begun empty, unless it STOPPED with no good
//     snapshot and none unanswered (its model left with its shards).
//  7. GiveUp is asked only when no good snapshot is left and none is
//     unanswered: with ErrNoSnapshot when there was a model to lose, with
//     ErrBegin when a shard failed to begin; after it (FAILED) no action
//     is asked again but Refused, the answer to a request queued before.
//  8. The core waits only for something: it stays FORMING only while too
//     few shards or workers are live or, adopting, until the first Tick;
//     DEGRADED or STOPPED only while fewer than N shards are live or it
//     awaits an aborted snapshot's answer.
//  9. A request is queued (Queued) only while SERVING with a snapshot or
//     an export in progress, and then never refused at once; at most one
//     request of each kind is queued. Only CutSettled takes requests off
//     the queue, all of them, replaying them in the order snapshot,
//     rollback, export; each is answered then by its cut's start
//     (TakeSnapshot, StartRollback, TakeExport), by Refused with the
//     error Step would have rejected it with (ErrNotServing, ErrNoPinned,
//     ErrFailed), or by being queued again. A queued snapshot is pinned
//     iff one of the requests it stands for asked for a pin.
//  10. StartRollback is asked only while SERVING with no snapshot in
//     progress and the pinned snapshot good; it names the pinned
//     snapshot, which the Restore that follows in the same Output
//     targets.
//
// property_test.go checks all of these against random event sequences.
//
// # Driver protocol
//
//  1. Build the Options: Shards and Workers from the job; SnapshotEvery
//     and Keep from the snapshot settings; Snapshots and LastSnapshot from
//     the store (snapshot.Latest, directory listing, counting incomplete
//     snapshots a dead leader left); LastVersion from the shard map in
//     etcd. When a shard map is published (a previous leader ran the
//     job), set Adopt: Version and Shards from the map, MaxIncarnation
//     the mod revision of its key, Serving whether the last recorded
//     state is SERVING at that version, Workers the workers of the data
//     deal in etcd, Left the workers with a left marker. Call New.
//  2. Feed every membership change (Joined, Left) in etcd revision order,
//     with the member key's create revision as Incarnation: first every
//     member of the initial sync, then a Tick at once (when adopting, it
//     ends the sync), then a Tick at a steady period; SnapshotRequested
//     from the CLI or RPC, answering the requester with Output.Rejected
//     (RollbackRequested and ExportRequested likewise); one SnapshotDone
//     per TakeSnapshot and one ExportDone per TakeExport, each followed,
//     once the driver resumed the workers that cut paused and recorded
//     its result, by a CutSettled; one RestoreDone per shard per Restore.
//     A queued request's requester is answered by its cut's result, or
//     by Refused.
//  3. Carry out each Output's actions in order, idempotently: a Resume
//     or PauseWorkers of the version workers already run at, or are
//     paused at, is harmless. Step is not safe for concurrent use: one
//     goroutine owns the Core; long operations (snapshot, restore) run
//     elsewhere and report back as events.
//
// # Files
//
//   - core.go: Core, the state machine: New, Step and the transitions of joins, losses, ticks, snapshots, restores and exports.
//   - adopt.go: a new leader's adoption of the cluster it found (Options.Adopt) and the losses before its first decision.
//   - types.go: the members, states and phases, the Events Step takes, the Actions and the Output it returns.
//   - options.go: Options and Adopted, with EnsureDefaults and Validate.
//   - ids.go: CompareIDs, the numeric-aware order of member ids.
//   - queue.go: the requests queued during a cut (Queued) and their replay at CutSettled.
package clusterfsm
