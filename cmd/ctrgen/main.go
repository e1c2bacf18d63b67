// Command ctrgen writes the built-in generated CTR dataset (the one
// `worker -local` trains on) to libFFM, sample-group or Parquet files, so
// that other tools, or the reference peer, can train on exactly the same
// samples.
//
// Usage:
//
//	ctrgen -train train.libffm -test test.libffm [-train-samples N] [-test-samples M] [-seed S] [-config job.yaml] [-drift-lifetime L]
//	ctrgen -seq [-history-len 50] [-drift=false] -train train.group -test test.group -format group
//	ctrgen -format parquet -train train.parquet -test test.parquet -columns job.yaml
//
// Flags:
//
//	-train, -test    output files of the training (required) and test samples
//	-train-samples, -test-samples  how many (default data.train_samples, 500000; data.test_samples, 40000)
//	-config          YAML config whose data: section shapes the data
//	-format          libffm (default), group (the sample-group format, a group per user run) or
//	                 parquet (a column "label" and a list column "f<N>" of tokens per field)
//	-columns         with -format parquet: write there a job config that trains on the files
//	                 (job.train, job.test, train.format and train.columns, user fields user-level)
//	-drift-lifetime  samples an id is drawn for before its rank gets a new id (data.drift_lifetime; 0: none)
//	-seed            the sample stream (default data.seed, 1): another draws other samples
//	                 of the same world (teacher and users): a second day, a validation file
//	-seq             write reader/synth/seqgen's user-behaviour sequences (DIN, DIEN; fields there)
//	-history-len, -drift  with -seq: the longest history (50), interests move (true)
//
// The samples are streamed to the files: memory does not grow with the
// training samples (the test set keeps its labels and teacher
// probabilities). The test samples continue the training stream (with
// drift, in the vocabulary right after it; with -seq another stream of the
// same world: seqgen's Fork). It prints the best achievable test AUC.
package main

import (
	"errors"
	"flag"

	"github.com/xdlgo/xps/cmd/ctrgen/internal/ctrgen"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/reader/synth/seqgen"
)

func main() {
	var f ctrgen.Options
	flag.StringVar(&f.Train, "train", "", "output file for the training samples (required)")
	flag.StringVar(&f.Test, "test", "", "output file for the test samples")
	flag.IntVar(&f.TrainSamples, "train-samples", 0, "number of training samples (default from config)")
	flag.IntVar(&f.TestSamples, "test-samples", 0, "number of test samples (default from config)")
	flag.StringVar(&f.ConfigFile, "config", "", "YAML config whose data: section shapes the data")
	flag.StringVar(&f.Format, "format", "libffm", "output format: libffm, group or parquet")
	flag.StringVar(&f.Columns, "columns", "", "with -format parquet: write a job config training on the files here")
	flag.Int64Var(&f.DriftLifetime, "drift-lifetime", 0, "vocabulary drift: samples an id is drawn for before its rank gets a new id (default data.drift_lifetime of the config; 0 there: no drift)")
	flag.Uint64Var(&f.Seed, "seed", 0, "the sample stream: another seed draws other samples of the same world (the same teacher and users), e.g. a second day or a validation file (default data.seed of the config, 1)")
	flag.BoolVar(&f.Seq, "seq", false, "write the user-behaviour sequence dataset (reader/synth/seqgen) instead")
	flag.IntVar(&f.HistoryLen, "history-len", seqgen.DefaultMaxLen, "with -seq: the longest history")
	flag.BoolVar(&f.SeqDrift, "drift", true, "with -seq: the user's interest moves along the history")
	cli.ParseCommandLine("ctrgen")
	if err := ctrgen.Run(f); err != nil {
		if errors.Is(err, ctrgen.ErrUsage) {
			flag.Usage()
		}
		cli.Fatal("ctrgen", err)
	}
}
