// Package optim holds the update rules of the model's parameters: SGD,
// Adagrad, Adam, FTRL and Momentum, each an Optimizer that updates one row
// of weights and its state in place. The AMS tables (package ams) apply
// them to embedding rows and dense variables on the shards; the SLIDE
// output layer (sparsenet/slide) applies Adam to its own rows in the
// worker. It is a leaf: it imports nothing of the module.
//
// # Invariants
//
//  1. An Optimizer sees one row at a time and keeps all its state per row
//     (Adam's step count included), in StateWidth(dim) float32 words laid
//     out as the table below says.
//  2. Adam is lazy: a row's moments decay only when it is pushed, and its
//     bias correction uses its own step count t. A dense variable is one
//     long row, so its Adam state has one t.
//  3. The exact update of each optimizer is written as a reference loop in
//     its doc comment. On amd64 with AVX, Adam runs the loop over rows of
//     16 or more, and Adagrad over rows of 8 or more, 8 lanes at a time in
//     assembly (optkernel_amd64.s; the purego build tag leaves it out).
//     Kernel and loop round every operation separately, in the loop's
//     order, with no fused multiply-add, so an update is bit-identical with
//     or without the kernel.
//  4. Optimizers are immutable values, safe to share between tables and
//     goroutines. The slices given to Apply (w, state, g) must not
//     overlap; Apply panics unless len(g) == len(w) and len(state) ==
//     StateWidth(len(w)).
//
// # State layout
//
// A row's state (d = dim), starting as given:
//
//	sgd       (none)                     width 0
//	adagrad   acc[d]                     width d      acc = initial_accumulator
//	adam      m[d] v[d] t                width 2d+1   all 0; t = the row's step count
//	ftrl      z[d] n[d]                  width 2d     all 0
//	momentum  v[d]                       width d      all 0
//
// # Files
//
//   - optimizer.go: Optimizer and the update rules SGD, Adagrad, Adam, FTRL and Momentum.
//   - optkernel_amd64.go: the Adam and Adagrad kernels of optkernel_amd64.s (amd64, not purego).
//   - optkernel_other.go: no optimizer kernels: the scalar loops do all (other architectures, purego).
package optim
