// Package shard serves one AMS shard: the stripe owners that hold the rows of
// every sparse table and the shard's ranges of the dense parameters, the
// split of requests across stripes, and the gRPC service (amspb.AMS).
//
// A worker in the same process (the embedded local cluster) may skip gRPC:
// NewService is the service itself, and Local adds PullRows and PushRows,
// which read and write the worker's batch buffers in place
// (ams.TableRequest.Pos scatters a shard's rows among the batch's, and
// ams.DenseRequest is a whole dense vector of which the shard touches its
// range). They check and fail as the service does. Local satisfies
// client.LocalShard, an interface on ams types, and neither package
// imports the other.
//
// # Errors
//
// The service's methods and Local's fail with the shard's own errors:
// sentinels of package ams (ams.ErrStaleVersion, ams.ErrBadRequest,
// ams.ErrClosed, ...) wrapped with context, never a gRPC status. The
// server NewGRPCServer builds (ServerOptions) answers each as a status of
// the error table, amspb.Errors: the code of the first entry the error
// matches and an ErrorInfo detail naming every entry it matches, which
// the client turns back into an error that matches the same sentinels.
//
// # Concurrency model
//
// A shard's rows are split into S stripes by a hash of (table, id). Each
// stripe is owned by one goroutine, started by New and stopped by Close,
// which alone reads and writes the stripe's ams.Table cores and dense
// vectors. A pull or push is split by stripe; each owner serves its part and
// writes into disjoint positions of the request's buffer; the request
// returns when every owner has signalled its part done (a WaitGroup gives
// the happens-before edge). No mutex or atomic guards row data, and no lock
// covers a table or the shard on the pull/push path. The declared table set
// is an immutable value behind an atomic pointer, replaced (copy on write)
// by Declare, which alone takes a mutex.
//
// A pull's or push's split (one task per stripe, its id and position
// lists, the WaitGroup) lives in a workspace from the shard's sync.Pool,
// given back once every owner is done with it, so that serving batches
// of about the same size allocates nothing per request; a workspace whose
// lists outgrew a MiB is left to the collector instead.
//
// # Protocol
//
// Every request carries the cluster version; a request whose version is not
// the shard's is refused with ams.ErrStaleVersion (gRPC ABORTED over the
// wire) and never applied. The version only moves forward, and only by
// the scheduler's order: a Restore starts the version it carries, and so
// does Begin (a Restore of snapshot 0: a new cluster's birth), before
// anything is loaded, so that no request of the version replaced is
// applied after it began. Both empty the shard first and give the new
// version to every stripe owner, which refuses a pull or push of another
// version: a request that passed the shard's check just before the
// restore is refused by the owners, not applied to the restored rows. A
// shard started with Options.Blank (every cluster member is) serves no
// version until then, so that a process restarted empty under the id of
// a live shard takes no part in its predecessor's version.
//
// # Applied pushes
//
// A push that names its batch (ams.Origin: a worker and the batch's number
// in its job) is applied once: the shard records the batch, by worker, as
// sorted ranges (ams.Applied) before dispatching the push, and refuses a
// second push of it with ams.ErrDuplicatePush, applying nothing. The
// records are part of the model: a begin empties them, a snapshot holds
// each shard's under its index (ams.AppliedKey) and a restore takes them
// back with the rows (onto another layout, every part's merged by
// worker). Stats returns them, so that a worker's end-of-job check and
// the scheduler's snapshots (checkpoint.Consistent) compare the workers'
// checkpoints with what the shards applied. appliedMu guards them: one
// short critical section per push, never taken by a stripe owner.
//
// # Snapshots
//
// WriteSnapshot writes the shard's part of a snapshot (package snapshot):
// one sorted table file per table and stripe, at most one per core
// (parts, snapshot.TablePartName), every row with its values, optimizer state and
// statistics, and one file per dense range. Each stripe's owner lists its
// rows in id order (ams.RowSet: the index read in bucket order, the pairs
// radix-sorted) and encodes them a chunk at a time, reading each row by
// its slot, while a goroutine per part hands the previous chunk to that
// part's sstable writer: the parts are written in parallel. A stripe of
// more than rangeRows rows is listed one id range at a time (the ranges
// cut from the stripes' ids counted in an ams.IDHistogram), so that the
// lists cost a range's rows, not the table's: without it a snapshot's
// lists added 24-26 bytes a row to the shard's peak memory. An
// export writes one file per table, the stripes' rows merged in id order.
// Restore reads every shard's files of a snapshot and keeps the ids the
// caller's owns function gives it, so a snapshot written by N shards
// restores onto M (the scheduler passes the new shard map's ShardOf);
// onto the layout it was written under (Ownership.SameLayout) a shard
// reads only its own files. Both run on the owners too, so they need no lock, but a
// consistent snapshot needs the pushes paused: the scheduler's job, not
// the shard's. The Restore RPC runs one restore at a time. The RPCs
// use only stores under the shard's store roots (Resource bounds, 6).
//
// # Sync mode
//
// PushRound keeps a worker's part of a round instead of applying it; a
// round is applied, in round order and once only, when every worker has
// its part in or has left the epoch, with the parts' gradients averaged,
// and the state entries of its parts are stored with it. WaitRound
// returns once every earlier round is applied. The progress is the state
// entry SyncStateKey, equal on every shard whenever the workers are
// paused, kept in snapshots and given to every shard by a restore;
// unfinished rounds are not kept (see syncround.go). syncMu guards it and
// is taken before stateMu, never by the asynchronous paths.
//
// # Resource bounds
//
// What one client can make a shard hold or touch, however it builds its
// requests:
//
//  1. A gRPC message over ams.MaxMessageBytes is refused from its 5-byte
//     length prefix (the server's MaxRecvMsgSize), before its body is
//     read: the shard reads at most the HTTP/2 flow-control window of it
//     (16 MiB) and the caller gets ams.ErrTooLarge. A message the server
//     takes is read into frames, copied whole by the codec and again by
//     the protobuf decoder, so a request costs about three times its
//     message while it runs.
//  2. A pull or push within the message limit but beyond the request
//     limits (ams.CheckRequestSize: ids, row values, dense values) is
//     refused with ams.ErrTooLarge before a reply is allocated or a row
//     created, by the service and by Local alike: one pull with create
//     adds at most ams.MaxRequestIDs rows.
//  3. The buffers of a message go back to the server's buffer pool, which
//     keeps at most amspb.PoolBytes of them and none over 16 MiB; the rest
//     is garbage once the call returns, so one collection brings the heap
//     back within amspb.PoolBytes of where it was before the call. The
//     runtime gives the pages back to the system a collection later, and
//     an idle shard collects every two minutes: a cmd/ams that took a
//     170 MiB push was back from 555 MB to 66 MB of RSS after 4 minutes.
//  4. Sync mode keeps parts of at most 2 x MaxRoundsAhead rounds: the
//     MaxRoundsAhead rounds from the next one to apply in its epoch and
//     the first MaxRoundsAhead of the next epoch, with at most one part
//     per worker in each. A part beyond them is refused with
//     ams.ErrRoundAhead, a second part of a worker with
//     ams.ErrRoundApplied; neither keeps anything.
//  5. State entries are bounded by MaxStateKey, MaxStateValue and
//     MaxStateKeys.
//  6. A frame of the data plane's own TCP stream is refused over
//     ams.MaxMessageBytes from its length prefix, as a gRPC message is,
//     and its buffer grows with the bytes that arrive (ams/stream's
//     eagerFrame): a peer that announces a large frame and sends little
//     of it makes the shard hold at most 4 MiB, or twice what it sent, on
//     that connection. Across connections memory follows the bytes the
//     clients actually send (gRPC reads a message in the 16 KiB frames
//     that arrive, not at its announced length); a shard-wide budget of
//     bytes in flight is not built.
//  7. The RPCs that name a store (WriteSnapshot, Restore, WriteExport)
//     reach only locations under the store roots the shard was started
//     with (Options.Stores, cmd/ams -store). Each passes its location
//     through one check (checkStore) before it creates, opens or changes
//     anything, a restore's version included: cleaned (a directory made
//     absolute and its links resolved, an hdfs:// URI parsed), it must
//     be a root or lie under one component by component, on the root's
//     namenode for HDFS; any other is refused with
//     ams.ErrStoreNotAllowed (gRPC PERMISSION_DENIED). A shard started
//     with no roots refuses every location.
//  7. A server built with TLSServerOptions (mutual TLS, package
//     cluster/tlsconf) checks the role of every call, the OU of the
//     caller's verified certificate, against Roles before the shard sees
//     it: admin RPCs (WriteSnapshot, Restore, WriteExport) are the
//     scheduler's, the data plane the workers'; any other call is refused
//     with ams.ErrRoleNotAllowed (gRPC PERMISSION_DENIED). A worker
//     whose certificate names it (tlsconf.PeerWorker: CN worker-3, not
//     the shared CN worker) has its pushes' origins and its checkpoint
//     keys held to that name, on the stream and the unary calls alike
//     (checkWorker); another worker's are refused the same way. Without
//     TLS every call is served, as before.
//  8. A push's gradient rows holding a NaN or ±Inf are refused (or
//     clipped, by the table's nonfinite setting) and counted, the rest
//     of the push applied; a dense range's such gradient is refused and
//     counted; values a client sets holding one (LoadRows, where the
//     table does not clip; SetDense; a declaration's initial dense
//     values) refuse the call with ams.ErrNonFinite before anything is
//     set. Stats, the worker's summary and the metrics report the counts
//     (ams/doc.go, Non-finite gradients and values).
//
// The rows of a table are bounded only by its budget (ams.Budget, see
// Row lifecycle): without one, many requests, each within its limits,
// can still create rows without end.
//
// # Row lifecycle
//
// A table may admit IDs by a policy (ams.TableSpec.Admission, package
// filters): the stripe owner asks the table's filter before it creates a
// row, an ID not admitted reads as the row it would have had, and its
// gradients are dropped; both are counted. Stripes are chosen by virtual
// partition (the ID's ams.Partition modulo the stripes), so that every
// sighting of a partition reaches the one filter that holds its state;
// the partition count is the shard map's, given by a begin or a restore
// (Options.Partitions until then). The count policy's states go into
// snapshots per partition and a restore gives each partition's state to
// the stripe of its new shard (admission.go).
//
// Each stripe owner also sweeps its tables' rows with their expiry rules
// (ams.TableSpec.Expiry, Options.Expire) and keeps each table within its
// budget share by CLOCK eviction, between tasks (lifecycle.go). Rows
// carry the shard's sample clock at their last update: the samples of the
// pushes applied (ams.Origin.Samples), which the records of applied
// pushes hold, so that a restore brings the clock back with the rows.
//
// # Time
//
// Row statistics (last-touched time) use Options.Now, in whole seconds.
//
// # Files
//
//   - shard.go: Options, Shard (New, Declare, Pull, Push, the dense ranges, Stats, Close): the catalog and the split of requests over the stripes.
//   - stripe.go: a stripe, its owner goroutine and the tasks it runs on its rows.
//   - lifecycle.go: the rows' lifecycle on their owner: expiry sweeps, the memory budget's CLOCK eviction, tombstones (DrainTombstones).
//   - admission.go: admission filter states in snapshots, and each partition's given back on a restore to the stripe that now holds it.
//   - tiered.go: tiered tables: rows beyond the DRAM budget in the cold tier (package tier), TierStats.
//   - applied.go: the records of applied pushes (Applied), so that no batch is applied twice.
//   - syncround.go: sync mode: Round, RoundPart, the rounds' accumulators and WaitRound.
//   - state.go: StateEntry, PutState and GetState: named values kept beside the model.
//   - snapshot.go: WriteSnapshot, Begin and Restore: a shard's part of a snapshot, written and read back.
//   - export.go: ExportOptions and WriteExport, a shard's part of a model export.
//   - load.go: LoadRows, rows set from an export (a warm start).
//   - stores.go: the store locations a shard's RPCs may name (Options.Stores).
//   - grpc.go: NewService and NewGRPCServer, the AMS service over the shard, and ServerOptions.
//   - stream.go: the stream data plane's Handler (package ams/stream) over the shard, which NewGRPCServer registers.
//   - local.go: Local, the data plane for a worker in the same process (PullRows, PushRows).
//   - auth.go: Roles, the callers allowed each RPC under TLS, TLSServerOptions, and a named worker's checks (checkWorker).
package shard
