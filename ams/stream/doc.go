// Package stream is the data plane between a worker and a shard in
// another process: one long-lived bidirectional gRPC stream per (worker,
// shard) that carries pipelined pulls and pushes as frames of its own
// flat layout (frame.go), not as protobuf calls. A pull or push is one
// frame, built straight from the batch's buffers into a pooled buffer;
// the shard reads its ids and gradients in place and gathers a pull's
// rows straight into the reply's frame; the worker scatters a reply into
// the batch's buffers. There is no per-call metadata, no HTTP/2 headers
// or trailers, no handler goroutine per call, and no protobuf copy of a
// payload.
//
// # Transports
//
// The frames travel on one of two transports, on the shard's one port:
//
//   - a TCP connection of the stream's own, in plaintext clusters: the
//     worker dials the shard's gRPC address and opens with Magic; the
//     shard's listener (Mux) tells it from gRPC's HTTP/2 preface and
//     serves it (ServeConn). Each frame follows its 4-byte length, and is
//     read from the socket straight into a pooled buffer: no HTTP/2
//     frames, no flow-control bookkeeping, no gRPC objects per message.
//   - a gRPC stream, the service xps.ams.v1.AMSData (FullMethod) beside
//     the AMS service: where the cluster speaks TLS (the shard's TLS,
//     roles — shard.Roles names FullMethod — and message size limit
//     apply), where a worker was given dial options of its own, and
//     where a shard answers a TCP stream with anything but its hello. A
//     worker falls back to it once for good per shard. amspb's codec moves
//     a frame as an amspb.Raw.
//
// Both carry the same frames and the same hello, and fail a broken
// stream's calls alike (UNAVAILABLE). A TCP frame over
// ams.MaxMessageBytes is refused from its length, unread; a smaller one
// is read into a buffer of at most eagerFrame (4 MiB) that doubles as its
// bytes arrive, never one of the length announced before the bytes are
// there.
//
// A Conn (the worker's side) sends requests of any number of callers on
// one stream, tagged with ids, and its receiving goroutine hands each
// reply to its caller's Sink; several requests are in flight at once. A
// shard (Register, Handler) serves up to serveParallel requests of a
// stream at once and stops reading the stream while they are all being
// served, so gRPC's flow control holds a worker that sends faster than
// its shard serves: a worker's memory for a slow shard is its requests
// in flight, which its pipeline bounds.
//
// # Invariants
//
//  1. A frame decodes to exactly what was encoded, or to an error (a
//     short, long or inconsistent frame), never a panic (FuzzRequest,
//     FuzzReply); a request's error wraps ams.ErrBadRequest.
//  2. Every call gets exactly one answer: its reply, the shard's error (a
//     status of the error table, amspb.ToStatus), the stream's error when
//     it breaks (UNAVAILABLE for a reset), or its context's error. A
//     reply is delivered only to the call that is still waiting for it:
//     a call that gave up is never written into.
//  3. The Conn never sends a request twice. A broken stream fails its
//     calls in flight; the next call opens a new stream. A push that
//     failed may or may not have been applied: the worker's retry carries
//     the batch's origin, and the shard applies a batch once
//     (ams.ErrDuplicatePush).
//  4. Both sides start with a hello carrying ProtocolVersion: a peer of
//     another version, or a shard without the service (an older build),
//     fails the first call with ams.ErrProtocol, which names both.
//  5. A request's frame belongs to gRPC once sent and goes back to its
//     pool after the write; a received frame goes back to its pool once
//     served (shard) or delivered (worker). Steady-state traffic takes
//     its buffers from the pools: no heap allocation per frame.
//
// # Files
//
//   - frame.go: the frames' layout: RequestWriter, ParseRequest, WriteReply, ParseReply, the hello.
//   - conn.go: Conn, the worker's side: Do, the receiving goroutine, failure and reopening.
//   - server.go: Register, ServeConn, Handler and ReplyWriter, the shard's side.
//   - transport.go: the two transports (a gRPC stream, a TCP connection with length-prefixed frames) and Magic.
//   - mux.go: Mux, a shard's listener split between gRPC and TCP streams by their first bytes.
package stream
