// Package autotune is train.autotune: it searches a CTR job's settings
// before the job trains, as an expert would tune them, within a budget of
// samples, and hands the winner to the job.
//
// The search is successive halving (Jamieson and Talwalkar, 2016; the
// synchronous form of Hyperband's brackets): autotune.trials settings
// (the job's own first, then the other kinds of autotune.kinds at their
// own defaults, the others drawn from the space of setting.go:
// the sparse and dense learning rates as log-uniform multiples of the
// kind's defaults in [1/4, 4], the embedding dim, the hidden layers and,
// with autotune.kinds, the model kind) each train a first round's samples
// and are scored on the validation set; the best third trains again
// from the start with three times the samples, and so on while a round
// has more than one trial. The trials of the rounds cost as much as the
// budget less the winner's run: with the default 3x and 9 trials, 9
// trials of a ninth of a run and 3 of a third, then the winner's run.
//
// Each trial is a job of its own (package job, the CTR model of
// job/ctrtrain) on an embedded cluster of its own, one after another,
// on one worker: validated every first-round trial's samples and stopped
// (its context cancelled, the job's orderly stop) at the first validation
// at its round's samples; its figure is the best validation it made.
// With Options.ModelRoot (worker -local: xps-models) a stopped trial
// saves its model there, a promoted trial goes on from it as any job
// resumes from its snapshot store, and so does the winner's job: the
// rounds then cost only what they add, and with 3x and 9 settings they
// are a sixth and a half of a run instead of a ninth and a third.
//
// # Invariants
//
//  1. No trial reads the test set: its job.test is dropped (and it writes
//     no test scores, no export, no snapshot). The test set is read by the
//     winner's run alone, the job the caller trains.
//  2. The trials' samples and the winner's run together stay within the
//     budget: Plan's rounds cost at most Budget - Run, or with Resume
//     Budget - Run + what the winner's last trial trained (each trial at
//     most its round's samples and the batches in flight when it stops).
//  3. Setting 0 is the job's own configuration, in the first round: the
//     search starts from the defaults, never without them.
//  4. The winner's configuration is built from the job's sources with
//     the winner's changes after them (as -set makes them), train.autotune
//     off, and written whole to autotune.output: that file run with
//     -config is the winner's job, without a search.
//  5. Search is I/O-free: the runner feeds it every trial's outcome in the
//     order Next gave them; it decides the rounds and the winner alone.
//
// # Files
//
//   - search.go: Plan (the budget in rounds) and Search, the successive halving core.
//   - setting.go: Setting, Draw (the search space) and the trial's configuration.
//   - run.go: Options, Result and Run: the plan, the trials in order, the winner written.
//   - trial.go: one trial on an embedded cluster, stopped at its round's samples, its model saved for its next.
package autotune
