// Package sparsenet is the sparse half of a CTR model on the worker: it
// deduplicates the feature IDs of a batch per table, pools the pulled
// embedding rows per (node, field) into the dense input of the MLP, and
// scatters the MLP's input gradient back into one gradient per unique ID.
//
// # Layout
//
// A Layout gives each field a kind, a level and a slice of the dense input.
// A sparse field pools rows of its table (width: the table's dim); a dense
// field is a fixed-width float vector copied into the input (width: its
// DenseWidth). Level 0 holds the per-sample fields, level 1 the fields shared
// by consecutive samples (a user), level 2 those shared above it, and so on.
// Invariants:
//
//  1. The dense input is the concatenation of the level blocks, level 0
//     first: LevelCols(k) = [lo, hi) with LevelCols(0).lo == 0,
//     LevelCols(k).hi == LevelCols(k+1).lo and LevelCols(Levels()-1).hi ==
//     Width(). A level without fields has an empty block.
//  2. Within a level, the fields come in increasing field number. A layout
//     of one level (NewLayout) is thus the plain concatenation of all fields
//     in field order.
//  3. Pooling is a weighted sum (value x row) or a weighted mean over the bag
//     of one (node, field). A feature whose field is not in the layout is an
//     error at batch-building time, never silently dropped.
//  4. A mirror field (FieldSpec.From) pools exactly the features of the
//     field it mirrors, with their values, into its own table: a wide
//     model's dim-1 weight per ID beside the field's embedding. A batch
//     takes no feature of a mirror field directly.
//
// # Sequence fields
//
// A sequence field (FieldSpec.SeqLen = L > 0) holds a user's behaviour
// history: the features a node gives it are an ordered list, oldest first
// (the order of the input line). Its columns in the level block are L
// positions of the table's dim, then one length column:
//
//  1. Of a list of n features the last min(n, L) are kept; kept feature j
//     (0 = the oldest kept) is value x row in position j's columns, and
//     positions min(n, L)..L-1 are zeros. Features are never pooled
//     together, whatever the Pooling.
//  2. The length column holds min(n, L) as a float; it is input only
//     (ScatterTree gives it no gradient, like a dense field).
//  3. A dropped (older) feature's id is not in IDs: it is never pulled.
//
// Layout.Cols gives a field's columns within its level's block, SeqLen its
// positions; the network that reads the block (DIN's attention, DIEN's
// GRU) finds each position there.
//
// # Batches
//
// A Batch is built by Reset and AddNode (or Add, which is AddNode at level 0:
// one call per sample) and SetDense. It holds nodes per level (a level-k node
// is one pooled input row of level k's block, shared by the samples below
// it; which samples those are is the caller's business, see package
// compress), and per table the unique IDs in first-seen order over all
// levels (the order rows are pulled and gradients pushed). Gradients of one
// ID that appears in several nodes or fields are summed, so each unique ID is
// pushed once per batch.
//
//  1. N == Nodes(0), the number of samples.
//  2. PoolTree writes one block per level; expanding each sample's input as
//     the concatenation of its level-0 row and its ancestors' rows gives the
//     flat input a one-level layout with the same column order would pool.
//  3. ScatterTree is the adjoint of PoolTree on the sparse fields: given the
//     per-node gradient (for an upper node, the sum over its samples), it
//     gives the same row gradients as Scatter of the flat gradient.
//  4. Pool and Scatter are the one-level special case (they panic on a
//     layout of several levels).
//
// Steady-state use (Reset and refill) allocates nothing. Nothing here does
// I/O or knows about shards; a Batch and its buffers are not safe for
// concurrent use.
//
// # Files
//
//   - layout.go: Pooling, Layout (NewLayout) and Batch (IDs, Pool, Scatter): a flat batch's rows pooled into the first layer's input and its gradient scattered back.
//   - levels.go: FieldSpec, NewLayoutFields and the tree of a compressed batch (AddNode, PoolTree, ScatterTree).
//   - seq.go: sequence fields (FieldSpec.SeqLen): their columns (Cols, SeqLen) and lengths.
//   - dedup.go: Dedup, the distinct IDs of a batch in first-seen order, pointer-free.
package sparsenet
