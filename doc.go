// Package xps is the Go entry point of the platform: Train runs a
// worker's job, for whatever model the configuration declares, on a
// cluster.
//
// A program that trains in one process starts an embedded cluster
// (package cluster: etcd, AMS shards and the scheduler, as etcd's embed
// package is for etcd), builds a config.Config (the same structs as the
// YAML file) and calls Train with the cluster's etcd client; its samples
// come from files named in the config, or from its own reader.Source
// (job.Options.Source). See examples/ for a complete program, and
// ARCHITECTURE.md for the packages by layer.
//
// # Files
//
//   - tune.go: Tune, the search train.autotune runs before the job (package autotune) on worker -local.
//   - train.go: Train, a worker's job for its model kind, and Result (CTRResult, SLIDEResult), the summary of whichever model it trained.
package xps
