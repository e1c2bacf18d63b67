// Package client is the worker side of the AMS protocol: it routes the
// unique ids of a batch to shards through the shard map (virtual partition
// of (table, id) -> shard), sends one merged request per shard to all shards
// in parallel, and scatters the replies back into the caller's buffers.
//
// NewLocal adds a Resolver for shards that serve in the same process: the
// data plane to those is a direct call, on the caller's own buffers when
// the shard offers it (LocalShard, an interface on package ams's request
// types that shard.Local satisfies; the client never imports the shard),
// and gRPC stays for the rest.
//
// # Errors
//
// A call's error wraps, with the operation and the shard, the errors the
// shard failed with, so that errors.Is matches the same sentinels of
// package ams on either path: over gRPC the status names them (the error
// table, amspb.Errors, turned back by amspb.FromStatus), in this process
// they are the shard's own. A shard that cannot be reached, or that
// closed, is ams.ErrUnavailable (ams.ErrClosed is a case of it); a call
// whose context ended fails with context.Canceled or
// context.DeadlineExceeded; a buffer that does not hold ids x dim values
// is ams.ErrDimMismatch, a table never declared through the client
// ams.ErrUnknownTable.
//
// # Routes
//
// A Route is a batch's ids split by shard, computed once (NewRoute, Add)
// and reused: a worker pulls a batch's rows through it (PullRoute, or
// PullRound in sync mode) and pushes the batch's gradients through the
// same route (PushRoute, PushRound), so the push does not route again.
// A route keeps its own copies of the ids and reuses its buffers from
// batch to batch (Reset), allocating nothing once they have grown. Pull
// and Push take tables with their ids and route each call anew. The
// client routes only to shards; each shard splits its part by stripe
// itself.
//
// A Client is safe for concurrent use. Pull and Push allocate their own
// routing state; a Route is read, not written, by the calls that use it,
// which may share it. Buffers passed in are owned by the caller and are
// not retained after a call returns.
//
// Every pull and push takes a workspace from the client's pool (its
// arguments, the shards' errors, the request lists of direct calls, one
// goroutine body per shard made once) and gives it back when it returns:
// on the direct path a PullRoute or PushRoute (PushBatch) allocates
// nothing once the pool and its lists have grown.
//
// # The data plane
//
// Pulls and pushes to a shard in another process travel on the client's
// stream to it (package ams/stream): one long-lived stream per shard — a
// TCP connection of its own to the shard's port for a client made on
// DialOptions alone (plaintext), a gRPC stream for a client given dial
// options of its own (TLS credentials), so that nothing leaves their
// protection —
// each pull or push one frame of the stream's own layout, built from the
// route and the batch's buffers in a pooled buffer, with the reply's rows
// scattered into the batch's buffers as it arrives. Calls of any number
// of goroutines share the stream (a pipelined worker has its next pulls
// and its last pushes in flight at once). Sync-mode rounds (PullRound,
// PushRound), whose pulls wait at the shard, and every other call go
// through the AMS service's gRPC methods.
//
// # Files
//
//   - client.go: Client (New, Declare, Pull, Push, PushBatch, the dense vectors, Stats, Usage, Applied), DialOptions, Table, Dense and Vector.
//   - call.go: call, one pull or push on every shard, its parts run in parallel; calls are pooled so the direct path allocates nothing.
//   - route.go: Route, a batch's unique ids split by shard once for its pull and its push.
//   - stream.go: pulls and pushes over each shard's stream (package ams/stream): the frames built from a route, the reply's scatter.
//   - direct.go: DataPlane, LocalShard and Resolver, NewLocal: calls to shards in this process without gRPC.
//   - sync.go: Round, PullRound and PushRound of sync mode.
//   - state.go: StateEntry, PutState and GetState: named values kept beside the model.
//   - snapshot.go: SnapshotOptions, WriteSnapshot, Restore and RestoreEach.
//   - export.go: ExportOptions and WriteExport, a model export of every shard.
//   - load.go: LoadRows and SetDense, a model set from an export (a warm start).
package client
