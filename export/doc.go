// Package export defines the model exports a training job ships to
// serving: a full export of every row, then incremental ones (deltas) that
// hold what changed since the previous export, in a store of the snapshot
// package (a directory or HDFS). It never imports ams: the shards encode
// their rows with AppendRow and hand over table files; the scheduler
// writes the manifest.
//
// # Format
//
// Export seq lives in directory Dir(seq) = "exp-" + seq in 20 digits:
//
//	exp-00000000000000000007/
//	  tables/<table>/shard-00000.sst   one sorted table per table per shard
//	  dense/<name>                     a dense vector: float32, little-endian
//	  manifest.json                    written last
//
// A table file is a Pebble sstable of blocks of rows
// (snapshot.CreateBlockTableFile, snapshot.LayoutBlocks): each entry,
// keyed by its first id's 8 big-endian bytes, holds up to 128 rows in id
// order, their ids as varint gaps and their values one after the other,
// so that a row costs its values and about 6 bytes of id (exports written
// before, one sstable key per row, are still read: the file's FileMeta
// names its layout). Its rows hold values only, no optimizer state or
// statistics, encoded by the table's Quant: FP32 (exact), FP16, or Int8
// with a per-row scale (see the constants for their errors). A delta's
// file also holds deletions (snapshot.TableWriter.Delete): the ids of the
// rows expiry and the memory budget removed since its base, so that
// serving forgets them too. An id with no row in the chain
// reads as the table's initializer would make it (Table.Init), as in
// training.
//
// The manifest names its files with their sizes and CRC-32C, the kind
// (full or delta), for a delta its base (the previous export of its
// chain) and the full export its chain starts at, the cut (cluster
// version, trained samples), and the job's configuration, from which a
// server rebuilds the network. It carries a SHA-256 of its own JSON.
//
// # Chains
//
// A server loads the newest intact full export and then every delta that
// names the previous link as its base, in sequence order (Next); it
// applies later deltas the same way as they appear. A delta whose base is
// not the chain's last export (a missing link), one without a manifest
// (being written, or abandoned), or one whose manifest or files do not
// check out stops the walk: Next reports why, and the server stays on the
// last good link. A newer full export starts a new chain. Prune keeps the
// newest K full exports and everything after the oldest of them.
//
// # Invariants
//
//  1. A manifest is committed after every file it names (snapshot store
//     invariant 1 makes each file appear whole); an export without one
//     does not exist.
//  2. A full export's Full is its Seq and it has no Base; a delta's Base
//     is below its Seq and at or above its Full (Commit and ReadManifest
//     refuse other manifests).
//  3. Next returns a prefix of the chain: each export it returns is intact
//     (Verify) and names the previous one as its base; it never skips a
//     link.
//  4. DecodeRow refuses a row of the wrong length or with a value that is
//     not finite, so that no export can make serving score NaN.
//
// # Files
//
//   - format.go: Manifest, Table, Dense and Part, the file names, Commit, ReadManifest, Verify and Exports.
//   - chain.go: Next, the exports a reader applies next (a full export and its deltas), Prune and RemoveIncomplete.
//   - read.go: ReadTable, FileReader (OpenTableFile) and ReadDense: an export's rows (all, or one file's in id order) and dense vectors.
//   - quant.go: the encodings of a table's values (fp32, fp16, int8...): CheckQuant, RowBytes, AppendRow, DecodeRow.
//   - convert.go: Convert, an export re-encoded into another store.
//   - policy.go: Policy, where exports go, when they are taken and how rows are encoded.
package export
