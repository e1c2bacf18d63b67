// Command xcgen writes generated extreme multi-label data shaped like
// Amazon-670K (see package reader/synth/xcgen) in the XMLRepository text
// format ("N F L" header, then "l1,l2 f:v f:v ..." lines), which the
// reader's xml format reads.
//
// Usage:
//
//	xcgen -out train.txt [-test-out test.txt] [-samples N] [-test-samples M]
//	      [-features F] [-labels L] [-nnz K] [-seed S]
//
// Flags:
//
//	-out           output file for the training samples (required)
//	-samples       number of training samples (default 490449, Amazon-670K's)
//	-test-out      output file for a test split drawn from the same model
//	-test-samples  number of test samples (default 153025)
//	-features      number of features (default 135909)
//	-labels        number of labels (default 670091)
//	-nnz           mean non-zero features per sample (default 75)
//	-seed          world seed; train and test are streams 0 and 1 of it (default 1)
//	-quiet         no progress on stderr
//
// Progress goes to stderr every 65536 samples. SIGINT or SIGTERM stops the
// run and removes the partial file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/reader/synth/xcgen"
)

func main() {
	out := flag.String("out", "", "output file for the training samples (required)")
	samples := flag.Int("samples", 490449, "number of training samples")
	testOut := flag.String("test-out", "", "output file for the test samples")
	testSamples := flag.Int("test-samples", 153025, "number of test samples")
	features := flag.Int("features", xcgen.DefaultFeatures, "number of features")
	labels := flag.Int("labels", xcgen.DefaultLabels, "number of labels")
	nnz := flag.Int("nnz", xcgen.DefaultNNZ, "mean non-zero features per sample")
	seed := flag.Uint64("seed", xcgen.DefaultSeed, "world seed")
	quiet := flag.Bool("quiet", false, "no progress on stderr")
	cli.ParseCommandLine("xcgen")
	if *out == "" {
		flag.Usage()
		cli.Fatal("xcgen", errors.New("-out is required"))
	}
	g, err := xcgen.New(xcgen.Config{Features: *features, Labels: *labels, NNZ: *nnz, Seed: *seed})
	if err != nil {
		cli.Fatal("xcgen", err)
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	if err := write(ctx, g, *out, 0, *samples, *quiet); err != nil {
		stop()
		cli.Fatal("xcgen", err)
	}
	if *testOut != "" {
		if err := write(ctx, g, *testOut, 1, *testSamples, *quiet); err != nil {
			stop()
			cli.Fatal("xcgen", err)
		}
	}
}

// write writes n samples of stream to path, removing the file on failure.
func write(ctx context.Context, g *xcgen.Generator, path string, stream uint64, n int, quiet bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	start := time.Now()
	var progress func(int)
	if !quiet {
		progress = func(done int) {
			el := time.Since(start).Seconds()
			fmt.Fprintf(os.Stderr, "xcgen: %s: %d/%d samples (%.0f%%), %.0f samples/s\n",
				path, done, n, 100*float64(done)/float64(max(n, 1)), float64(done)/max(el, 1e-9))
		}
	}
	err = g.WriteXML(ctx, f, stream, n, progress)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	c := g.Config()
	fmt.Fprintf(os.Stderr, "xcgen: wrote %s: %d samples, %d features, %d labels in %v\n",
		path, n, c.Features, c.Labels, time.Since(start).Round(time.Millisecond))
	return nil
}
