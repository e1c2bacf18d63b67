// Command movielens converts MovieLens-100K (../shared/data/ml-100k) into
// the sample-group format and libFFM, for training and for the PyTorch
// reference (see internal/movielens for the fields):
//
//	go run ./cmd/movielens -data ../shared/data/ml-100k -out /tmp/ml
//
// writes ua.base.group, ua.test.group, ua.base.libffm and ua.test.libffm.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/internal/movielens"
)

func main() {
	data := flag.String("data", "../shared/data/ml-100k", "MovieLens-100K directory")
	out := flag.String("out", "", "output directory (required)")
	cli.ParseCommandLine("movielens")
	if err := run(*data, *out); err != nil {
		cli.Fatal("movielens", err)
	}
}

func run(data, out string) error {
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
	for _, name := range []string{"ua.base", "ua.test"} {
		g, err := os.Create(filepath.Join(out, name+".group"))
		if err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(out, name+".libffm"))
		if err != nil {
			g.Close()
			return err
		}
		c, err := d.Convert(name, g, f)
		for _, file := range []*os.File{g, f} {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d samples (%d positive) in %d user groups\n", name, c.Samples, c.Positives, c.Groups)
	}
	return nil
}
