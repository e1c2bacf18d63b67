// Package ctrgen writes the generated datasets to files: cmd/ctrgen's
// library (only that command imports it). The CTR data (package
// reader/synth/datagen) as libFFM, the sample-group format or Parquet
// (parquetsrc.TokenWriter, with a job config that trains on it); the
// user-behaviour sequences (reader/synth/seqgen) as text. Samples are
// streamed: memory does not grow with the training samples.
//
// # Files
//
//   - ctrgen.go: Options and Run; the text files; the Parquet files and their job config.
package ctrgen
