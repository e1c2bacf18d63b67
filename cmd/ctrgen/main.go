// Command ctrgen writes the built-in generated CTR dataset (the one
// `worker -local` trains on) to libFFM or sample-group files, so that other
// tools, or the reference peer, can train on exactly the same samples.
//
// Usage:
//
//	ctrgen -train train.libffm -test test.libffm [-train-samples N] [-test-samples M] [-config job.yaml]
//
// Flags:
//
//	-train           output file for the training samples (required)
//	-test            output file for the test samples (optional)
//	-train-samples   number of training samples (default: data.train_samples of the config, 500000)
//	-test-samples    number of test samples (default: data.test_samples, 40000)
//	-config          YAML config whose data: section shapes the data
//	-format          libffm (default) or group: the sample-group format, one
//	                 group per user run (user fields on a level-1 line)
//
// It prints the best achievable test AUC (the hidden teacher's) on stderr.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"

	"context"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/internal/datagen"
	"github.com/xdlgo/xps/internal/metrics"
	"github.com/xdlgo/xps/reader"
)

func main() {
	train := flag.String("train", "", "output file for the training samples (required)")
	test := flag.String("test", "", "output file for the test samples")
	nTrain := flag.Int("train-samples", 0, "number of training samples (default from config)")
	nTest := flag.Int("test-samples", 0, "number of test samples (default from config)")
	cfgFile := flag.String("config", "", "YAML config whose data: section shapes the data")
	format := flag.String("format", "libffm", "output format: libffm or group")
	flag.Parse()
	if err := run(*train, *test, *nTrain, *nTest, *cfgFile, *format); err != nil {
		cli.Fatal("ctrgen", err)
	}
}

func run(train, test string, nTrain, nTest int, cfgFile, format string) error {
	if format != "libffm" && format != "group" {
		return fmt.Errorf("-format %q: want libffm or group", format)
	}
	if train == "" {
		flag.Usage()
		return errors.New("-train is required")
	}
	cfg := config.Default()
	if cfgFile != "" {
		var err error
		if cfg, err = config.Load(cfgFile); err != nil {
			return err
		}
	}
	d := cfg.Data
	if nTrain > 0 {
		d.TrainSamples = nTrain
	}
	if nTest > 0 {
		d.TestSamples = nTest
	}
	gen, err := datagen.New(d.Config)
	if err != nil {
		return err
	}
	write := func(path string, n int) ([]float32, error) {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		writeData := gen.WriteLibFFM
		if format == "group" {
			writeData = gen.WriteGroups
		}
		probs, err := writeData(w, n)
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintf(os.Stderr, "ctrgen: wrote %d samples to %s\n", n, path)
		return probs, nil
	}
	if _, err := write(train, d.TrainSamples); err != nil {
		return err
	}
	if test != "" {
		probs, err := write(test, d.TestSamples)
		if err != nil {
			return err
		}
		// Read the file back: it checks the file and gives the labels.
		labels, err := readLabels(test, format)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "ctrgen: best achievable test AUC %.4f\n", metrics.AUC(labels, probs))
	}
	return nil
}

// readLabels reads a written file back and returns its labels.
func readLabels(path, format string) ([]float32, error) {
	f, err := reader.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	src, err := reader.OpenFiles([]reader.FileSplit{{Path: path}}, f, reader.StopOnBad)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	groups, err := reader.ReadAll(context.Background(), src)
	if err != nil {
		return nil, err
	}
	var labels []float32
	for _, g := range groups {
		for i := g.Pos.Index; i < g.NumSamples(); i++ {
			labels = append(labels, g.Label(i))
		}
	}
	return labels, nil
}
