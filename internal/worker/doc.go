// Package worker is the training loop of a worker process: it turns samples
// into batches, pulls the batch's unique embedding rows and the dense
// parameters from the AMS shards, runs the MLP forward and backward on the
// worker's cores, and pushes gradients back asynchronously.
//
// # Per batch
//
//  1. Deduplicate feature IDs per table (sparsenet.Batch).
//  2. Pull the unique rows and the dense parameters: one merged request per
//     shard, all shards in parallel. Steps 1 and 2 of the next
//     train.prefetch_batches batches run while this one trains.
//  3. Pool rows per (sample, field) (value-weighted sum or mean); MLP
//     forward; sigmoid + binary cross-entropy (mean over the batch); MLP
//     backward.
//  4. Sum gradients per unique ID (sparsenet.Batch.Scatter).
//  5. Push sparse and dense gradients (one request per shard) asynchronously: at most
//     Train.MaxInflightPushes pushes are in flight; the next batch trains on
//     whatever the shards hold (XDL's asynchronous mode).
//
// # Ownership
//
// A Trainer is used by one goroutine. The fetch goroutines (one per
// prefetched batch, each owning its batch state until it signals done) and
// the push goroutines (each owning one push buffer from a fixed ring until
// its push completes) are joined before Run returns, on success and on
// error. RunJob also cancels training when the worker's etcd lease is lost.
//
// # Timing
//
// Result.Seconds counts training only: evaluation and data loading are
// excluded, so samples_per_second compares with a reference that also
// times training only.
package worker
