// Package amspb holds the generated protobuf and gRPC code of the AMS shard
// protocol (ams.proto). The generated files are committed so that builds
// need no code generator; the regeneration command is in ams.proto.
//
// Beside them: the codec and buffer pool of AMS traffic (ServerOptions,
// DialOptions), and the error table, Errors, which carries every sentinel
// of package ams across a call. The pool (BufferPool) hands out buffers
// without zeroing them and keeps, for reuse, at most PoolBytes of them,
// none over 16 MiB: whatever a burst of large messages took beyond that
// is left to the garbage collector when they are done. The codec encodes
// a pull reply and a push request by hand, splicing their payloads in
// without a copy, and decodes a pull reply for Pull into a PullReply
// whose payloads alias the received buffer until Release. A server
// registered with RegisterPooledServer answers a pull with a PooledReply:
// its rows are in buffers of the server's pool, which the reply owns and
// gRPC gives back once the reply is sent (the codec encodes them as
// pool-owned buffers), so a shard does not allocate a reply a pull.
//
// A server built with ServerOptions answers an error with the code of the
// first entry it matches and one google.rpc.ErrorInfo (domain
// ErrorDomain) naming each entry it matches (ToStatus); the client wraps
// the named sentinels, the message and the status (FromStatus), so
// errors.Is matches on both sides. A status that names none, from gRPC
// itself, is matched by its code to a Bare entry: UNAVAILABLE is
// ams.ErrUnavailable, RESOURCE_EXHAUSTED (a message over the size limit,
// ams.MaxMessageBytes, refused by gRPC) ams.ErrTooLarge, CANCELED and
// DEADLINE_EXCEEDED the context's errors.
//
// # Files
//
//   - codec.go: Codec, gRPC's protobuf codec with buffers of a BufferPool, and the server and dial options that install it.
//   - pool.go: BufferPool, size-tiered byte buffers, and its gRPC options.
//   - pooled.go: PooledReply and RegisterPooledServer: a pull reply's rows in pool buffers gRPC gives back.
//   - pullreply.go: PullReply and Pull: a pull reply whose rows alias the received bytes.
//   - zerocopy.go: the pull reply and push request encoded by hand without copying their payloads.
//   - convert.go: the From and To conversions between ams types and their wire form.
//   - errors.go: Errors, the table of sentinels, gRPC codes and reasons, with ToStatus and FromStatus.
package amspb
