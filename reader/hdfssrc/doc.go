// Package hdfssrc lets the reader train from files on HDFS: FS implements
// reader.FS over an HDFS namenode with github.com/colinmarc/hdfs/v2, so a
// reader.FileSource, reader.ExpandPathsFS and reader.StatFilesFS work on
// hdfs://HOST:PORT/PATH names exactly as on local paths. Positions carry
// the full URI, so a resumed job reads from the same namenode and path;
// the guarantees of the local source (every sample once, exact resume from
// any saved position, file splits across workers) are the FileSource's and
// hold unchanged.
//
// Reads go through hdfsconn.VerifiedReader, so a corrupt replica is
// reported as a checksum error and never trained on (see package
// snapshot/hdfsconn for the client's gap this closes).
//
// ForPaths picks the file system of a job's paths: local when none is an
// HDFS URI, one FS when all are on one namenode, an error otherwise.
//
// # Invariants
//
//  1. An FS talks to one namenode; a name on another namenode, or one that
//     is not an HDFS URI, is refused with an error wrapping ErrOtherFS.
//  2. Every name an FS returns (Glob, Join) is a URI on its namenode.
//  3. An FS is safe for concurrent use (the client is); each File is not.
//
// # Files
//
//   - fs.go: FS (Dial, ForPaths), a reader.FS over HDFS: Open, Stat, ReadDir, Glob.
package hdfssrc
