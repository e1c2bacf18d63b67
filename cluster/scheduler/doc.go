// Package scheduler is the driver of an xps cluster: the I/O around the
// cluster state machine (package clusterfsm), in the raft RawNode / node
// split. It watches membership in etcd, feeds the state machine its events
// and carries out the actions it returns through the control plane
// (package controlplane): shard maps, pauses, snapshots, restores,
// resumes, data assignments, events.
//
// # Driver protocol
//
//  1. [New] validates [Options], registers the scheduler (kind
//     "scheduler"), divides the training files among the workers (the job
//     section of Options.Config, published once) or reads the Kafka
//     topic's partitions (its kafka section), and starts the run goroutine.
//  2. The run goroutine campaigns to lead the cluster (an election on its
//     registration's lease; a standby waits here). Once elected it builds
//     the state machine from what etcd and the snapshot store hold (the
//     published shard map, the recorded state, the last pause, the good
//     snapshots), so a new leader adopts a running cluster.
//  3. It reads <prefix>/left/ and <prefix>/members/ at one revision,
//     reconciles them with what it knew (joins and leaves into the state
//     machine), then watches both, and the snapshot request key, from the
//     next revision; ticks drive periodic snapshots and the
//     snapshots-every-samples count. A broken watch starts this step over.
//  4. Each action is carried out in order on the run goroutine, except
//     snapshots and restores, which run in goroutines of their own and
//     report back as events. Writes that must land (the recorded state, a
//     resume, a failure) are retried until they do. At the end of a
//     snapshot or an export it feeds the state machine the end, resumes
//     the workers the cut paused, records the result, and only then feeds
//     it clusterfsm.CutSettled: the snapshot, rollback and export requests
//     that came during the cut, which the state machine queued, start
//     then or are refused (answered through their results), in its
//     order. The driver keeps no queue of its own.
//  5. If the scheduler's own lease is lost (etcd unreachable for longer
//     than the TTL) its leadership goes with it: it forgets the term
//     (its operations end), registers again (membership.Keep) and
//     campaigns again; a new term takes the cluster over as any new
//     leader does (adoption). It stops on its own only when its etcd
//     client is closed (Done is closed, Err wraps [ErrLostRegistration]);
//     [Scheduler.Close] stops it otherwise, waits for its goroutines and
//     leaves the cluster gracefully. Serve, stopped by a signal, first
//     takes the stop's snapshot ([Scheduler.SaveOnStop]: when it leads a
//     serving cluster with a snapshot store and the workers' checkpoints
//     count samples the last snapshot does not), so that a cluster
//     stopped in order keeps what was trained.
//
// # Status page
//
// Every scheduler, a standby too, follows the workers' progress reports
// and the snapshot and export results (controlplane.WatchStatus) from a
// goroutine of its own, started by New and stopped by Close, into a board
// (an I/O-free core behind a mutex): each worker's last 600 reports, the
// last 20 results of each kind. [Scheduler.StatusHandler] serves it as an
// HTML page (GET /: tables, inline SVG curves drawn by package plot, no
// script, a reload every 5 s; every value escaped by html/template) and as
// JSON (GET /status.json), with what it reads from etcd when asked: the
// members and their leases (the last heartbeat), the leader, and on a
// standby the state the leader recorded. [Serve] registers it on the
// operations endpoint; the embedded cluster's scheduler serves it for
// `worker -local`.
//
// # Invariants
//
//  1. One goroutine owns the state machine and every field it drives;
//     background operations only send it events.
//  2. Every membership change is fed exactly once, in etcd revision order;
//     a leave is graceful iff the member's left marker existed when its
//     member key was deleted (package membership).
//  3. Only the leader writes the control plane's scheduler keys; a standby
//     writes nothing but its own registration and election key.
//
// # Files
//
//   - scheduler.go: Options, Scheduler (New, Done, Err, Close), the election and the loop that follows the members and the requests in etcd.
//   - driver.go: the driver of the clusterfsm Core: events in, its actions carried out (shard maps, pauses, snapshots, restores, the job's claim).
//   - snapshots.go: one snapshot attempt: the shards write their parts, the manifest commits, old snapshots are pruned.
//   - exports.go: exports of the model: the chain of full and delta exports and an attempt over the shards.
//   - rollback.go: a rollback to the pinned snapshot, asked for by a worker, and its result.
//   - samples.go: the snapshots every N samples applied (Options.Snapshot.EverySamples).
//   - stop.go: SaveOnStop, the snapshot of a scheduler stopped in order.
//   - dial.go: the scheduler's client of the shards (mutual TLS when it has an identity).
//   - command.go: the scheduler binary: Options.BindFlags, Serve and RequestNow (-snapshot-now, -export-now).
//   - metrics.go: the Prometheus collector of the scheduler's view of the cluster.
//   - status.go: what the status page keeps in memory: the workers' progress histories and the latest results.
//   - statuspage.go: StatusHandler and the data it renders.
//   - statuscharts.go: the status page's curves, as inline SVG.
//   - statustemplate.go: the status page's HTML template.
package scheduler
