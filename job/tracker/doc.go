// Package tracker is the I/O-free core of a worker's training run, in
// the style of clusterfsm: the driver (the training loop of a model)
// feeds it events — the run started, a batch was trained, a tick, the
// source was idle, its partitions were re-dealt, the epoch's data ended,
// the run was stopped, the validation set was scored — and executes the
// actions it returns, in order: open an epoch's data, commit a
// checkpoint, pause for the scheduler, reopen the source, evaluate,
// validate, keep the best model (a pinned snapshot) or go back to it
// (early stopping), print progress, leave the sync round, wait at the
// final barrier, finish. It does no I/O, reads no clock and
// starts no goroutine, so every decision of a run is tested by the
// scripts in testdata/ without etcd or shards.
//
// # Invariants
//
//  1. Applied, Digest and the positions count exactly the batches
//     reported trained (BatchTrained), over the whole job: a resumed run
//     starts from Options.Start's.
//  2. Every Commit and Pause carries the checkpoint of every batch
//     reported so far; the driver stores it only after every push of
//     those batches has been applied.
//  3. A Commit is emitted only when the checkpoint changed since the last
//     one (a new batch with positions, the end of an epoch), and never
//     when Options.Commits is off (sync mode: checkpoints travel with the
//     rounds).
//  4. After Reopen the positions of the streams trained before are
//     forgotten: they may belong to another reader now and are never
//     stored again by this one.
//  5. Epochs are opened in order, each once per run; Done comes after the
//     final evaluation, once. After Done every event is an error.
//  6. Evaluation after the last epoch comes after Drain (every push
//     applied) and, with Options.Barrier, after Barrier.
//  7. Validate is the last action of its step, and nothing but its
//     Validated is taken until it comes. The best validation is carried
//     by every checkpoint after it; Pin (keep this model) follows only a
//     better validation, and Rollback (end on the kept model) only a
//     validation that was not better, with Options.KeepBest.
//
// # Files
//
//   - tracker.go: Options and Tracker: Step, the checkpoints it commits (Checkpoint, After, Best) and ValidationWords.
//   - types.go: the Events Step takes (Started, BatchTrained, Tick, Validated...) and the Actions it returns (Open, Commit, Pause, Evaluate, Pin...).
//   - drive.go: StepExec and Epochs, the loop a driver runs the tracker's actions with.
package tracker
