// Package xctrain is the extreme-classification job of a worker: it trains
// "sparse features -> embedding sum -> hidden layers -> SLIDE output" on
// XMLRepository files (Bibtex, Amazon-670K, or cmd/xcgen's generated data)
// and reports precision at 1, 3 and 5. It is what `worker -output slide`
// (config model.output.kind: slide) runs; job/ctrtrain is the CTR job.
//
// # Model
//
//	a_0 = ReLU(Σ_k v_k E[id_k] + b_0)           E: model.tables[0], on the AMS shards
//	a_l = ReLU(W_l a_{l-1} + b_l), l = 1..H      model.output.hidden
//	p   = softmax over output.labels of a_H      a slide.Layer in this worker
//	                                             (output.owners > 1: a dslide.Layer
//	                                             of that many shares, in this worker)
//
// The embedding sum with its bias and ReLU is the first hidden layer (a
// sparse input layer, as in SLIDE's network and PyTorch's
// EmbeddingBag(sum) + bias + ReLU in the reference). b_0 and the layers
// 1..H are one densenet.MLP, the CTR job's network made by NewMLPWith with
// the options InputBias (b_0 is its input bias) and OutputReLU (a_H feeds
// the SLIDE layer). Its parameter vector is the dense vector DenseName,
// laid out as package densenet documents: b_0, then W_l and b_l layer by
// layer (densenet numbers them from 0).
//
// The loss is the cross-entropy against the uniform distribution on a
// sample's labels, computed by the SLIDE layer over the sample's active
// set (its labels, LSH candidates, random fill: output.sparsity of the
// labels) or over every label (sparsity 1, dense mode). The embedding
// rows are updated by the table's server-side optimizer, the dense vector
// (b_0, W_l, b_l) by model.dense_optimizer on the shards, the SLIDE layer
// by its own lazy Adam (output.lr) in this process.
//
// # Invariants
//
//  1. Each batch's feature ids are deduplicated (sparsenet.Batch) and
//     routed to shards once (a client.Route): one row per unique id is
//     pulled, with the dense vector, in one merged request per shard, and
//     one summed gradient per unique id is pushed through the same route.
//  2. Gradients are those of the batch's mean loss over the samples with
//     labels (samples without labels contribute nothing), with the dense
//     vector and rows as pulled for the batch and the SLIDE weights as
//     they were before the batch (slide's invariant 4).
//  3. Labels are in [0, output.labels); a label outside is an error before
//     training starts (ErrBadData), never a panic. output.labels 0 takes
//     the largest "N F L" header's L and 1 + the largest label seen.
//  4. The SLIDE layer and the dense workspaces are touched by the train
//     stage's goroutine only; the pull stage only fills batches it owns
//     (a fixed ring of train.prefetch_batches+1 batches passed through
//     channels); each push owns its buffer (a trainrun.Ring of
//     train.max_inflight_pushes, the CTR trainer's too), with the route of its batch's pull
//     swapped in from the batch, until the shards applied it. Every
//     goroutine is joined before Run returns.
//  5. Evaluation after an epoch sees every push of the epoch applied;
//     before sparse inference every neuron is re-inserted into the hash
//     tables (slide.Layer.Rehash), so the tables match the weights, and
//     sparse inference is calibrated on the first
//     model.output.infer_tune.samples training samples (never the test
//     set) against dense inference (slide.Layer.TuneInference); with the
//     shares of several workers it is not (the other shares are in other
//     processes).
//
// # Protocol
//
//  1. d, err := Load(ctx, files, policy) reads XMLRepository files into a
//     compact in-memory Dataset (CSR of the reader's 64-bit feature ids,
//     values and labels); a malformed line is an error naming file, line
//     and reason (reader.ErrMalformed) or is skipped and counted.
//  2. t, err := New(client, Options{Config, Train, Test}); defer t.Close()
//     builds the layer (its goroutines stop in Close).
//  3. t.Declare(ctx) declares the table and the dense vector on the shards.
//  4. res, err := t.Run(ctx) trains train.epochs epochs (shuffled per
//     epoch with model.seed unless train.shuffle is false) and evaluates
//     after each (and every train.eval_every batches). What the run does
//     when (commit its progress, pause, evaluate, open the next epoch) is
//     decided by a tracker.Tracker, the I/O-free core the CTR model's run
//     uses too; Run feeds it the batches trained and executes its actions.
//
// RunJob does all of it for a worker process, as the SLIDE model of the
// one job lifecycle (package job: registration, lease, pauses, shard map,
// attempts): it loads the data once, then trains in attempts from the
// checkpoint the model holds. With output.owners > 1 and one worker the
// layer is split into shares with their own tables that train by
// exchanging softmax sums (package sparsenet/slide/dslide), all of them
// in this worker.
//
// # Several workers
//
// With job.workers W > 1 the layer is split into W shares, one per worker
// (peers.go; output.owners must be 1 or W). Each worker serves its share
// over gRPC on output.peer_listen for the job's life (package
// sparsenet/slide/dslide/dslidenet), publishes its address in etcd at each
// attempt with the attempt's version (controlplane.PutOwnerAddr) and
// waits for every worker's. With TLS (job.Options.TLS) the shares speak
// mutual TLS: a share answers callers of the worker role only, and a
// worker verifies the share it dials as a worker's by its certificate
// (worker i's own, when it has a certificate of its own), not by the
// address (tlsconf.Config.PeerClient). A batch of train.batch_size samples is a
// round of the layer, dealt out between the workers (worker w takes every
// W-th sample from the w-th; a last batch shorter than W joins the one
// before): each worker pulls, pools and runs the dense layers on its part
// and pushes its gradients to the shards as one worker does, and the
// layer's round (dslide.Owner) takes one step over the whole batch, as
// one worker's layer would. Only worker 0 evaluates (over every share);
// every worker serves its share until all are done (a barrier), since
// worker 0's last evaluation and the final snapshot need them.
//
// A snapshot's pause is served after a round, by every worker after the
// same one: each round carries the latest pause request any worker was
// asked to serve, and every worker pauses after it, writing its share as
// ShareFile(index, W) with its checkpoint. Any other pause (a rollback:
// a worker died, and its rounds will never end) is served while a round
// waits, changing no share. A restored cluster starts every worker's next
// attempt from its share in the snapshot. An attempt that ends early while
// the cluster serves on at the same version (a lease lost and won back)
// has lost its share while the others' went on: the next attempt leaves as
// a dead worker, so that the cluster rolls every share back.

// # Snapshots
//
// The SLIDE layer lives in the worker, so the job takes part in the
// cluster's snapshots (package controlplane's pause protocol; the scheduler
// names the snapshot a pause is for with controlplane.SnapshotTarget). At a
// snapshot pause the train stage stops at a batch boundary, waits until
// every push it made is applied, writes the layer (slide.Layer.Save) into
// the snapshot as LayerFile through the snapshot package, and stores its
// Checkpoint (job/checkpoint: the file's size and SHA-256, the next
// epoch and batch, the samples applied) under the worker's AMS state key
// (ams.CheckpointKey), the key every job uses; then it acknowledges and
// waits for the resume. Between snapshots it stores its progress (no file)
// every second, so the scheduler's -snapshot-every-samples counts its
// samples as it counts the CTR job's. The shards write that state into
// the same snapshot, so the snapshot's rows, layer and position belong
// together. A job that starts on a model holding a Checkpoint (the
// scheduler restored the cluster from that snapshot after a failure)
// loads the layer, verified, and trains from its epoch and batch; a
// resume at a higher cluster version while paused (a rollback) ends the
// attempt with controlplane.ErrRestored, and the lifecycle starts the next
// attempt from the restored checkpoint and its layer. A finished job stores a
// Checkpoint marked Done, which a later job ignores; a Checkpoint naming
// no layer (the model was not restored from a snapshot, so the layer is
// gone) is ignored too, with a message saying why. The embedding rows
// pulled ahead for the next batches (train.prefetch_batches) were pulled
// before the pause: asynchronous training's usual staleness.
//
// # Progress and metrics
//
// Every train.progress_every a line gives samples/s, the epoch's mean loss
// and the P@1/3/5 of the training batches scored (with sparse inference,
// before being trained on: progressive validation) since the last line;
// every output.progressive_every-th batch is scored (0: none). An
// evaluation gives P@1/3/5 with sparse and/or dense inference
// (output.eval), the recall of the exact top-1 and top-5 by the LSH
// candidates, the batched scoring time per sample, and after the last
// epoch the latency of one prediction (pull, dense layers, top-5) over
// the first 200 test samples. Result.Phases splits the train stage's time.
//
// # Files
//
//   - trainer.go: Options, Trainer (New, Declare, Evaluate), a batch's step and the push ring; Result, Eval, PAtK and Phases.
//   - run.go: one Run: the tracker's actions carried out, the epochs' train stage, pauses agreed with the peers, progress lines.
//   - valid.go: the validation the tracker asks for (P@k), and keeping the best model.
//   - snapshot.go: the SLIDE layer in the cluster's snapshots: its file, the checkpoint naming it, the resume from it.
//   - output.go: the output layer as the trainer drives it: one slide.Layer, in-process owners or a share of a shared layer.
//   - peers.go: Peers and the peer server: a worker's share of the layer served to the others over gRPC, with mutual TLS when the worker has an identity.
//   - data.go: Dataset (Load, Sample, Prefix), extreme-classification data in memory.
//   - job.go: JobResult, RunJob and the job.Model of a SLIDE job.
package xctrain
