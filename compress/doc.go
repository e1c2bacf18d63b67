// Package compress turns a stream of sample groups into mini-batches of
// prefix trees ("multi-prefix-tree compression", after XDL): consecutive
// samples that share their upper-level features (user -> ad -> creative)
// share one node per upper level, so the upper features are pooled and pushed
// through the first dense layer once per node instead of once per sample.
//
// The core, Builder, is a state machine without I/O: the caller feeds it
// groups (Add), closes the stream (Flush) and takes finished batches (Take),
// giving their buffers back when done (Recycle). A Builder is not safe for
// concurrent use.
//
// # Samples and nodes
//
// A sample is a level-0 line of a group together with its ancestor lines
// (Parent up through the group's levels). Its features are regrouped by the
// LAYOUT's level of each field: the data's line levels are only hints, so a
// flat (one line per sample) format with user fields at layout level 1 still
// compresses. A sample's level-k features are those of its lines whose field
// has level k, in line order from its own line upward.
//
// Invariants of a Batch, with L = Layout.Levels():
//
//  1. N == Sparse.N == Sparse.Nodes(0) == len(Labels) == len(LabelOffsets)-1,
//     1 <= N <= BatchSize; every batch but the last of a stream (after Flush)
//     has N == BatchSize.
//  2. len(Parent) == L-1 and len(Parent[k]) == Sparse.Nodes(k); Parent[k][i]
//     is in [0, Sparse.Nodes(k+1)) and non-decreasing in i (trees are
//     contiguous). The top level's nodes have no parent.
//  3. Sample s's level-k node is n_k(s): n_0(s) = s, n_{k+1}(s) =
//     Parent[k][n_k(s)]. Its input row is the concatenation over k of the
//     rows of n_k(s) in the level blocks of Sparse.PoolTree.
//  4. Sample s (s >= 1) has the same level-k node as sample s-1 (k >= 1) iff
//     their level-(k+1) nodes are the same (always true at the top) and
//     their level-k features (sparse fields, ids and values, dense fields and
//     vectors, in order; floats compared bit for bit) are identical.
//     Otherwise a new node is added. No node is shared across batches: a
//     tree that does not fit is split, and its upper nodes are added again in
//     the next batch.
//  5. Samples keep the stream's order, and each is in exactly one batch.
//  6. End is the position right after the batch's last sample: for sample j
//     (0-based in its group g), {g.Pos.File, g.Pos.Offset, j+1}, or g.Next
//     when j is g's last sample. Resuming a source at End yields exactly the
//     samples of the following batches. Ends holds the same for each stream
//     (Position.File) of the batch, for sources that interleave streams.
//
// # Usage
//
//  1. NewBuilder with the model's layout and the batch size.
//  2. For each group the source returns, Add it; after each Add, Take
//     batches until it returns nil. Add consumes the group's samples from
//     g.Pos.Index on and keeps no reference to g.
//  3. At the end of the stream, Flush, then Take the last, partial batch.
//  4. Recycle each batch once its buffers are no longer used (after its
//     gradients are pushed); later batches reuse them, so steady-state use
//     allocates nothing.
//
// Invalid data (a field outside the layout, a sparse field given a vector or
// the reverse, a dense vector of the wrong width, a malformed group) gives an
// error naming the group's position before any of its samples is added.
//
// # Files
//
//   - builder.go: Options, Builder (Add, Take, Recycle, Flush), Batch, a batch of prefix trees, and Stats, the compression ratios.
package compress
