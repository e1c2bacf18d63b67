// Command movielens converts MovieLens-100K (../shared/data/ml-100k) into
// the sample-group format and libFFM, for training and for the PyTorch
// reference (see cmd/movielens/internal/movielens for the fields):
//
//	go run ./cmd/movielens -data ../shared/data/ml-100k -out /tmp/ml
//
// writes ua.base.group, ua.test.group, ua.base.libffm and ua.test.libffm.
//
// With -history N (N > 0; 50 is the recommended value, 0 the default: off)
// it writes the sequence mode instead, for DIN and DIEN: every rating of
// u.data with the user's last N movies rated before it (fields 8-11), split
// by time at one global cutoff (the latest 20% of the ratings are test):
//
//	go run ./cmd/movielens -history 50 -out /tmp/mlseq
//
// writes seq.base.group, seq.test.group, seq.base.libffm and
// seq.test.libffm (base = train, as in ua.base) and prints the cutoff and
// the counts of each part.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/xdlgo/xps/cmd/movielens/internal/movielens"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	data := flag.String("data", "../shared/data/ml-100k", "MovieLens-100K directory")
	out := flag.String("out", "", "output directory (required)")
	history := flag.Int("history", 0, "sequence mode: the maximum history length (recommended 50; 0: off)")
	cli.ParseCommandLine("movielens")
	if err := run(*data, *out, *history); err != nil {
		cli.Fatal("movielens", err)
	}
}

func run(data, out string, history int) error {
	if out == "" {
		flag.Usage()
		return fmt.Errorf("-out is required")
	}
	d, err := movielens.Open(data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if history > 0 {
		return runSequences(d, out, history)
	}
	for _, name := range []string{"ua.base", "ua.test"} {
		c, err := convert(out, name, func(g, f io.Writer) (movielens.Counts, error) { return d.Convert(name, g, f) })
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d samples (%d positive) in %d user groups\n", name, c.Samples, c.Positives, c.Groups)
	}
	return nil
}

func runSequences(d *movielens.Dataset, out string, history int) error {
	s, err := d.Sequences(movielens.RatingsFile, movielens.SeqOptions{History: history})
	if err != nil {
		return err
	}
	fmt.Printf("time split: cutoff %d (%s): train = timestamp < cutoff, test = timestamp >= cutoff\n",
		s.Cutoff(), time.Unix(s.Cutoff(), 0).UTC().Format(time.RFC3339))
	for _, p := range []movielens.Part{movielens.Train, movielens.Test} {
		name := map[movielens.Part]string{movielens.Train: "seq.base", movielens.Test: "seq.test"}[p]
		c, err := convert(out, name, func(g, f io.Writer) (movielens.Counts, error) { return s.Write(p, g, f) })
		if err != nil {
			return err
		}
		fmt.Printf("%s (%v): %d samples (%d positive) in %d groups; %d without history, mean history %.1f\n",
			name, p, c.Samples, c.Positives, c.Groups, c.EmptyHistory, float64(c.HistoryItems)/float64(max(c.Samples, 1)))
	}
	return nil
}

// convert creates out/name.group and out/name.libffm and fills them with fn.
func convert(out, name string, fn func(group, ffm io.Writer) (movielens.Counts, error)) (movielens.Counts, error) {
	g, err := os.Create(filepath.Join(out, name+".group"))
	if err != nil {
		return movielens.Counts{}, err
	}
	f, err := os.Create(filepath.Join(out, name+".libffm"))
	if err != nil {
		g.Close()
		return movielens.Counts{}, err
	}
	c, err := fn(g, f)
	for _, file := range []*os.File{g, f} {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	return c, err
}
