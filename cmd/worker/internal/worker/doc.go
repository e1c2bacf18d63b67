// Package worker is cmd/worker's library (only that command imports it):
// the worker's flags and its run, from the config's sources to the
// summary: an embedded cluster (-local) or a running one (-etcd), the
// search of train.autotune, the job (xps.Train), and the job's
// machine-readable event stream (-events, job.Events) that the Python
// package reads.
//
// # Files
//
//   - worker.go: Flags (Bind) and Run: the config built, the cluster started or dialled, the row service of -rows as the job's sources, the job run and reported.
package worker
