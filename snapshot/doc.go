// Package snapshot defines where model snapshots are kept: a Store is a
// tree of files under one root, on the local file system (DirStore) or on
// HDFS (HDFSStore), and OpenStore picks one from a location (a directory,
// or hdfs://HOST:PORT/PATH). The snapshot format itself (a manifest plus
// one sorted SSTable per table per shard) is written through a Store by
// the fault-tolerance work; this package never imports ams.
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
package snapshot
