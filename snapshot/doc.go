// Package snapshot defines where model snapshots are kept: a Store is a
// tree of files under one root, on the local file system (DirStore) or on
// HDFS (HDFSStore), and OpenStore picks one from a location (a directory,
// or hdfs://HOST:PORT/PATH). This package never imports ams: the AMS
// encodes its rows and specifications and hands them over as bytes.
//
// # Format
//
// Snapshot seq lives in directory Dir(seq) = "snap-" + seq in 20 digits:
//
//	snap-00000000000000000007/
//	  tables/<table>/shard-00000.sst   one sorted table per table per shard (part 0)
//	  tables/<table>/shard-00000-001.sst   ... and its further parts, if any
//	  dense/<name>                     raw files (dense parameters)
//	  filters/<table>/shard-00000      a table's admission filter states, per shard (FilterName)
//	  manifest.json                    written last
//
// A table file is a Pebble sstable (written with Pebble's sstable writer)
// whose keys are the rows' ids as 8 big-endian bytes, so that key order is
// id order, and whose values are the rows as the AMS encodes them. A
// shard may split its rows of a table into parts (CreateTablePart,
// TablePartName: disjoint rows, each part sorted), so that its stripes
// write their files in parallel; readers take every part. Each
// shard writes its own files (CreateTable, WriteFile) and reports their
// FileMeta (size, CRC-32C, rows); whoever drives the snapshot writes the
// Manifest with Commit once every part is in: version, shard count,
// tables with their files, dense vectors, reader positions, config and
// shard map. The manifest carries a SHA-256 of its own JSON (with the
// checksum field empty), so a truncated or altered manifest is refused.
// A directory without a manifest is not a snapshot.
//
// Model exports (package export) are a tree of the same shape: numbered
// directories (SeqDir, SeqDirs), sorted table files (CreateTableFile,
// OpenTableFile), raw files, and a checksummed JSON manifest written last
// (JSONSum, CommitJSON, ReadJSON).
//
// Latest returns the newest snapshot whose manifest and every file check
// out (sizes and checksums read in full) and says why it passed over newer
// ones, so a restore falls back to the previous good snapshot; Prune keeps
// the newest K. Restoring onto another number of shards needs nothing
// from the format: every shard reads every file of a table and keeps the
// ids its partitions own.
//
// # Names
//
// A name is slash-separated and relative to the store's root, valid by
// io/fs.ValidPath ("a/b/c", no "..", no leading or trailing slash); ""
// names the root in List and Remove. Anything else is refused with an
// error wrapping ErrBadName.
//
// # Invariants
//
//  1. A file appears under its name only when its Writer's Commit returns
//     nil, and then whole: it is written under a hidden temporary name in
//     the same directory and renamed (atomic on both stores); Abort, or a
//     crash, leaves no file under the name. A committed file replaces an
//     existing file of the same name.
//  2. List returns the entries of one directory sorted by name, without
//     the temporary files of unfinished writers (names starting with '.'
//     or ending in "._COPYING_"). A directory that does not exist is an
//     error matching fs.ErrNotExist.
//  3. Remove of a name that does not exist is not an error (removing is
//     idempotent, so a half-done clean-up can simply be run again).
//  4. Open of a missing file is an error matching fs.ErrNotExist. A
//     Reader's ReadAt may be called from several goroutines.
//  5. HDFSStore reads are verified chunk by chunk (hdfsconn.VerifiedReader):
//     a corrupt replica is an error, never data.
//  6. Commit of a manifest happens after every file it names is committed;
//     Latest never returns a snapshot with a missing, short or altered
//     file or manifest (each refusal wraps ErrCorrupt).
//  7. Table keys strictly increase (Add refuses others with ErrOrder).
//  8. Prune never removes one of the newest K complete snapshots, nor an
//     incomplete one newer than every complete one (it may be in progress).
//
// # Files
//
//   - store.go: Store, Writer and Reader, OpenStore and DirStore, a Store in a directory.
//   - hdfs.go: HDFSStore, a Store in a directory on HDFS.
//   - memstore.go: MemStore, a Store in memory for tests.
//   - jsonfile.go: numbered directories (SeqDir, SeqDirs) and checksummed JSON manifests (CommitJSON, ReadJSON), shared with package export.
//   - format.go: Manifest, FileMeta and the table files (TableWriter, TableReader), raw files, Commit, Verify, Latest, Prune and RemoveAfter.
//   - blocks.go: LayoutBlocks, table files of blocks of rows (CreateBlockTableFile) and their decoding.
//   - policy.go: Policy, where a cluster's snapshots go and when they are taken.
package snapshot
