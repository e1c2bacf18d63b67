// Package controlplane is the typed etcd protocol between the processes of
// an xps cluster: the leading scheduler, the workers and anyone who asks
// for a snapshot. Membership (leases, heartbeats, clean leaves) is package
// membership, on which this one builds; the AMS shards take part only
// through membership, so the AMS binary links neither this package nor
// the sample reader it names.
//
// A [Conn] is an etcd client and the cluster's key prefix; each protocol
// is a set of methods on it, in a file of its own (see Files below).
// keys.go lists every key of a cluster with the process that writes it and
// those that read it; no other package builds a key.
//
// # Invariants
//
//  1. Sequence numbers of pauses and resumes only grow; a resume of seq
//     releases every pause up to seq.
//  2. A resume at a cluster version above the one a worker trains at means
//     the model was restored meanwhile: the worker drops its attempt
//     ([ErrRestored]) and starts over from the checkpoint the model holds.
//  3. A failed resume is final: every later wait returns
//     [ErrClusterFailed].
//  4. Partition deals and file assignments are published only by the
//     leading scheduler; a deal's generation only grows, and no worker reads
//     under a new deal before every worker has acknowledged it.
//  5. A worker that has marked its partitions done at a cluster version
//     (it read them to their end and reads no more) is dealt none at that
//     version: the mark is made only under the current deal, and a deal
//     only if no mark was made since the marks were read (both etcd
//     transactions), so no partition with unread messages goes to it.
//  6. Keys that must vanish with a process (barrier arrivals, election
//     keys, progress reports) live under that process's lease.
//  7. etcd runs none of our code, so anyone who may write a key may write
//     anything there: its readers check what they read, and a record no
//     process of ours could have written ([BadRecord]: a member record
//     under no lease, a pause acknowledgement above the latest pause) is
//     quarantined: reported once per revision, never silently dropped,
//     and never waited on nor taken as given. A worker's acknowledgement
//     counts once made since the pause, whatever overwrites it later.
//     Without per-worker identities (TLS) a record that looks like a
//     worker's own (its name, under a lease, the current pause) cannot be
//     told from it.
//
// Waits (WaitShardMap, WaitResume, ...) read the key, then watch it from
// the next revision, so no write between the two is missed; a broken watch
// starts over with a read. Every wait ends with its context.
//
// # Files
//
//   - conn.go: Conn (New, Client, Prefix), ErrBadValue and the JSON get, put, wait and watch every protocol uses.
//   - keys.go: the table of every etcd key of a cluster, who writes and who reads it, and the key functions.
//   - access.go: Access, the etcd roles' grants per process, and ProvisionAuth, which creates users and roles.
//   - job.go: JobRecord, the job a cluster runs (ClaimJob, GetJob).
//   - shardmap.go: the versioned shard map: published by the scheduler, waited for by workers (after a restore, of a new version).
//   - pause.go: pause, resume and failure: consistent snapshots and rollbacks stop the workers at a batch boundary; SnapshotTarget names where worker-held state goes.
//   - pauser.go: Pauser, the worker's side of pause.go.
//   - snapshots.go: snapshot requests and their results (RequestSnapshot, PutSnapshotResult, WatchSnapshotResults).
//   - exports.go: export requests and their results (RequestExport, PutExportResult).
//   - rollback.go: rollback requests to the pinned snapshot and their results (RequestRollback, PutRollbackResult).
//   - assign.go: training files divided among the workers (PutAssignment, WaitAssignment).
//   - partitions.go: Kafka partitions dealt to the live workers, their acknowledgements and the workers done (DealPartitions, WatchReassigned, AckPartitions).
//   - owners.go: the addresses a SLIDE job's workers serve their share of the layer on (PutOwnerAddr, WaitOwnerAddrs).
//   - barrier.go: barriers of members (the final evaluation).
//   - leadership.go: the schedulers' election (Elect, Leader) and the state a new leader adopts (ClusterState).
//   - events.go: the scheduler's event log (PutEvent, ListEvents).
//   - status.go: what a status page shows: the workers' progress reports (under their leases), the snapshot and export results, the members and their leases.
package controlplane
