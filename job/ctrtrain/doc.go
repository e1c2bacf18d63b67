// Package ctrtrain is the CTR model's training loop in a worker process:
// it reads sample groups, packs them into multi-prefix-tree compressed
// batches, pulls the batches' unique embedding rows and the dense
// parameters from the AMS shards, runs the MLP forward and backward on the
// worker's cores, and pushes gradients back asynchronously. It runs in
// its job through one interface (Job: the lifecycle's pauses and best
// model, the checkpoint's commit, the reopen, the final barrier).
//
// # Pipeline
//
// An epoch runs four stages joined by bounded queues (train.pipeline: true,
// the default):
//
//  1. read/parse: the epoch's reader.Source fills sample groups, taken
//     from a fixed pool of groupQueue groups (back-pressure: the reader
//     stops when the pool is empty);
//  2. batch/compress: a compress.Builder packs the groups into batches of
//     train.batch_size samples, consecutive samples sharing their
//     upper-level features sharing one node per level; each batch holds
//     the unique ids per table (queue of batchQueue batches);
//  3. pull: the batch's unique ids routed to shards once (a client.Route
//     in the batch's state), then one merged request per shard, all shards
//     in parallel, for the batch's rows and the dense parameters; it runs
//     train.prefetch_batches batches (at least 1) ahead of training, from
//     a fixed set of prefetch+1 batch states, with as many pulls in
//     flight at once (pullers taking the batches in turn, their results
//     collected in the same turn: training gets the batches in order);
//  4. train/push (Run's goroutine): pool embeddings once per tree node,
//     then the network (package model/ctr, which serve shares): each
//     level's share of the first layer once per node, MLP
//     forward, sigmoid + binary cross-entropy, backward (the user part's
//     weight gradient once per user), scatter gradients per unique id, and
//     push asynchronously, through the route of the batch's pull (handed
//     from the batch's state to the push buffer, which gives the state its
//     idle route back), with at most train.max_inflight_pushes pushes in
//     flight. With train.reread_shared, before a batch trains, the rows it
//     shares with the batch before it (a frequent id's row is in every
//     batch) are read again, with the dense parameters, once that batch's
//     push is applied: pulled a batch ahead, they would miss its update
//     (reread.go).
//
// Cancellation (the caller's context, a lost lease, or any stage's error)
// reaches every stage: each blocking send or receive also waits on the
// pipeline's context, and the stages are joined before the epoch returns.
// The first stage error is the epoch's error. With train.pipeline: false
// the same stages run one after another for each batch on one goroutine,
// and every push is waited for (the comparison point of the pipeline).
//
// # The driver and its tracker
//
// What a run decides is not in the loop: Run feeds (through a
// trainrun.Driver, which both models share) a tracker.Tracker (the
// I/O-free core, scripted in job/tracker/testdata) the run's events
// — started, batch trained, tick, idle source, partitions re-dealt, epoch
// ended, stopped — and executes the actions it returns: open an epoch,
// commit a checkpoint (after every push is applied), pause for the
// scheduler, reopen the source, evaluate, print progress, leave the sync
// round, wait at the final barrier. The stages of a pass are separate
// functions (pipeline.read, batch, pull, trainLoop).
//
// # Sync mode
//
// With train.sync (Options.Sync) batches run one after another and every
// batch is a round shared with the other workers (see SyncOptions): the
// pull waits until every shard has applied the previous round, pausing in
// between when the scheduler asks; the push is the worker's part of the
// round, carrying the checkpoint that enters the model with it; at the end
// of its data the worker leaves the epoch.
//
// # Positions
//
// Result.Position is the reader position right after the last sample of
// the last batch trained on (compress.Batch.End): a source reopened there
// yields exactly the samples the model has not seen. Read-ahead in the
// queues is not counted. With train.shuffle (the default) the training
// data is held in memory and positions refer to the shuffled in-memory
// order; with shuffle: false files are streamed in order and positions are
// file positions.
//
// A Kafka topic's positions live in the model, one per partition, and the
// scheduler deals the partitions to the workers (controlplane's partition
// deal protocol): on a new deal a worker commits its positions, and reads
// its new partitions from theirs once every worker of the deal has
// acknowledged it. A worker of a bounded job that has read its partitions
// to their end marks them done before it waits for the others, and is
// dealt none after that; if its deal was replaced as it finished, its
// attempt ends with job.ErrTrainAgain and the next one reads the new
// partitions first. A stop (a lost lease) at any point, the end of the
// last epoch included, commits the checkpoint of every batch the shards
// applied, so that a worker back in its life trains on at the same
// version.
//
// # Data
//
// LoadData finds the model's shape in the first training samples and the
// test set (config values win). Training files that hold no samples are
// an error naming them (ErrNoData) for a worker of one, whose files are
// the whole training data; a worker of several may have an empty share.
// Test files that hold no samples are an error too. A Kafka topic without
// messages is not: a stream may begin empty.
//
// # Summary
//
// A job's summary (JobResult) is printed as text and, with -json, as JSON.
// Figures that may be undefined (an AUC of a test set of one class, the
// progressive AUC of a run that trained no sample) are job.Metrics: NaN in
// Go, null in JSON, with a note beside them saying why (test_auc_note,
// auc_note), "undefined (one class)" in the text. The JSON always encodes.
//
// # Progress
//
// Every train.progress_every a line gives samples/s, the epoch's running
// loss, the AUC of the predictions made on the training batches before each
// was trained on (progressive validation), the compression ratio, and the
// lag of streaming sources.
//
// # Ownership
//
// A Trainer is used by one goroutine. The stage goroutines are owned by the
// epoch that starts them; push goroutines each own one push buffer from a
// fixed ring (trainrun.Ring, with its gradients and the route of its
// batch) until their push completes, and are joined before Run returns, on success and on
// error. RunJob also cancels training when the worker's etcd lease is
// lost.
//
// # Memory
//
// A batch in steady state allocates nothing on the heap: the groups and
// batch states of the pipeline's pools are made once per run (and reused
// by every pass), sized once for the largest group of the data in memory
// (reader.Pack), the compress.Builder recycles its batches, routes and
// push buffers are reused, each push buffer has its own goroutine body
// and push context (job.PushTimer), and the client and the embedded
// shards pool their per-call workspaces. TestSteadyStateAllocs holds it
// to a small bound on the direct path (what remains is amortised growth:
// new table rows, pools filling); BenchmarkTrainAllocs reports
// allocs/batch.
//
// # Timing
//
// Result.Seconds counts the training loop (waiting for batches included);
// evaluation and the preparation of in-memory data are excluded.
//
// # Files
//
//   - trainer.go: Options, Trainer (New, Declare, Run) and its state: a batch's pull, routing and push ring; Result and Eval.
//   - pipeline.go: one run of the trainer: the tracker's actions carried out, and the pipeline read, batch, pull, trainLoop; progress lines.
//   - reread.go: reread, train.reread_shared: a batch's rows shared with the batch before it read again after its push.
//   - syncmode.go: sync mode's rounds: pulls and pushes with every worker at the same step (ErrSync).
//   - valid.go: the validation the tracker asks for, and keeping the best model.
//   - data.go: Data (LoadData, TrainDigest): a job's training and test data from files, sources or the generator, with its shape and memory check.
//   - input.go: input, how the job's files are opened: the text formats' FileSource, or Parquet's source (train.columns), checked before training.
//   - shuffle.go: the shuffled window over file blocks and the generated source.
//   - kafka.go: a Kafka job: dealt partitions, their positions stored in the model, the workers done.
//   - job.go: JobResult, RunJob and the job.Model of a CTR job (Prepare, Train, the final export).
//   - warm.go: a warm start: the tables loaded from an export before training.
//   - metrics.go: ProgressMetrics, a worker's training metrics for Prometheus.
package ctrtrain
