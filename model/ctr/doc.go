// Package ctr is the network of a click-through-rate model of every kind
// the config declares (model.kind: mlp, lr, fm, deepfm, dcnv2, wdl, din,
// dien, with or without the wide part): the sparse layout of its input,
// the pooling of pulled embedding rows into that input, and the dense
// blocks' forward and backward on a compressed (multi-prefix-tree) batch.
// The trainer (job/ctrtrain) and the prediction server (package serve)
// build the same Net from the same config and Shape, so that a server
// scores as the trainer's evaluation does.
//
// It knows nothing of RPC, etcd, Kafka, files or the job lifecycle: rows
// and dense parameters are slices the caller pulled from wherever they
// live (the AMS shards, an export loaded in memory).
//
// # Files
//
//   - layout.go: Shape, NewLayout (fields to tables, levels, the wide
//     part's mirror fields, sequence fields), DenseName, MaxFields.
//   - net.go: Net (NewNet, Init, NumParams, Describe), its workspaces,
//     ForwardTree and BackwardTree on a tree of pooled rows, and Infer /
//     Forward, which pools a compress.Batch and scores it.
//   - wide.go: the wide part (config model.wide).
//   - seqnet.go: the behaviour-history part of din and dien.
//   - spec.go: Spec, the network described for a reader outside Go (the export dump).
//
// # Invariants
//
//  1. One Net per (config, Shape): NewNet(cfg, shape) is a pure function
//     of its arguments (cfg with its defaults filled). A Shape is stored
//     in the model as JSON beside the config (the trainer's Declare), so
//     that whoever loads the model builds the same layout and network.
//  2. The dense parameters are one vector named DenseName: the MLP's,
//     then Cross's (dcnv2) or the history part's (din, dien). NumParams
//     is its length; Init writes its initial values from a seed.
//  3. A compressed batch and its flat expansion give the same logits,
//     loss, dense gradient and per-ID sparse gradients (up to float
//     rounding): a level-k node's share of the first layer, its FM term,
//     its wide sum and its history's GRU run once per node. The tests
//     check it against the flat batch (compress_test.go, seqnet_test.go)
//     and the gradients against finite differences (net_test.go).
//  4. A Net is read-only after NewNet and safe for concurrent use; the
//     mutable state of a pass is in a NetWorkspace (or an Infer), which
//     one goroutine uses at a time. BackwardTree reads the activations the
//     ForwardTree before it left in the same workspace.
//  5. The caller owns every slice passed in (params, rows, trees, logits,
//     gradients); nothing is kept after a call returns except in the
//     workspace's own buffers. Inputs are never written.
//
// # Usage
//
//  1. net, err := NewNet(cfg, shape) once per model.
//  2. Training: ws := net.NewWorkspace(batch, threads); per batch, pool
//     the rows into a densenet.Tree (Cols: net.Cols), then
//     net.ForwardTree(ws, params, tree, logits), the loss's dlogits, and
//     net.BackwardTree(ws, params, tree, dlogits, grad, dX); dX scatters
//     back to the unique IDs (sparsenet).
//  3. Scoring: in := net.NewInfer(batch); per batch,
//     net.Forward(in, params, batch, rows, logits).
package ctr
