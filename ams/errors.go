package ams

import (
	"errors"
	"fmt"
)

// The errors of the AMS packages (this one, shard and client), all
// declared here. They are returned wrapped with context; match them with
// errors.Is. Each one survives a gRPC round trip: the shard's server sends
// it as a status that names it (amspb.Errors is the table) and the client
// turns that back into an error that wraps it, so a caller matches the
// same sentinels whether a shard answered over gRPC or in its process.
var (
	// ErrStaleVersion: a request made for another cluster version than the
	// shard serves. It is refused, never applied.
	ErrStaleVersion = errors.New("ams: stale cluster version")
	// ErrBadShardMap: a shard map that fails validation.
	ErrBadShardMap = errors.New("ams: bad shard map")
	// ErrUnknownTable: a request for a table the shard does not hold (or,
	// on the client, one that was never declared through it).
	ErrUnknownTable = errors.New("ams: unknown table")
	// ErrBadSpec: an invalid TableSpec, DenseSpec, OptimizerSpec or
	// InitSpec. Validate joins one wrapped ErrBadSpec per problem.
	ErrBadSpec = errors.New("ams: bad spec")
	// ErrDimMismatch: values or gradients whose length does not fit the
	// table's dim or the dense variable's range, or a caller's buffer that
	// does not hold ids x dim values.
	ErrDimMismatch = errors.New("ams: dimension mismatch")
	// ErrNotInitialized: an update of a dense variable whose initial values
	// were never set.
	ErrNotInitialized = errors.New("ams: dense variable not initialized")
	// ErrBadRequest: a malformed request to a shard (lengths that do not
	// match, a payload that does not decode, a bad snapshot store).
	ErrBadRequest = errors.New("ams: bad request")
	// ErrTooLarge: a request beyond the limits of one request or one
	// message (MaxRequestIDs, MaxRequestValues, MaxDenseValues,
	// MaxMessageBytes). It is a case of ErrBadRequest, which errors.Is
	// matches too.
	ErrTooLarge = fmt.Errorf("%w: too large", ErrBadRequest)
	// ErrNonFinite: values a client sets (a warm start's rows or dense
	// range, a dense vector's initial values) that hold a NaN or ±Inf,
	// where the table refuses them (TableSpec.NonFinite; a dense vector
	// always does). The call is refused whole, nothing set. It is a case
	// of ErrBadRequest. (A push's non-finite gradient rows are not an
	// error: they are skipped and counted, see the package doc.)
	ErrNonFinite = fmt.Errorf("%w: non-finite value", ErrBadRequest)
	// ErrConflict: a declaration that contradicts an existing one.
	ErrConflict = errors.New("ams: declaration conflicts with existing")
	// ErrUnknownDense: a dense vector that was never declared.
	ErrUnknownDense = errors.New("ams: unknown dense vector")
	// ErrRestore: a snapshot that does not fit the restoring shard.
	ErrRestore = errors.New("ams: restore")
	// ErrRoundApplied: a sync-mode part for a round the shard has already
	// applied (or a second part of one worker for one round).
	ErrRoundApplied = errors.New("ams: sync round already applied")
	// ErrRoundAhead: a sync-mode part for a round beyond the window of
	// rounds a shard accepts ahead of the next one it applies (see
	// shard.MaxRoundsAhead). It is refused and kept nowhere.
	ErrRoundAhead = errors.New("ams: sync round too far ahead")
	// ErrDuplicatePush: a push of a worker's batch (ams.Origin) that the
	// shard has already applied. It is refused and applied nowhere: the
	// model is ahead of the checkpoint the worker resumed from.
	ErrDuplicatePush = errors.New("ams: batch already applied")
	// ErrNoExportBase: a shard asked for an incremental export has no
	// base for it (it has not written the export named as the base since
	// its model began, or tombstones since then were lost); the caller
	// takes a full export instead.
	ErrNoExportBase = errors.New("ams: no base for an incremental export")
	// ErrStoreNotAllowed: a snapshot or export store location (a
	// directory or an hdfs:// URI) that lies under none of the store roots
	// the shard was started with (shard.Options.Stores, cmd/ams -store),
	// or any location when it was started with none. It is refused before
	// anything is created or opened.
	ErrStoreNotAllowed = errors.New("ams: store location not allowed")
	// ErrRoleNotAllowed: a call whose caller's role (the role its TLS
	// certificate names, package cluster/tlsconf) may not make it: only
	// the scheduler and an admin write snapshots and exports and restore,
	// only workers (and admins) push. Shards refuse it only with TLS on.
	ErrRoleNotAllowed = errors.New("ams: role not allowed")
	// ErrTier: the cold tier of a tiered table (its Pebble DB on the
	// shard's disk) failed a read or a write: a disk that is full, gone or
	// read-only. The rows the failed write held stay in DRAM (none is
	// lost), and the table refuses requests from then on: the job fails
	// and recovers from its last snapshot once the disk is mended.
	ErrTier = errors.New("ams: cold tier failed")
	// ErrUnavailable: a request that did not reach its shard, or that the
	// shard could not serve because it stopped: not listening, connection
	// lost, closed.
	ErrUnavailable = errors.New("ams: shard unavailable")
	// ErrClosed: the shard was closed. It is a case of ErrUnavailable,
	// which errors.Is matches too.
	ErrClosed = fmt.Errorf("%w: shard closed", ErrUnavailable)
	// ErrProtocol: a worker and a shard that do not speak the same data
	// plane protocol (package ams/stream's ProtocolVersion), or a shard of
	// a build older than the stream data plane: run one build on both.
	ErrProtocol = errors.New("ams: data plane protocol mismatch")
)
