// Package hdfstest is a loopback HDFS server for tests. It is NOT Hadoop: it
// is a small in-memory namenode and a single in-memory datanode that speak
// HDFS's real wire protocols, so that an unmodified HDFS client (we test
// with github.com/colinmarc/hdfs/v2) talks to it exactly as it would to a
// Hadoop cluster. Nothing is persisted; everything is lost on Close.
//
// # Usage
//
//	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: 64 << 10})
//	if err != nil { ... }
//	defer srv.Close()
//	client, err := hdfs.NewClient(hdfs.ClientOptions{
//		Addresses: []string{srv.NamenodeAddr()},
//		User:      "test",
//	})
//
// Close stops the listeners, closes every connection and waits for every
// goroutine the Server started; close clients first so they do not log
// errors about lost connections. cmd/hdfsd runs the same server as a process.
//
// The API:
//
//	func Start(opts Options) (*Server, error)
//	func (*Server) NamenodeAddr() string     // give this to clients
//	func (*Server) DatanodeAddr() string     // where the datanode listens
//	func (*Server) DatanodeXferAddr() string // what the namenode advertises
//	func (*Server) Blocks(path string) ([]Block, error)
//	func (*Server) CorruptBlock(path string, index int) error
//	func (*Server) Close() error
//
// Options documents each field and its default (Options.EnsureDefaults,
// Options.Validate). Blocks and CorruptBlock let tests look behind the
// protocol; their errors match ErrNotExist (and fs.ErrNotExist) when the
// file or block is missing.
//
// # Protocols
//
// Namenode: Hadoop RPC version 9 with simple authentication only (no SASL,
// no Kerberos). A connection starts with the preamble "hrpc", 9, 0 (service
// class), 0 (auth protocol), then a frame carrying the
// IpcConnectionContextProto (call id -3), whose effective user owns what
// the connection creates. Each request is a frame: a 4-byte big-endian
// length, then varint-delimited RpcRequestHeaderProto, RequestHeaderProto
// (declaring class org.apache.hadoop.hdfs.protocol.ClientProtocol) and the
// request message. Each reply is a frame holding an RpcResponseHeaderProto
// and, on success, the response message. Errors carry Java exception class
// names (java.io.FileNotFoundException,
// org.apache.hadoop.fs.FileAlreadyExistsException, ...), which the client
// maps onto os errors. An unknown method is answered with ERROR /
// ERROR_NO_SUCH_METHOD / org.apache.hadoop.ipc.RpcNoSuchMethodException.
//
// ClientProtocol methods served: getFileInfo, getListing (paged by
// Options.ListingLimit and startAfter), getBlockLocations, getServerDefaults
// (CRC32C, 512 bytes per checksum, no encryption), create, addBlock,
// updateBlockForPipeline, complete, renewLease, mkdirs, delete, rename2,
// getFsStats, getContentSummary, setPermission, setOwner, setTimes. Not
// served (RpcNoSuchMethodException): append, truncate, concat, symlinks,
// xattrs, ACLs, snapshots, delegation tokens, encryption zones, erasure
// coding, and everything administrative.
//
// Datanode: DataTransferProtocol version 28 without SASL or encryption.
// An operation is a 2-byte version, a 1-byte opcode and a varint-delimited
// op message; served are READ_BLOCK (0x51), WRITE_BLOCK (0x50, stage
// PIPELINE_SETUP_CREATE, no downstream targets) and BLOCK_CHECKSUM (0x55).
// Data moves in packets: a 4-byte payload length (counting itself, the
// checksums and the data, not the header), a 2-byte header length, a
// PacketHeaderProto, then one checksum per chunk and the data.
//
// # Invariants
//
//  1. The namespace is a tree of directories and files; a file is a list of
//     blocks, each with a cluster-unique id and a generation stamp. Only
//     the namenode changes it, under one mutex that is never held across
//     I/O, so concurrent connections see a serial history.
//  2. A file being written (after create, before a successful complete) is
//     leased to the client name that created it; only that client may
//     addBlock or complete it. Leases never expire; renewLease is a no-op.
//  3. A block's length is what the client committed (addBlock's previous,
//     complete's last). complete returns false, leaving the file open, until
//     every block has a finalized replica of exactly that length; the
//     datanode finalizes a replica before it acknowledges the last packet.
//     A zero-length last block (the Go client allocates one whenever a write
//     ends exactly on a block boundary) is dropped by complete.
//  4. The datanode verifies every packet's checksums before storing it (a
//     mismatch is acknowledged with ERROR_CHECKSUM) and keeps a checksum per
//     512-byte chunk next to the data. Reads start at the chunk boundary at
//     or before the requested offset and send the stored checksums, so data
//     damaged after the write (Server.CorruptBlock) fails the client's
//     verification.
//  5. Deleting or overwriting a file deletes its replicas at once.
//  6. No permission checks are made: any user may do anything. Owners,
//     groups, modes and times are stored and reported.
//
// # Files
//
//   - server.go: Server: Start, the two listeners, Close, Blocks and CorruptBlock.
//   - options.go: Options, EnsureDefaults, Validate.
//   - namenode.go: the namenode's session and its ClientProtocol methods.
//   - namespace.go: the tree of directories and files, leases, block lists.
//   - datanode.go: the datanode: READ_BLOCK, WRITE_BLOCK, BLOCK_CHECKSUM.
//   - blockstore.go: the replicas in memory with a checksum per chunk.
//   - wire.go: framing: the RPC preamble and frames, delimited messages, data transfer ops and packets.
//   - errors.go: the Java exception classes the server reports.
package hdfstest

//go:generate ./proto/gen.sh
