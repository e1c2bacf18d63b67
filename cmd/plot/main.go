// Command plot draws line plots of CSV files as an SVG (package
// cluster/ops/plot): one panel per y column, stacked, sharing the x column;
// one series per file (or per value of a label column).
//
// Usage:
//
//	plot -o drift.svg -x samples -y rows,rss_bytes [-by run] [-title T] [LABEL=]FILE.csv ...
//
// Flags:
//
//	-o       output SVG file (required)
//	-x       the x column (default samples)
//	-y       the y columns, comma-separated, one panel each; COLUMN:bytes
//	         labels its ticks in KiB/MiB/GiB (the default for a column whose
//	         name ends in "bytes"), COLUMN:number in K/M/G
//	-by      a column whose values name the series (default: one series
//	         per file, named LABEL, or the file's name without .csv)
//	-title   the figure's title
//
// Rows with an empty x or y cell are skipped. A y column without a point in
// any file is left out with a warning; a figure with no panel left, a cell
// that is not a finite number, or a missing file is an error.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xdlgo/xps/cluster/ops/plot"
	"github.com/xdlgo/xps/internal/cli"
)

type flags struct{ out, x, ys, by, title string }

func main() {
	var f flags
	flag.StringVar(&f.out, "o", "", "output SVG file (required)")
	flag.StringVar(&f.x, "x", "samples", "the x column")
	flag.StringVar(&f.ys, "y", "", "y columns, comma-separated, one panel each (COLUMN[:bytes|:number])")
	flag.StringVar(&f.by, "by", "", "column whose values name the series (default one series per file)")
	flag.StringVar(&f.title, "title", "", "title of the figure")
	flag.Usage = cli.Usage(flag.CommandLine, "plot", "FILE.csv...")
	flag.Parse()
	if err := run(f, flag.Args()); err != nil {
		cli.Fatal("plot", err)
	}
}

func run(f flags, files []string) error {
	if f.out == "" || f.ys == "" || len(files) == 0 {
		flag.Usage()
		return errors.New("-o, -y and at least one CSV file are required")
	}
	tables, names, err := readTables(files)
	if err != nil {
		return err
	}
	fig := plot.Figure{Title: f.title}
	for _, spec := range strings.Split(f.ys, ",") {
		col, unit, err := parseColumn(spec)
		if err != nil {
			return err
		}
		p := plot.Panel{Title: col, XLabel: f.x, YLabel: col, YUnit: unit}
		for i, t := range tables {
			s, err := t.Series(names[i], f.x, col, f.by)
			if errors.Is(err, plot.ErrNoData) {
				fmt.Fprintf(os.Stderr, "plot: %s: %v\n", files[i], err)
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", files[i], err)
			}
			p.Series = append(p.Series, s...)
		}
		if len(p.Series) == 0 {
			fmt.Fprintf(os.Stderr, "plot: no file has data for %q: panel left out\n", col)
			continue
		}
		fig.Panels = append(fig.Panels, p)
	}
	var buf bytes.Buffer
	if err := fig.WriteSVG(&buf); err != nil {
		return err
	}
	return os.WriteFile(f.out, buf.Bytes(), 0o644)
}

// readTables reads the CSV files, given as FILE or LABEL=FILE, and returns
// them with their series names.
func readTables(files []string) ([]*plot.Table, []string, error) {
	var tables []*plot.Table
	var names []string
	for _, arg := range files {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			path, name = arg, strings.TrimSuffix(filepath.Base(arg), ".csv")
		}
		fh, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		t, err := plot.ReadTable(fh)
		fh.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		tables, names = append(tables, t), append(names, name)
	}
	return tables, names, nil
}

// parseColumn splits COLUMN[:bytes|:number].
func parseColumn(spec string) (string, plot.Unit, error) {
	col, unit, _ := strings.Cut(strings.TrimSpace(spec), ":")
	switch {
	case col == "":
		return "", 0, fmt.Errorf("-y %q: empty column name", spec)
	case unit == "bytes" || unit == "" && strings.HasSuffix(col, "bytes"):
		return col, plot.Bytes, nil
	case unit == "number" || unit == "":
		return col, plot.Number, nil
	}
	return "", 0, fmt.Errorf("-y %q: unit %q, want bytes or number", spec, unit)
}
