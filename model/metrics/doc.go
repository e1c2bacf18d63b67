// Package metrics computes the offline quality metrics of a click model:
// the area under the ROC curve and the mean log loss.
//
// Labels are 0 or 1; a label > 0.5 counts as a positive (a click). Scores
// may be any real numbers (only their order matters to AUC); probabilities
// for LogLoss lie in [0, 1]. A length mismatch between labels and scores is a
// programmer error and panics.
//
// Both functions are pure: they never modify their inputs.
//
// It is part of the public model floor (model/...), beside model/ctr: the
// trainer's evaluation, cmd/ctrgen's best achievable AUC and a model
// written outside the module measure with the same functions. Like the
// rest of the floor it imports nothing of the module.
//
// # Files
//
//   - metrics.go: AUC (exact, from ranks) and LogLoss of a batch.
//   - stream.go: Stream: AUC (binned) and log loss over an unbounded stream of predictions in constant memory (progressive validation).
package metrics
