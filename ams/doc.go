// Package ams is the sparse parameter server shard (AMS, after XDL's
// "advanced model server"): it holds the embedding rows and optimizer state
// of a set of virtual partitions, and a part of the dense parameters.
//
// This file documents the storage core: Table (one sparse table in one
// stripe), DenseVar (one shard's part of a dense vector), the server-side
// Optimizers, and the specs that configure them. The core does no I/O,
// starts no goroutine and takes time as an argument (now, in seconds), so
// tests drive it deterministically. The stripe owners and the RPC server
// are built on top of it.
//
// # Concurrency: one owner per stripe
//
// A shard splits its rows into stripes; each stripe is owned by exactly one
// goroutine, which alone calls the methods of that stripe's Tables. No lock
// or atomic guards row data, so:
//
//  1. Table and DenseVar are not safe for concurrent use. Every call on one
//     of them comes from its owning goroutine (or is ordered with it by a
//     channel send or another happens-before edge).
//  2. Slices that alias table storage (Get, Range, DenseVar.Values and
//     State) must not escape the owner: copy them (Pull does) before
//     another goroutine reads them.
//  3. PullAt and PushAt let several owners fill or read disjoint rows of one
//     shared buffer: each owner gets its own ids and disjoint positions, and
//     the requester reads the buffer only after every owner has signalled
//     completion.
//
// # Slots
//
// A slot is a uint32 that names one row of a Table's single slab. Where
// XDL's ps-plus keys a row id into parallel tensors (values, state), a
// Table keeps everything a row owns in one slab row, so that a push
// touches one contiguous block besides its index entry:
//
//	[0, d)       values (d = Dim)
//	[d, d+sw)    optimizer state (sw = StateWidth(d), see below)
//	d+sw         last-touched time, a uint32 stored in a float32 word
//	d+sw+1       hit count, likewise
//
// The statistics words are read and written only through a uint32 view
// of the same memory, never as float32, so every bit pattern survives.
// Slots are internal: they never leave the Table and are not stable across
// snapshots, restores or shards (IDs are).
//
//  1. The index maps a feature ID (any uint64, 0 included) to its slot.
//     It is open addressing with linear probing over a power-of-two array
//     of packed (id, slot) buckets, load at most 3/4, bucket chosen by
//     Mix64(id ^ salt) so that a stripe split on Mix64(id) does not skew
//     it, and backward-shift deletion (no tombstones). Slot 0xFFFFFFFF marks
//     an empty bucket and is never handed out.
//  2. The slab stores rows in chunks of at most 16384 rows and about
//     1 MiB (fewer rows per chunk for wide rows; smaller chunks first, so
//     small tables stay small). The slab grows by adding chunks and never
//     moves a row. Chunks of 256 KiB and more, and index bucket arrays of
//     2 MiB and more, live outside the Go heap: in regions mapped with mmap,
//     aligned to 2 MiB and advised as transparent huge pages (regions grow
//     2, 4, ... 64 MiB; a region is unmapped when its table becomes
//     unreachable, an old bucket array right after a rehash). Smaller ones,
//     and everything under the purego build tag or off Linux, are plain
//     pointer-free Go slices. Either way the garbage collector never scans
//     a row. The race detector does not see mmap'd memory: the test suite
//     runs under -race with -tags purego (test.sh).
//  3. A slot is reused only after Delete removed its ID from the index:
//     Delete pushes the slot onto the Table's free list, and the next row
//     created (by the same owning goroutine, the only caller) takes the most
//     recently freed slot before the slab grows. A reused slot's values,
//     state and statistics are fully rewritten on creation, so nothing of
//     the deleted row survives.
//  4. The index never shrinks and the slab never gives chunks back; after
//     mass expiry, the free list absorbs new rows first.
//  5. Batch methods work in groups of 16 ids: they load the home index
//     buckets of the group, look the ids up, load the rows found (a push
//     also touches their statistics then), and only then serve the ids in
//     order, creating missing rows. The early loads have no branch on
//     their results, so a group's cache misses overlap. The observable
//     order is unchanged: rows are created, read and updated in id order,
//     and an ID repeated in a group is looked up again once an earlier
//     occurrence has created it.
//
// # Rows and statistics
//
// Pull with create and Push create missing rows: values from the table's
// InitSpec, state from Optimizer.InitState, last-touched = now, hits = 1.
// Afterwards each occurrence of an ID in a Push touches the row (but one
// whose gradient is refused, see Non-finite gradients and values):
// last-touched = now and hits + 1 (saturating at 2^32-1), so one
// pull-then-push training step adds 1. A Pull of an existing row reads it
// and changes nothing (a training pull is followed by the push that touches
// the row; a second random access per row on the pull path cost a tenth of
// // a shard's time); without create, a missing row reads as its initial
// value (the initializer's, a function of the table's spec and the ID) and
// is not created. Filters and expiry read the statistics through Stats and
// Range. A push also sets the row's dirty mark, which an incremental
// export takes (TakeDirty: see dirty.go).
//
// # Optimizer state layout
//
// Each optimizer keeps its state per row, in StateWidth(dim) float32 words
// laid out as below (d = dim), starting as given:
//
//	sgd       (none)                     width 0
//	adagrad   acc[d]                     width d      acc = initial_accumulator
//	adam      m[d] v[d] t                width 2d+1   all 0; t = the row's step count
//	ftrl      z[d] n[d]                  width 2d     all 0
//	momentum  v[d]                       width d      all 0
//
// The update rules themselves, with their reference loops and AVX
// kernels, are package model/optim's (see its doc); optimizer.go names
// them here.
//
// # Non-finite gradients and values
//
// A NaN or ±Inf never reaches a row or a dense parameter from a client;
// one bad client neither poisons the model nor stops the others:
//
//  1. A push checks the gradient rows of each group of ids before it
//     touches their rows (nonFiniteRows: on amd64 with AVX2 one kernel
//     call per group, 8 values at a time, in nonfinite_amd64.s; else
//     AllFinite's loop; a group with a bad row is served row by row). Under
//     the table's NonFinite policy "refuse" (the default) a row holding a
//     NaN or ±Inf is skipped: the row keeps its values, optimizer state,
//     statistics and dirty mark, a missing row is not created (nor asked
//     of the admission filter), and Counters.NonFiniteRefused counts it.
//     The push's other rows are applied and the push succeeds: refusing
//     the whole push would fail the worker's job, and a retry would carry
//     the same gradients.
//  2. Under "clip" the row is applied with each NaN as 0 and each ±Inf as
//     ±NonFiniteBound (ClipNonFinite, on a copy: a push never modifies
//     its gradients), and Counters.NonFiniteClipped counts it.
//  3. A dense vector always refuses: a gradient of a shard's range
//     holding a NaN or ±Inf changes nothing (values, optimizer state, the
//     schedule's step) and DenseVar.Refused counts it. Each shard checks
//     its own range of a push.
//  4. Values a client sets are checked before anything is set: a warm
//     start's rows (shard.LoadRows) are refused whole with ErrNonFinite,
//     or clipped and counted under "clip"; a dense range's values
//     (DenseVar.Set: a declaration's initial values, a warm start) are
//     refused with ErrNonFinite. A snapshot's rows are restored as
//     written (the shards' own data: refusing them could leave a cluster
//     unable to recover).
//  5. The counts are a table's Counters (and DenseUsage), reported by a
//     shard's stats, its metrics and the worker's summary.
//
// The check covers what clients send, not what the optimizers compute: a
// finite gradient large enough for its square to overflow (beyond about
// 1.8e19) still turns an accumulator infinite.
//
// # Deterministic initialisation
//
// The initial row of an ID is a pure function of (InitSpec, id, column):
// column c takes a value derived from Mix64 hashes of the seed, the ID and
// c (InitSpec.Fill has the formulas), with no random-generator state. So a
// row starts with the same values on any shard, stripe or shard count, in
// any creation order, and again when an expired ID comes back.
//
// # Requests to a shard
//
// TableRequest and DenseRequest name the ids and buffers of a pull or push
// for one shard: its stripe owners take them, and so does a shard in the
// worker's process, which the client calls on the worker's own batch
// buffers. They live here, on the floor below both, so that the client
// (which defines the interface it calls, client.LocalShard) and the shard
// (which satisfies it, shard.Local) never import each other. The client
// splits a batch's ids by shard once (client.Route) for the batch's pull
// and its push; a shard splits its part by stripe.
//
// # Limits of a request
//
// What one call can make a shard hold is bounded (limits.go):
//
//  1. One pull or push to one shard carries at most MaxRequestIDs ids,
//     MaxRequestValues row values (ids x dim over its tables) and
//     MaxDenseValues dense values (the shard's ranges of the vectors it
//     names or carries). CheckRequestSize tells; beyond, the request is
//     refused with ErrTooLarge, a case of ErrBadRequest. The client checks
//     each shard's part before sending it, the shard again (also in the
//     worker's process) before it allocates a reply or creates a row, so
//     one pull with create adds at most MaxRequestIDs rows. A shard's
//     range of a dense vector is at most MaxDenseValues: a larger one is
//     refused when declared.
//  2. One gRPC message is at most MaxMessageBytes: the largest request
//     within those limits, and room for names, framing and state entries.
//     A shard's server refuses a larger message from its length prefix,
//     before reading its body (ams/shard's doc has the other bounds of a
//     shard: buffers, sync rounds, state).
//
// The limits are 5 to 20 times the largest batches of the benchmarks. A
// budget of rows per table, which no single request can exceed but many
// can, is not one of them.
//
// # Specs and errors
//
// TableSpec, DenseSpec, OptimizerSpec and InitSpec back the YAML config,
// flags and the Go API. Zero fields mean "default" (EnsureDefaults fills
// them; every field's doc states its default); Validate reports every
// problem at once, each wrapping ErrBadSpec. Input from outside is
// checked and reported as an error (DenseVar.Set and Apply, Table.Load;
// the shard server checks batch lengths before it calls a Table, see
// ams/shard); a Table batch call whose lengths disagree panics, because
// the caller must have checked them.
//
// Every error sentinel of the AMS packages (the core's, the shard's and
// the client's) is declared in errors.go, package-prefixed and wrapped
// with context: match them with errors.Is. ErrClosed is a case of
// ErrUnavailable. The error table amspb.Errors gives each its gRPC code
// and the reason that names it on the wire, so that a client's error
// matches the same sentinel whether the shard answered over gRPC or in
// the worker's process; a test fails on a sentinel without an entry.
//
// # Files
//
//   - table.go: Table (NewTable, Pull, Push, Get, Load, Delete, Range): one stripe's sparse table, an index and a slab of rows.
//   - index.go: the pointer-free open-addressing index from feature ID to slot.
//   - slab.go: slab, chunked storage of fixed-width rows addressed by slot.
//   - frozen.go: Frozen (NewFrozen, Append, Pull, Set, Delete): the serving table, sorted runs of rows at 6 bytes an id beyond the values, rows added later in an overlay Table.
//   - rowmem.go: row memory: where slab chunks and large index arrays live (mmap'd outside the Go heap on Linux).
//   - rowmem_mmap.go: the mapped regions (Linux, not purego) and RowsOffHeap.
//   - rowmem_heap.go: row memory on the Go heap (other systems, purego) and RowsOffHeap.
//   - spec.go: OptimizerSpec, InitSpec, TableSpec with its Budget, and DenseSpec, with their defaults.
//   - optimizer.go: Optimizer, SGD, Adagrad, Adam, FTRL and Momentum: package model/optim's update rules under the table core's names.
//   - schedule.go: LRSchedule, a dense variable's learning rate warm-up and decays.
//   - init.go: the initializers of new rows (InitSpec.Fill).
//   - dense.go: DenseVar, one shard's part of a dense parameter vector with its optimizer state.
//   - lifecycle.go: Counters, the admission of new rows, RowInfo and Sweeper (expiry), and the usage reports (TableUsage, DenseUsage, TierUsage).
//   - dirty.go: dirty marks, the rows an incremental export takes (TakeDirty).
//   - nonfinite.go: the policies for NaN and ±Inf in gradients and values (AllFinite, ClipNonFinite, CheckFinite).
//   - nonfinite_amd64.go: the AVX2 kernel of nonfinite_amd64.s that finds non-finite gradient rows (amd64, not purego).
//   - nonfinite_other.go: the reference loop that finds non-finite gradient rows (other architectures, purego).
//   - applied.go: Origin, BatchRange and Applied: the records of applied pushes, so that none is applied twice.
//   - shardmap.go: ShardMap (NewShardMap), Partition and the hashes that place ids, DenseRange, StateShard.
//   - packing.go: the packed little-endian payloads of ids and floats (PackFloats, FloatsView, IDsPayload...).
//   - request.go: TableRequest and DenseRequest, the ids of a pull or push served by a shard.
//   - limits.go: the limits of one request and one gRPC message (CheckRequestSize).
//   - statekeys.go: the table of every model-state key, who writes and who reads it (CheckpointKey, AppliedKey...).
//   - rowset.go: RowSet, ids in order with their slots, what a snapshot or export writes a chunk at a time; SortIDs.
//   - snaprow.go: a row's snapshot encoding (AppendSnapshotRow, DecodeSnapshotValues) and the ids a table holds or misses.
//   - idrange.go: IDRange and IDHistogram: a table's ids cut into consecutive ranges of at most a limit each.
//   - errors.go: every error of the AMS packages (this one, shard and client).
package ams
