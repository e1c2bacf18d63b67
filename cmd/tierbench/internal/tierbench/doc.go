// Package tierbench grows one table on an in-process AMS shard to a given
// number of rows by training it, a batch at a time, and reports the
// throughput and the process's memory as it grows (issue 25's scale
// test; cmd/tierbench, bench/tiered.sh).
//
// A batch is a pull with create and a push of random gradients of Batch
// unique ids: a NewFraction of them never seen (the table grows by that
// many rows a batch), the rest drawn from a Zipf law (exponent ZipfS) over
// the ids created so far, oldest first (rank k is the k-th id created):
// the popular ids are a stable head and the new ones a long tail, as in a
// stream of hashed features. The ids are the ranks mixed (ams.Mix64), so
// they spread over stripes and keys as hashed features do.
//
// Every Every rows it writes a CSV row: rows, DRAM rows, cold rows, the
// process's RSS (VmRSS), the cold tier's files on disk, and since the
// previous row the pulled ids per second, the DRAM hit ratio and the disk
// reads per batch.
//
// Invariants:
//
//  1. The batches are a pure function of the options (Seed): two runs,
//     in memory and tiered, train the same rows.
//  2. Run closes the shard, and with it the cold tier, before it returns.
//
// It is cmd/tierbench's library (only that command imports it).
//
// # Files
//
//   - tierbench.go: Options and Run.
package tierbench
