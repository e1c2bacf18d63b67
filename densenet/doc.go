// Package densenet is the dense half of a CTR model: the math of a small
// fully connected network (the "DenseNet" on top of the pooled embeddings),
// a sigmoid cross-entropy loss, and the float32 kernels they run on. The
// same network, with an input bias and a ReLU on its output, is the dense
// part of the SLIDE extreme-classification model (job/xctrain). It is
// Go, with Go-assembly GEMM micro-kernels on amd64 (see Performance), and
// depends only on golang.org/x/sys/cpu; it knows nothing of RPC, files or
// etcd.
//
// # Parameter layout
//
// An MLP with Sizes s_0, s_1, ..., s_L has L weight layers; layer l maps
// s_l inputs to s_{l+1} outputs, z = W_l·a + b_l, followed by a ReLU on all
// layers but the last. NewMLP's networks (the CTR model) have s_L = 1 and
// no activation on the last layer, whose single output is a logit. All
// parameters are one flat []float32 of NumParams() values:
//
//	W_0 (s_1 x s_0, row-major: W_0[o*s_0+i]), b_0 (s_1),
//	W_1 (s_2 x s_1), b_1 (s_2), ..., W_{L-1} (s_L x s_{L-1}), b_{L-1} (s_L)
//
// W_l is stored out x in like PyTorch's nn.Linear.weight, so a state dict's
// tensors, flattened in order, are a parameter vector. The gradient vector
// from Backward has the same layout, which lets a caller split both across
// parameter-server shards by offset (LayerParams gives the slices).
//
// NewMLPWith takes MLPOptions for two variants, which NewMLP never uses
// (its layout above is the CTR model's and does not change):
//
//   - InputBias: a_0 = ReLU(x + b_in) is the first layer's input instead
//     of x, and b_in (s_0 values) comes first, before W_0; the layers
//     follow at offset s_0 (InputBiasParams gives b_in). L may be 0: the
//     output is then a_0. With x an embedding sum, this is a sparse input
//     layer.
//   - OutputReLU: the last layer has a ReLU too; its output is a hidden
//     activation of width s_L for a layer outside this package.
//
// The SLIDE model (job/xctrain) uses both: its dense vector on the
// AMS shards, for embedding dim E and hidden widths h_1 .. h_H, is
//
//	b_in (E), W_0 (h_1 x E), b_0 (h_1), ..., W_{H-1} (h_H x h_{H-1}), b_{H-1} (h_H)
//
// (just b_in without hidden layers), initialised by Init with b_in = 0.
//
// The three layouts of the matrix product appear as follows (batch of n,
// A = layer input, n x in; δ = dLoss/dz, n x out):
//
//	forward   Z  = A · W_lᵀ   Gemm(NoTrans, Trans, ...)
//	weights   dW = δᵀ · A     Gemm(Trans, NoTrans, ...)
//	inputs    dA = δ · W_l    Gemm(NoTrans, NoTrans, ...)
//
// # Ownership
//
// The caller owns every slice: parameters, inputs, logits, gradients. No
// function keeps a slice after it returns, except that a Workspace keeps the
// activations it computed (in its own buffers) between Forward and Backward.
// Inputs are never written.
//
// # Protocol
//
//  1. m, err := NewMLP([]int{414, 200, 80, 1}) once (or NewMLPWith with
//     MLPOptions); share m freely.
//  2. Per goroutine: ws := m.NewWorkspace(maxBatch).
//  3. Per batch of n samples: m.Forward(ws, params, x, n, logits);
//     loss := SigmoidBCE(logits, labels, probs, dlogits);
//     m.Backward(ws, params, x, n, dlogits, grad, dx).
//     Backward must use the same ws, params, x and n as the Forward before
//     it; it overwrites grad and dx (dx, the gradient for the embeddings,
//     may be nil). For a network whose output is not one logit, logits
//     and dlogits are n x OutputWidth() outputs and the loss's gradient
//     for them.
//
// # Compressed batches
//
// In XDL's compressed batches (multi-prefix trees) the input of a sample
// is a concatenation of level blocks, level 0 its own features and level
// k >= 1 those of an ancestor (a user, say) that many samples share: a
// Tree (see its doc for the invariants). ForwardTree and BackwardTree
// replace Forward and Backward for such a batch: the first layer runs
// once per node, Y_k = X_k · W_0[:, level k]ᵀ, and each sample adds the
// rows of its ancestors; backward sums δ up the tree and computes the
// level-k blocks of dW_0 and the gradient dX[k] of the shared blocks from
// the level-k nodes only. The layers above are as in Forward and
// Backward, and results equal those of the flat expansion up to float32
// rounding. With InputBias the input bias and its ReLU act on each
// node's block (they are per column, and each column is one level's);
// the tree passes need at least one weight layer. The pairs do not mix:
// BackwardTree panics unless the last pass on ws was a ForwardTree of a
// tree of the same shape, and Backward panics after a ForwardTree. The
// Workspace grows its per-level buffers on the first ForwardTree with
// that many levels (with InputBias, on the first with that wide a level)
// and keeps them.
//
// # Interaction blocks
//
// Beside the MLP, the blocks of the CTR models beyond concat-MLP (FM,
// DeepFM, DCN-V2, Wide & Deep), over the same pooled input:
//
//   - FM second-order term over F field embeddings of dim k, O(F·k) per
//     sample: FMForward and FMBackward on flat rows; FMSums and FMCombine,
//     the partial sums that split by node of a compressed batch; and
//     FMWorkspace, whose ForwardTree and BackwardTree compute a shared
//     node's sums once (see fm.go for the algebra).
//   - DCN-V2 full-rank cross layers, x_{l+1} = x_0 ⊙ (W_l·x_l + b_l) +
//     x_l: Cross, with Forward and Backward on Gemm, like an MLP. It does
//     not split by node: on a Tree it runs on the flat expansion
//     (ExpandTree, then ReduceTree for the nodes' gradients).
//   - The first-order (linear) term: its weights are a dim-1 sparse table;
//     the dense side is RowSums and RowSumsGrad (see linear.go).
//
// FMBackward, FMWorkspace.BackwardTree, RowSumsGrad and ReduceTree take
// a beta as Gemm does (beta = 1 adds to the input gradient another block
// has written: DeepFM's FM and MLP share the embeddings); Cross.Backward
// overwrites, as MLP.Backward does. They are pure Go in both builds: their work
// per sample is a small fraction of the MLP's, except Cross's, which
// runs on Gemm and so on the assembly micro-kernels where the build has
// them. Gradients are checked against finite differences of float64
// references in the tests.
//
// # Sequence blocks
//
// The blocks of DIN (Zhou et al. 2018) and DIEN (Zhou et al. 2019) over a
// user's behaviour sequence:
//
//   - Attention, DIN's local activation unit: an MLP with PReLU over
//     [k, q, k−q, k⊙q] scores each key k of a sequence against a query q
//     (the candidate), raw (DIN) or with a softmax over the valid steps
//     (DIEN). AttentionPool and AttentionPoolBackward form the weighted
//     sum of the keys and its adjoint.
//   - GRU, PyTorch's nn.GRU cell (its parameter layout too), and with
//     Attn DIEN's AUGRU, whose update gate is scaled by the step's
//     attention score.
//
// Both take sequences in one layout: a batch of nodes (users, say), each
// a sequence of T steps, node-major (step t of node j at row j*T+t of a
// tensor of width w, so at [(j*T+t)*w, (j*T+t+1)*w)), of which the first
// lens[j] are valid (0 <= lens[j] <= T). The padding steps are never
// read and get 0 in the outputs and gradients a block overwrites. A
// batch has m outputs (queries, or AUGRU runs), and node[i] names the
// node output i reads; node nil is the identity (m = len(lens)). So in
// DIEN's compressed batches (a tree of users and their samples) the
// sequence work that depends on the user alone runs once per user node,
// and only what involves the candidate runs per sample:
//
//  1. interest extraction: GRU (no attention) over the behaviour
//     embeddings, node nil, m = nodes, giving the states h (nodes x T x H);
//  2. Attention with Softmax of the states against each sample's
//     candidate, node = the sample's user: scores (samples x T);
//  3. interest evolution: an AUGRU over the states with those scores as
//     att and the same node mapping; its last valid state per sample
//     feeds the MLP (the auxiliary loss reads step 1's states).
//
// Backward goes back the same way: the AUGRU's dx is the states'
// gradient and its datt the scores'; Attention.Backward adds the states'
// gradient from the attention to it; the GRU's Backward takes the sum.
// Gradients that several blocks feed are summed as follows: GRU.Backward
// overwrites grad, dx and datt, like MLP.Backward; Attention.Backward
// overwrites grad and ADDS to dkeys and dq; AttentionPoolBackward
// overwrites dw and takes a beta for dkeys, as Gemm does. DIN is steps 2
// and 3 replaced by Attention without Softmax and AttentionPool of the
// behaviour embeddings themselves.
//
// The products run on Gemm: the first layer of Attention splits into a
// part per key, one per query and one per (query, step) pair (see
// Attention); the GRU's input projection is one Gemm over the valid
// steps of all nodes, and its recurrence one Gemm per step over the
// running outputs, which Forward orders by decreasing length so that
// they are a prefix (see GRU). The gates are a fused pure-Go loop on a
// float32 rational approximation of tanh (tanh32, within 4e-7 of
// math.Tanh; σ(x) = 0.5 + 0.5·tanh(x/2)), so outputs differ from a
// float64 reference by a few float32 ulps more than the MLP's do. Both
// blocks keep what Backward needs in their workspace, which grows to the
// largest call it has seen and then allocates nothing; neither starts
// goroutines except through Gemm, so their results do not depend on the
// workspace's Threads. A GRU and an Attention are immutable and safe for
// concurrent use, their workspaces are not.
//
// # Concurrency
//
// An MLP is immutable and safe for concurrent use. A Workspace is not: use
// one per goroutine. Parameters may be shared read-only by concurrent
// Forward/Backward calls; updating them while a pass reads them is the
// caller's business (HOGWILD-style races are on the caller). Gemm and the
// MLP passes start goroutines for large products and always join them
// before returning; Workspace.Threads caps how many (set it to 1 when the
// caller already runs one workspace per core).
//
// # Kernels
//
// The kernels follow gonum: the destination comes first (Gemm keeps BLAS
// Sgemm's argument order, where C is last), inputs are never modified, a
// length or shape mismatch is a programmer error and panics, and the hot
// loops do not allocate (Gemm's packing buffers come from size-bucketed
// pools, or from the Workspace in Forward and Backward). Each
// kernel's doc comment gives the plain loop it computes. Matrices are
// row-major float32.
//
// Aliasing: an output must not overlap an input, except where a kernel's
// doc allows the same slice element-wise (Axpy's and AddBiasReLUTo's dst
// may be x, ReLUBackward's dst may be grad, SigmoidBCE's outputs may share indices
// with its inputs). Gemm's C must not overlap A or B (not even where the
// product would read and write the same element: the assembly kernels
// read packed copies of A and B and write C in tiles, so overlap gives
// wrong results, not a panic); with beta = 0 C is not read, so it may
// hold garbage or NaN.
//
// Results do not depend on the number of goroutines: Gemm splits C between
// goroutines, never the inner dimension, so each element is summed in the
// same order however many run. They may differ in the last bits from the
// reference loops, between machines whose CPUs select different Gemm
// micro-kernels (see Performance), between the purego build and the
// default one, and between builds with GOAMD64=v3 (which fuses
// multiply-adds into FMA) and without.
//
// # Performance
//
// Gemm packs panels of A and B (the GotoBLAS loop nest) and runs a
// micro-kernel on mr x nr tiles of C. The micro-kernel is chosen once,
// when the package is initialised, from the CPU's features
// (golang.org/x/sys/cpu) and never changes afterwards:
//
//   - avx512f12x32: Go assembly, 12x32 tile in 24 ZMM accumulators, if the
//     CPU has AVX-512F;
//   - avx2fma6x16: Go assembly, 6x16 tile in 12 YMM accumulators, if it
//     has AVX2 and FMA;
//   - generic4x2: pure Go, a 4x2 tile, everywhere else.
//
// KernelName says which one this process uses. The environment can take
// a CPU feature away from the choice, as golang.org/x/sys/cpu reads
// GODEBUG when the process starts: GODEBUG=cpu.avx512f=off runs the AVX2
// path on an AVX-512 machine (to test or benchmark it there), and
// GODEBUG=cpu.avx2=off the pure-Go one.
//
// Each kernel brings its own block sizes (mc, kc, nc). Tiles that stick
// out of C are computed into a scratch tile and copied in, so the
// assembly never touches memory outside C. When C is narrow (at most
// three column tiles, as in the attention unit's and the GRU's products)
// and A is not transposed, avx512f12x32 reads A's rows in place instead
// of packing them (its direct form): each row is read at most three
// times, which costs less than the copy; the order of each element's sum
// is the same, so the results are too.
//
// The element-wise work of the sequence blocks (PReLU forward and
// backward, tanh and so the gates' sigmoid, Axpy) runs on AVX2 and FMA,
// 8 floats at a time, where the CPU has them (vec_amd64.s): each kernel
// does the first multiple of 8 values and the Go reference loop the rest,
// so both builds keep one loop per kernel and the tests compare them. The
// MLP's own element-wise steps (AddBiasReLU(To), ReLUBackward, ColSums)
// run on AVX2 the same way, without FMA and bit-identical to their loops
// (TestReLUKernels). On the development machine (a
// Xeon with AVX-512) the layer-1 products run at about 75-100 GFLOP/s per
// core with AVX-512, 45-58 with AVX2, and 4-9 with the pure-Go kernel.
//
// The build tag purego leaves the assembly out and uses generic4x2 on
// every architecture. The race detector cannot see memory accessed from
// assembly, so
//
//	go test -race -tags purego ./...
//
// is the run that checks everything the detector can see; the tests run
// every kernel the machine has (gemmKernels) against the reference loop
// in either build.
//
// # Files
//
//   - kernels.go: the vector kernels (Axpy, Dot, AddBias, ReLU, ColSums...).
//   - gemm.go: Gemm, the blocked and parallel matrix product, and its pure-Go micro-kernel.
//   - team.go: the team of goroutines that runs a parallel Gemm's parts, handed over through memory, and its helpers.
//   - gemm_amd64.go: the AVX2 and AVX-512 micro-kernels of gemm_amd64.s and the choice among them (amd64, not purego).
//   - gemm_generic.go: the pure-Go micro-kernel only (other architectures, purego).
//   - vec_amd64.go: the element-wise kernels of vec_amd64.s (AVX2 and FMA) and their wrappers (amd64, not purego).
//   - vec_generic.go: no element-wise kernels: the Go loops do all (other architectures, purego).
//   - mlp.go: MLPOptions, MLP (NewMLP, Init, Forward, Backward) and its Workspace.
//   - tree.go: Tree, a compressed batch, and MLP.ForwardTree and BackwardTree over it.
//   - expand.go: ExpandTree and ReduceTree, a tree to its flat batch and back.
//   - fm.go: the factorization machine's second-order term, flat and over a tree (FMForward, FMWorkspace).
//   - linear.go: the first-order (wide) term: RowSums and RowSumsGrad.
//   - cross.go: Cross, DCN-V2's cross layers.
//   - attention.go: Attention, DIN's local activation unit, and AttentionPool.
//   - gru.go: GRU, with DIEN's AUGRU.
//   - loss.go: Sigmoid and SigmoidBCE, the loss and its gradient.
package densenet
