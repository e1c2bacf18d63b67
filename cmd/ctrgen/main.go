// Command ctrgen writes the built-in generated CTR dataset (the one
// `worker -local` trains on) to libFFM or sample-group files, so that other
// tools, or the reference peer, can train on exactly the same samples.
//
// Usage:
//
//	ctrgen -train train.libffm -test test.libffm [-train-samples N] [-test-samples M] [-seed S] [-config job.yaml] [-drift-lifetime L]
//	ctrgen -seq [-history-len 50] [-drift=false] -train train.group -test test.group -format group
//
// Flags:
//
//	-train, -test    output files of the training (required) and test samples
//	-train-samples, -test-samples  how many (default data.train_samples, 500000; data.test_samples, 40000)
//	-config          YAML config whose data: section shapes the data
//	-format          libffm (default) or group: the sample-group format, a group per user run
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
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/model/metrics"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/reader/synth/seqgen"
)

type flags struct {
	train, test, cfgFile, format string
	nTrain, nTest, historyLen    int
	drift                        int64
	seed                         uint64
	seq, seqDrift                bool
}

// writeFunc is the Write method of both generators.
type writeFunc func(w io.Writer, n int, f reader.Format, sample func(label, prob float32)) error

func main() {
	var f flags
	flag.StringVar(&f.train, "train", "", "output file for the training samples (required)")
	flag.StringVar(&f.test, "test", "", "output file for the test samples")
	flag.IntVar(&f.nTrain, "train-samples", 0, "number of training samples (default from config)")
	flag.IntVar(&f.nTest, "test-samples", 0, "number of test samples (default from config)")
	flag.StringVar(&f.cfgFile, "config", "", "YAML config whose data: section shapes the data")
	flag.StringVar(&f.format, "format", "libffm", "output format: libffm or group")
	flag.Int64Var(&f.drift, "drift-lifetime", 0, "vocabulary drift: samples an id is drawn for before its rank gets a new id (default data.drift_lifetime of the config; 0 there: no drift)")
	flag.Uint64Var(&f.seed, "seed", 0, "the sample stream: another seed draws other samples of the same world (the same teacher and users), e.g. a second day or a validation file (default data.seed of the config, 1)")
	flag.BoolVar(&f.seq, "seq", false, "write the user-behaviour sequence dataset (reader/synth/seqgen) instead")
	flag.IntVar(&f.historyLen, "history-len", seqgen.DefaultMaxLen, "with -seq: the longest history")
	flag.BoolVar(&f.seqDrift, "drift", true, "with -seq: the user's interest moves along the history")
	cli.ParseCommandLine("ctrgen")
	if err := run(f); err != nil {
		cli.Fatal("ctrgen", err)
	}
}

func run(f flags) error {
	format := map[string]reader.Format{"libffm": reader.LibFFM, "group": reader.SampleGroup}[f.format]
	if format == 0 {
		return fmt.Errorf("-format %q: want libffm or group", f.format)
	}
	if f.train == "" {
		flag.Usage()
		return errors.New("-train is required")
	}
	cfg := config.Default()
	if f.cfgFile != "" {
		var err error
		if cfg, err = config.Load(f.cfgFile); err != nil {
			return err
		}
	}
	d := cfg.Data
	d.TrainSamples = cmp.Or(max(f.nTrain, 0), d.TrainSamples)
	d.TestSamples = cmp.Or(max(f.nTest, 0), d.TestSamples)
	d.DriftLifetime = cmp.Or(f.drift, d.DriftLifetime)
	d.Seed = cmp.Or(f.seed, d.Seed)
	gen, test, err := generators(f, d.Config)
	if err != nil {
		return err
	}
	if err := write(gen, f.train, d.TrainSamples, format, nil); err != nil {
		return err
	}
	if f.test == "" {
		return nil
	}
	var labels, probs []float32
	keep := func(y, p float32) { labels, probs = append(labels, y), append(probs, p) }
	if err := write(test, f.test, d.TestSamples, format, keep); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ctrgen: best achievable test AUC %.4f\n", metrics.AUC(labels, probs))
	return nil
}

// generators returns the training and test streams: datagen's test set
// continues its training stream, seqgen's is a Fork.
func generators(f flags, d datagen.Config) (train, test writeFunc, err error) {
	if !f.seq {
		gen, err := datagen.New(d)
		return gen.Write, gen.Write, err
	}
	gen, err := seqgen.New(seqgen.Config{MaxLen: f.historyLen, Drift: f.seqDrift, Seed: d.Seed, WorldSeed: d.WorldSeed})
	if err != nil {
		return nil, nil, err
	}
	return gen.Write, gen.Fork(seqgen.TestStream).Write, nil
}

// write streams the next n samples of gen to a new file at path.
func write(gen writeFunc, path string, n int, format reader.Format, sample func(y, p float32)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = gen(w, n, format, sample)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "ctrgen: wrote %d samples to %s\n", n, path)
	return nil
}
