// Package job is the one lifecycle of a worker's job, whatever the model:
// register in etcd, watch the lease, follow the scheduler's pauses, find
// the shard map and build the AMS client, load the model's data, train in
// attempts, and meet the other workers at barriers. A model (the CTR
// model of job/ctrtrain, the SLIDE model of job/xctrain)
// implements Model and is given an Env; everything that is the same for
// every model lives here, once.
//
// # Lifecycle
//
//  1. Register the worker under Options.Index, kept registered
//     (membership.Keep): a lost lease (etcd unreachable for longer than
//     the TTL) is registered again as soon as etcd answers. The cluster
//     took the loss for the worker's death and rolls back; the attempt
//     training then stops (ErrLeaseLost, which Recoverable holds) and the
//     next one resumes from the restored checkpoint: the worker does not
//     die of it.
//  2. Follow pause requests (controlplane.Pauser): acknowledged at once
//     until the model's attempt says training has started.
//     Publish every progress report the model makes (Options.OnProgress,
//     which is called too) to etcd, the latest under the worker's lease
//     (controlplane.PutProgress), for the schedulers' status pages: from
//     a goroutine of its own, a report waiting while etcd is slow
//     replaced by the next one, so that training never waits for it.
//  3. Wait for the scheduler's shard map and for the cluster to serve its
//     version (a new cluster's shards serve none until the scheduler has
//     begun them; a failed cluster ends the job with
//     controlplane.ErrClusterFailed: no worker trains on it); build the
//     client (direct calls to the shards of Options.Local, gRPC to the
//     others).
//  4. Model.Prepare: the model loads its data (once per job; again after
//     a restore, when it failed as requests to a restored cluster fail).
//  5. Attempts: each attempt reads the worker's checkpoint from the model
//     (checkpoint.Load) and calls Model.Train at one cluster version. An
//     attempt that fails in a recoverable way (Recoverable: the cluster
//     was rolled back, or a request failed as requests to a dead or
//     replaced shard fail) waits for the cluster to be restored, checks
//     that this worker is still registered (a frozen worker declared
//     dead must not train on), builds a client for the new shard map and
//     starts the next attempt from the restored checkpoint.
//  6. A model that holds pushes of this worker beyond its checkpoint
//     (seen at an attempt's start from the shards' records, or as a push
//     refused with ams.ErrDuplicatePush) is not trained on: the worker
//     leaves as a dead one and registers as a new life
//     (membership.Kept.Renew), so that the cluster rolls the model back
//     to its last snapshot, and resumes from there.
//  7. A job done saves its model (the first worker, with a snapshot
//     store: Env.SaveModel). A job stopped in order (its context
//     cancelled, as SIGTERM does, not for a lost lease) whose cluster
//     stops with it (Options.SaveOnStop: worker -local) saves it too, with
//     the checkpoint the stop stored, within StopSaveTimeout
//     (Env.SaveOnStop); a failed save is Run's error.
//  8. The end, however the job ended (done, stopped by its context as
//     SIGTERM does, failed): the shards' records of the worker's pushes
//     (ams.Origin: a shard applies each of a worker's batches once) are
//     checked against its checkpoint in the model (checkpoint.Verify) and
//     the result is the Summary's ExactlyOnce, with the scheduler's
//     record of the last restore (a cluster that failed holds no model
//     that counts). When they agree the worker leaves gracefully; when
//     they do not, or when the cluster failed, Run fails with
//     ErrNotExactlyOnce; when a read of the check fails (the shards',
//     etcd's), with ErrNotVerified, the verdict saying why: never
//     "exactly-once" from the shards' records alone. Either way the worker
//     leaves as a dead one does (Registration.Abandon), so that the
//     scheduler rolls the model back to its last snapshot. After a stop
//     the checks have StopBudget from it, so that a stopped worker is gone
//     within 20 s whatever etcd does.
//
// # Invariants
//
//  1. One attempt trains at one cluster version (Env.Version); the
//     Pauser's version is set before the attempt starts.
//  2. The lifecycle owns registration, the pauser and every client it
//     builds, and closes them before Run returns, whatever happened.
//  3. Every attempt starts from the checkpoint the model holds: nothing a
//     failed attempt read but did not apply survives into the next one.
//  4. A push once sent is waited for (PushContext), even when the job is
//     stopped: a stop drains the pushes in flight, then stores the
//     checkpoint of exactly what was applied.
//  5. An attempt runs under one registration: it stops when that one is
//     lost, and the next attempt starts under a live one.
//
// The job's summary common to every model (Summary) is filled by the
// lifecycle; the model's own figures are its business. A figure that may
// be undefined (an AUC of one class) is a Metric, whose JSON is null
// then: a summary always encodes.
//
// # Files
//
//   - job.go: Model, Env and Run, the lifecycle of a worker's job: attempts, restores, verification, the Summary it prints, and PushContext.
//   - options.go: Options, a worker's job for every model.
//   - progress.go: Progress, a worker's report on its training, with its JSON and EpochsText.
//   - events.go: Events, a job's machine-readable stream of JSON lines (the worker's -events).
//   - publish.go: the publisher of progress reports to etcd, under the worker's lease.
//   - metric.go: Metric, a figure that may be undefined (null in JSON).
//   - pause.go: StartTraining, StopTraining, PauseRequested and Pause: the scheduler's pauses as a model sees them; Lifecycle, what a training run uses of Env; PendingPause, PauseFor, SnapshotTarget and WorkersLeft for a model with state outside the shards.
//   - best.go: the best model of a job with a validation set: KeepBest pins it, RollBack returns to it.
//   - saved.go: SavedModel, SaveModel and SaveOnStop: the final model's snapshot.
//   - recover.go: Recoverable, the errors an attempt goes on from after a restore, and Barrier.
//   - pushtimer.go: PushTimer, a push's context without an allocation per push (PushContext's twin).
//   - wait.go: WaitSaying, a wait for the scheduler that says what it waits for.
//   - dial.go: the dial options of a worker's clients of the shards (mutual TLS).
//   - rss.go: peakRSS, the process's peak resident set.
package job
