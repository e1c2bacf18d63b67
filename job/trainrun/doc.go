// Package trainrun is the skeleton of a training run that the CTR trainer
// (job/ctrtrain) and the SLIDE trainer (job/xctrain) share: the
// push ring that bounds the pushes in flight and keeps their first error,
// and the driver that feeds the run's events to its tracker
// (job/tracker, the I/O-free core of what a run decides) and carries
// out the actions the tracker returns through the model's Steps. Each
// model keeps its own step, evaluation and data.
//
// # Invariants
//
//  1. At most Ring.Len pushes are in flight: a buffer is taken (Take)
//     before a batch's gradients are written into it and is back in the
//     ring only when its push is done.
//  2. Drain returns only once every push started before it is done; the
//     first asynchronous push error stays until the ring is dropped (a
//     run that lost a push is failed, whatever it does next).
//  3. A push started by Go is not cancelled with the run's context
//     (job.PushTimer's context): the run's stop waits for it, so that
//     the checkpoint the stop commits counts every push the shards
//     applied.
//  4. The driver carries out the tracker's actions in order and stops at
//     the first error; an action the model has no step for (Rounds) fails
//     the run instead of being skipped.
//  5. Driver.Stopped runs the tracker's Stopped actions under a context
//     of their own (the run's values, not its cancellation), bounded.
//
// # Files
//
//   - ring.go: Ring and Slot, the push ring.
//   - push.go: Push, a batch's push, and NewPushRing, the ring both trainers push through.
//   - driver.go: Steps, Rounds and Driver, the tracker's driver.
package trainrun
