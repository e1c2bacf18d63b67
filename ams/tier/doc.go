// Package tier is the cold tier of a tiered table (issue 25): the rows a
// shard's DRAM budget evicts, kept on local disk in one Pebble DB per
// shard instead of dropped, and read back in batches when a pull misses
// DRAM.
//
// A Store maps (table, id) to a row's bytes (values, optimizer state and
// statistics, encoded by the caller). Keys are the table's number and the
// id, both big-endian, so a table's rows are contiguous and sorted by id:
// a batch of sorted ids is read with one iterator, seeking forward, and a
// table is scanned or dropped as one key range.
//
// Durability is the snapshot's, not the Store's: there is no write-ahead
// log, and rows still in a memtable die with the Store (a shard that dies
// restores its tables, both tiers, from the last snapshot), so the
// Store's files are scratch space that Open may find from a dead process
// and that the shard discards (Options.Fresh). Blocks are not compressed
// (rows of floats do not compress), and each file has a Bloom filter for
// point lookups. Measured on a tiered job (a Get per id with the filters,
// against one iterator seeking forward through the batch's sorted ids):
// the iterator was 10% slower once the shard stopped asking for ids never
// written; an uncompressed store and no WAL took a third off its CPU.
//
// Invariants:
//
//  1. Get, Put and Delete take ids sorted strictly ascending (a batch's
//     unique ids after the shard's sort) and refuse others with
//     ErrUnsorted; Get sets found[i] and dst[i] for every i.
//  2. A row returned by Get or Scan is a copy owned by the caller.
//  3. Every error names the Store's directory; a disk that is full or
//     read-only fails the write that met it, with Pebble's error wrapped,
//     and never loses a row silently. Writes land in a memtable first:
//     when a flush or compaction (Pebble's background work) meets the
//     error, every write after fails with it (TestDiskFull), rather than
//     fill the memtables until writes stall for ever.
//  4. Close waits for Pebble's goroutines (compactions, flushes) to end.
//
// A Store is safe for concurrent use (Pebble's DB is); the shard's stripe
// owners issue a batch's reads together.
//
// # Files
//
//   - tier.go: Options, Store (Open, Put, Delete, Get, Scan, ScanFrom, IDs, Clear, DropTable, Stats): the rows of the disk tier in pebble.
package tier
