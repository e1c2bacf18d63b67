// Package slide is the core of a SLIDE / ThirdAI BOLT output layer: a softmax
// layer of d neurons (670K labels, say) over d_prev input activations that is
// trained and evaluated on the few neurons locality-sensitive hashing picks
// for each input, instead of all d. It is pure computation: no I/O, no
// global state; its goroutines belong to a Layer and stop in Close.
//
// # Pieces
//
//   - Family: an LSH family mapping a vector to L codes of K bits. SimHash
//     is sparse signed random projections (each bit reads about a third of
//     the coordinates, with ±1 signs, as in SLIDE); DWTA is densified
//     winner-take-all hashing (bins of 8 coordinates from random
//     permutations, empty bins densified as in Chen and Shrivastava 2018).
//     Both are deterministic functions of their seed.
//   - Tables: L tables of 2^K buckets over the neurons, each bucket a
//     reservoir of at most R neuron ids, in flat slabs (L*2^K*R int32 ids,
//     per-bucket counts, and each neuron's bucket per table so that it can
//     be re-inserted).
//   - Active-set selection: the union of the L buckets an input hashes to,
//     deduplicated with a per-goroutine stamp array, cut down to the target
//     size by a uniform sample (or by the number of tables a neuron was
//     found in), filled up with random neurons when short (training only).
//     In training the sample's labels always come first.
//   - Layer: weights W (d x d_prev, row-major), bias b (d), lazy per-row
//     Adam, TrainBatch (sampled softmax cross-entropy with multi-label
//     targets, returning the loss and the gradient for the layer below),
//     Maintain (hash-table upkeep), PredictDense and PredictSparse (top-k).
//   - Precision / PrecisionAtK: P@k of ranked multi-label predictions.
//
// # Invariants
//
//  1. A neuron is assigned to at most one bucket per table; a bucket stores
//     at most R distinct neurons assigned to it (see Tables).
//  2. A training sample's active set holds its distinct labels first, then
//     hashed candidates, then random neurons; its size is max(labels,
//     round(Sparsity*d)) with fill on (the default), never more. Its
//     softmax target puts 1/|distinct labels| on each label.
//  3. TrainBatch updates exactly the rows that were active for some sample
//     of the batch, each once (one Adam step with the row's gradient summed
//     over the batch); steps[r] counts row r's updates and is its Adam step
//     count. Inactive rows, their moments and step counts do not change.
//  4. The gradient returned for the inputs (dx) and the row gradients are
//     those of the mean loss over the samples with labels, with the weights
//     as they were before the batch; a batch whose active sets hold every
//     neuron computes exactly the dense softmax gradient.
//  5. Given the Config (Seed included), the sequence of calls and their
//     arguments, everything is deterministic, and independent of Threads:
//     a sample's random choices come from a stream keyed by (Seed, batch,
//     sample), row gradients are summed in sample order, and each table is
//     updated in row order. (Dense training, Sparsity 1, goes through
//     densenet.Gemm, whose results do not depend on its goroutines either.)
//
// # Protocol
//
//  1. l, err := New(Config{Dim: d, InputDim: dPrev, Sparsity: s}) builds
//     the weights and the tables; defer l.Close().
//  2. Per batch: loss, err := l.TrainBatch(x, n, labels, dx), then
//     l.Maintain() once (the rehash schedule counts batches by Maintain
//     calls). Backpropagate dx into the layer below.
//  3. Predict with l.PredictDense (all neurons) or l.PredictSparse (LSH
//     candidates, at most round(InferSparsity*d) per input); measure with
//     Precision. After setting weights through Weights, call Rehash.
//     Before sparse predictions, l.TuneInference on calibration inputs
//     (not the test set) picks the tables that keep PredictSparse's top-1
//     dense inference's (see "Autotuning").
//  4. Between batches, l.Save(w) writes the parameters, Adam state, step
//     counts and rehash schedule (not the tables); l.Load(r) on a layer
//     of the same shape reads them back and rebuilds the tables from the
//     weights with the saved hash functions. Load refuses another shape or
//     a stream cut short (ErrBadSave).
//  5. Sharded (package dslide): a layer can be one owner's share of a
//     wider layer (Config.FirstRow). A step is then l.ShardForward (active
//     sets among its rows, one Partial per sample), Combine over every
//     owner's Partials, and l.ShardBackward with the combined Globals (its
//     part of dx, Adam on its rows); shard.go documents the arithmetic.
//
// A Layer's methods must not be called concurrently (it is an
// unsynchronised core; a server wraps it). Each call runs on Threads
// goroutines, the caller's and Threads-1 that New starts and Close stops.
//
// # Autotuning
//
// Tune picks K and L as BOLT does. Per input, hashing costs K*L*d_prev
// (K*L projections or WTA bins, each over O(d_prev) coordinates) and
// evaluating the active set costs s*d*d_prev, against d*d_prev for the dense
// layer. Asking the sampled layer to cost at most a fraction c2 of the dense
// one gives
//
//	K*L*d_prev + s*d*d_prev <= c2*d*d_prev  <=>  K*L + s*d <= c2*d
//
// (d_prev cancels). A query meets L buckets of about d/2^K neurons each, so
// it finds about L*d/2^K candidates before deduplication; asking for c1*s*d
// of them gives L = c1*s*2^K. With c1 = 1 and c2 = 0.1, Tune tries K =
// 1, 2, ... and keeps the largest L = round(s*2^K) that satisfies the cost
// bound and L <= 256 (the largest K, since L grows with K; more tables at a
// fixed candidate count mean higher recall). R is twice the expected bucket
// size, ceil(2*d/2^K), and at least 8. For d = 670,091 and s = 0.005 this is
// K = 15, L = 164, R = 41; for d = 100,000, K = 15, L = 164, R = 8. Config.K,
// L and R override each choice. When nothing fits (s >= c2) it returns
// L = 1 at the smallest useful K.
//
// Tune's shape is chosen for training's cost, not for inference's
// accuracy: at s >= c2 one table finds the best label for few inputs.
// TuneInference (infer.go) measures instead: on calibration inputs it
// counts how often sparse inference's top-1 is dense inference's, keeps
// the training tables when that agreement reaches its target (0.99), and
// otherwise builds separate inference tables that hash for the inner
// product (simple LSH with the bias folded in: rows of equal length M,
// [w - c, b, sqrt(M^2 - |w - c|^2 - b^2)], against inputs [x, 1, 0],
// with sign bits from two rounds of randomised Walsh-Hadamard transforms,
// O(P log P) per P bits), trying shapes of few bits and many tables in
// order of cost within a per-input work bound, and keeps the first that
// agrees enough, or the best. Tables of one bit are kept as one L-bit
// signature per row and scanned with popcounts (the same candidates and
// counts, 32x fewer memory reads than visiting d/2 ids per table). The candidate budget round(InferSparsity*d) is
// never exceeded: only which candidates fill it changes.
//
// Memory of the tables: 4*(L*2^K*R + 2*L*2^K + L*d) bytes, about 12*L*d at
// the autotuned R (the ids are 2*L*d, the per-table codes L*d); for 670K
// labels at L = 164 that is 1.3 GB, which is why Config.L is worth setting
// on small machines. The parameters take 4*d*(3*d_prev + 6) bytes (weights,
// Adam's two moments and step counts, biases with theirs, the rows' hashed-at
// counts); a redraw keeps a second set of tables.
//
// # HOGWILD scheme
//
// A batch's samples are split into Threads contiguous ranges, one per
// goroutine, and each batch runs in phases separated by barriers, so that
// no memory location is written by one goroutine while another reads or
// writes it (the race detector sees no race, and results do not depend on
// scheduling):
//
//  1. Forward/backward (parallel over samples): hash the input, select the
//     active set, compute logits, softmax, loss and δ = (p - y)/n, write the
//     sample's row of dx = Σ δ_j W_j, and append (row, sample, δ) to the
//     goroutine's own list for the row's owner, row % Threads. Shared
//     state (W, b, tables) is only read.
//  2. Apply (parallel over row owners): owner q gathers the lists for its
//     rows from all goroutines, groups them by row with a counting sort
//     (sample order is kept), sums each row's gradient Σ δ x_sample in an
//     L1-resident buffer and applies Adam to the row at once. Owners write
//     disjoint rows; nothing is locked and no gradient slab of d x d_prev
//     exists.
//  3. Label insertion (InsertLabels only; parallel over tables): owner of
//     table t moves each missed label into the bucket its sample hashed to
//     in table t, in sample order.
//
// This is HOGWILD in spirit (lock-free, no global lock on the update path,
// updates of different rows proceed in parallel) but with row ownership
// instead of racy writes; the price is that a row's update waits for the
// end of the batch's forward pass, as in BOLT.
//
// # Rehashing
//
// Weights move, so their codes go stale. Maintain, called once per batch,
// does a bounded slice of upkeep on the calling goroutines (no background
// goroutine, so training never contends with it and there is nothing to
// swap atomically):
//
//   - Re-insertion: a cursor sweeps the rows, ceil(d/period) rows per
//     call, re-hashing and re-inserting the rows updated since they were
//     last hashed (steps[r] != hashed-at[r]), at most SliceNeurons per
//     call. The period starts at RehashBase batches (50) and is multiplied
//     by RehashGrowth (1.5) at the end of each period, up to RehashMax (2000):
//     frequent early in training, rare later, and never a stall of more
//     than SliceNeurons hashes.
//   - Redraw: every RedrawPeriod batches (20000), new hash functions are
//     drawn and a second set of tables is filled with SliceNeurons rows per
//     call while training goes on with the old ones; the call that inserts
//     the last row swaps the two. Rows updated during the rebuild are
//     caught by the next sweep. Re-insertion pauses during a rebuild.
//
// Rehash re-inserts every row at once (after loading weights, or before
// evaluating with PredictSparse).
//
// # Performance
//
// On the 2-core development VM (AVX2, noisy: figures vary by 30% between
// runs), d = 100,000, d_prev = 128, s = 0.005 (autotuned K = 15, L = 164,
// R = 8), batch 128, Threads 2:
//
//	go test ./sparsenet/slide -run XXX -bench 'ForwardBackward|TrainMaintain|Predict|Hash_|Rehash' -benchtime 30x
//
//	TrainBatch, sparse, DWTA            35-55 ms/batch   (2,300-3,700 samples/s)
//	TrainBatch, sparse, SimHash         44-57 ms/batch
//	TrainBatch, dense (Sparsity 1)     240-390 ms/batch  (330-530 samples/s)
//	TrainBatch + Maintain, DWTA         52-100 ms/batch  (period 50: 2,000 rows re-hashed per batch)
//	PredictSparse / PredictDense top-5   9-19 / 50-80 ms per 128 inputs
//	Hash one vector, DWTA / SimHash     10-20 / 80-140 µs (SimHash's HashBatch: ~25 µs per vector)
//	Rehash all 100K rows, DWTA / SimHash  0.8-1.0 / 2.4-2.7 s
//
// The loops over random rows (the forward pass over an active set, the
// owners' Adam updates, the bucket inserts of Maintain) prefetch a few
// rows ahead (package prefetch): each row is a cache miss the hardware
// cannot predict. On the 670K shape (BenchmarkTrainSparse_D670K_SimHash,
// 2 cores) this took TrainBatch from 345 to 200 ms and TrainBatch with
// Maintain from 540 to 350 ms; SimHash's code bits are set without a
// branch (a branch on a projection's sign mispredicts half the time).
//
// About half of a sparse batch is Adam: at this batch size and sparsity a
// batch touches ~47,000 distinct rows, half the layer, and their update is
// memory-bound (the weights, moments and bias of a row: 1.5 KB). Memory per
// neuron: 1,560 bytes of parameters and state, 2,806 bytes of tables.
//
// # Files
//
//   - config.go: Config (EnsureDefaults, Validate), Selection, Schedule and the package's errors.
//   - layer.go: Layer (New, TrainBatch, the weights and tables): a sparse softmax layer trained on its active neurons.
//   - active.go: the selector that builds a sample's active set from the tables' buckets.
//   - dense.go: dense training (Sparsity 1), every neuron active.
//   - adam.go: Adam's bias-corrected step sizes, precomputed.
//   - exp.go: exp32, the softmax's float32 exponential.
//   - pool.go: the pool that runs one phase on n goroutines.
//   - rng.go: rng, the counter-based randomness of reservoirs and densification.
//   - family.go: Family, the LSH families SimHash and DWTA (NewSimHash, NewDWTA) and BatchHasher.
//   - hadamard.go: SimHash with structured (Walsh-Hadamard) projections, for the inference tables.
//   - tables.go: Tables (NewTables, Insert, Remove, Bucket...), the hash tables of neuron ids with bounded buckets.
//   - maintain.go: Maintain and MaintainStats: the rehash schedule of updated rows and the tables' rebuilds.
//   - tune.go: Params, TuneOptions and Tune: the tables' shape for a layer's size and sparsity.
//   - text.go: ParseKind, a hash family by name.
//   - infer.go: InferTuneOptions, InferTune and TuneInference: inference tables tuned on calibration inputs.
//   - predict.go: PredictDense, PredictSparse, TopScores and Candidates: top-k predictions.
//   - metrics.go: PrecisionAtK and Precision, P@k of ranked predictions.
//   - shard.go: a sharded layer's (D-SLIDE) halves: Partial, Global, Combine, ShardForward and ShardBackward.
//   - save.go: Save, SaveSize and Load of a layer (ErrBadSave).
package slide
