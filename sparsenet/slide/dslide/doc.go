// Package dslide shards a SLIDE output layer between owners (D-SLIDE, Luo
// et al.): each owner holds a contiguous share of the label neurons as a
// slide.Layer with its own hash tables, and a training step exchanges
// only small per-sample numbers between them instead of logits or dense
// gradients. It is pure computation, like package slide: the owners of a
// Layer live in this process, and the step is written as the messages a
// multi-process run sends, so that their bytes can be counted (StepBytes)
// and a transport can carry them one for one.
//
// # A step
//
// For a batch of n samples (hidden activations x, n x InputDim, and their
// labels), on W owners:
//
//  1. x and the labels go to every owner (the batch's worker keeps its
//     own share).
//  2. Each owner runs slide.Layer.ShardForward: active sets among its rows,
//     logits kept, one slide.Partial per sample back to the batch's
//     worker (24 bytes).
//  3. The worker combines them (slide.Combine: the softmax's maximum and
//     denominator) and sends each owner one slide.Global per sample (16
//     bytes).
//  4. Each owner runs slide.Layer.ShardBackward: its part of dLoss/dx back
//     to the worker (n x InputDim floats), Adam on its active rows.
//  5. The worker sums the parts: the gradient for the layers below.
//
// Dense model parallelism would send every owner's logits for the batch
// (n x its rows) and the full hidden gradient instead; DenseStepBytes
// counts that.
//
// # Invariants
//
//  1. The owners' shares partition [0, Total): owner o holds
//     [Bounds[o], Bounds[o+1]), shares differ by at most one row (Even),
//     and owner o's layer is the whole layer's rows from Bounds[o] on
//     (slide.Config.FirstRow), initialised as one layer of Total rows
//     with the same Seed would be.
//  2. With every owner at Sparsity 1, a step computes what one dense
//     slide.Layer of Total rows computes (loss, dx, updates), to float
//     rounding; with Sparsity < 1 each owner draws round(Sparsity·rows)
//     active rows per sample from its own tables, so the active work per
//     owner differs by the labels only (Stats measures it).
//  3. Predictions merge the owners' top-k lists by score (ties to the
//     lower row), which is the top-k of the union of their candidates.
//  4. Owners are stepped in order of their index and all complete a step
//     before the next begins; a Layer is not safe for concurrent use.
//
// # Files
//
//   - layer.go: Partition (Even), Layer (New, TrainBatch, Maintain, PredictDense, PredictSparse) and Stats: the owners of one process.
//   - persist.go: Layer's Save and Load, Rehash, TuneInference, Candidates and sizes.
//   - owner.go: rounds across workers: Owner (Forward, Backward, Predict), its requests and replies, and Peer.
//   - worker.go: Worker, a worker's side of the rounds (TrainBatch, Predict), and DefaultWait.
//   - bytes.go: StepBytes and DenseStepBytes, the bytes a step sends between owners.
package dslide
