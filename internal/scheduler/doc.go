// Package scheduler drives an xps cluster: it watches membership in etcd,
// runs the cluster state machine and publishes the shard map.
//
// It has two layers (the raft RawNode / node split):
//
//   - [Core], an I/O-free state machine. Inputs are events: [MemberJoined],
//     [MemberLeft] (Graceful false is a lease expiry, see [LeaseExpired]) and
//     [Tick]. [Core.Step] returns an [Output]: membership [Report]s, a shard
//     map to publish, a [StateChange]. It reads no clock and does no I/O, so
//     tests drive it with scripted event sequences.
//   - [Scheduler], the driver: one goroutine that watches etcd, feeds the
//     Core and carries out its Output.
//
// # States
//
//	FORMING --N AMS shards live--> SERVING(v=1) --a mapped shard lost--> DEGRADED
//
// RESTORING (a later change) will lead from DEGRADED back to SERVING(v+1).
//
// # Invariants
//
//  1. The Core asks to publish a shard map exactly once per version, when it
//     enters SERVING; the map lists the N live AMS shards ordered by ID
//     (digit runs compared as numbers), partitions spread round-robin.
//  2. The state leaves SERVING only when an AMS shard of the published map
//     goes away, gracefully or not: its rows are lost either way. Workers,
//     schedulers and spare AMS shards are reported and never change it.
//  3. Every membership change is reported exactly once, in etcd revision
//     order; a leave is graceful iff the member's left marker existed when
//     its member key was deleted (see package cluster).
//
// # Driver protocol
//
//  1. [New] validates [Options], registers the scheduler (kind "scheduler")
//     and starts the goroutine.
//  2. The goroutine reads <prefix>/left/ and <prefix>/members/ at one
//     revision, reconciles them with what it knew (joins and leaves into the
//     Core), then watches both from the next revision. A broken watch
//     (compaction, lost connection) starts this step over.
//  3. Each Output is carried out in order: reports are logged and written as
//     events under <prefix>/events/, the shard map is put under
//     <prefix>/shardmap (retried every tick until it succeeds), the state
//     change is logged and written as an event.
//  4. If the scheduler's own lease is lost it stops (Done is closed, Err
//     wraps [ErrLostRegistration]); [Scheduler.Close] stops it otherwise and
//     leaves the cluster gracefully.
//
// A restarted scheduler starts FORMING again and, once N shards are live,
// publishes version 1 again; reading back the published map and leader
// election between schedulers come with the RESTORING work.
package scheduler
