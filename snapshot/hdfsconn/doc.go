// Package hdfsconn holds what every HDFS user of the project shares: the
// hdfs:// URI syntax, dialling a namenode with github.com/colinmarc/hdfs/v2,
// and a reader that works around a gap in that client's checksum handling.
//
// # URIs
//
// A file on HDFS is named hdfs://HOST[:PORT]/ABSOLUTE/PATH; the port
// defaults to 8020 (Hadoop's namenode RPC port). ParseURI splits such a
// name into the namenode address and the path; FormatURI joins them back.
// Query strings, fragments and user info are refused rather than ignored.
//
// # Verified reads
//
// The client checks every 512-byte chunk against its CRC32C, but when one
// Read asks for a chunk or more and a chunk fails, it hands the bytes of the
// failed read to the caller with a nil error and reports the failure only on
// the next read from the same block; when the failed chunk ends the block,
// that read never comes and corrupt bytes pass as good ones. Reads shorter
// than a chunk take the client's other path, which verifies the chunk
// before returning any of it. VerifiedReader therefore cuts every Read into
// reads shorter than a chunk. It costs throughput (measured in
// BENCHMARKS.md) and is what keeps a corrupt replica from training a model
// silently.
//
// # Invariants
//
//  1. FormatURI(ParseURI(s)) names the same file as s, with the port made
//     explicit and the path cleaned.
//  2. A VerifiedReader returns only bytes of chunks the client verified.
//
// # Files
//
//   - hdfsconn.go: URI with ParseURI and FormatURI, DefaultUser, Dial, VerifiedReader and Put.
package hdfsconn
