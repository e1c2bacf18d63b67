package ctrgen

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/model/metrics"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/parquetsrc"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/reader/synth/seqgen"
)

// Options are ctrgen's flags.
type Options struct {
	Train, Test, ConfigFile, Format string
	Columns                         string
	TrainSamples, TestSamples       int
	HistoryLen                      int
	DriftLifetime                   int64
	Seed                            uint64
	Seq, SeqDrift                   bool
}

// writeFunc is the Write method of both generators.
type writeFunc func(w io.Writer, n int, f reader.Format, sample func(label, prob float32)) error

// ErrUsage is wrapped by the errors about flags that do not go together.
var ErrUsage = errors.New("ctrgen: bad flags")

// Run writes the files o names.
func Run(f Options) error {
	format := map[string]reader.Format{"libffm": reader.LibFFM, "group": reader.SampleGroup, "parquet": reader.Parquet}[f.Format]
	if format == 0 {
		return fmt.Errorf("%w: -format %q: want libffm, group or parquet", ErrUsage, f.Format)
	}
	if f.Columns != "" && format != reader.Parquet {
		return fmt.Errorf("%w: -columns goes with -format parquet", ErrUsage)
	}
	if format == reader.Parquet && f.Seq {
		return fmt.Errorf("%w: -format parquet writes the CTR data, not -seq's sequences", ErrUsage)
	}
	if f.Train == "" {
		return fmt.Errorf("%w: -train is required", ErrUsage)
	}
	cfg := config.Default()
	if f.ConfigFile != "" {
		var err error
		if cfg, err = config.Load(f.ConfigFile); err != nil {
			return err
		}
	}
	d := cfg.Data
	d.TrainSamples = cmp.Or(max(f.TrainSamples, 0), d.TrainSamples)
	d.TestSamples = cmp.Or(max(f.TestSamples, 0), d.TestSamples)
	d.DriftLifetime = cmp.Or(f.DriftLifetime, d.DriftLifetime)
	d.Seed = cmp.Or(f.Seed, d.Seed)
	if format == reader.Parquet {
		return runParquet(f, d)
	}
	gen, test, err := generators(f, d.Config)
	if err != nil {
		return err
	}
	if err := write(gen, f.Train, d.TrainSamples, format, nil); err != nil {
		return err
	}
	if f.Test == "" {
		return nil
	}
	var labels, probs []float32
	keep := func(y, p float32) { labels, probs = append(labels, y), append(probs, p) }
	if err := write(test, f.Test, d.TestSamples, format, keep); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ctrgen: best achievable test AUC %.4f\n", metrics.AUC(labels, probs))
	return nil
}

// generators returns the training and test streams: datagen's test set
// continues its training stream, seqgen's is a Fork.
func generators(f Options, d datagen.Config) (train, test writeFunc, err error) {
	if !f.Seq {
		gen, err := datagen.New(d)
		return gen.Write, gen.Write, err
	}
	gen, err := seqgen.New(seqgen.Config{MaxLen: f.HistoryLen, Drift: f.SeqDrift, Seed: d.Seed, WorldSeed: d.WorldSeed})
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

// runParquet writes the training and test samples as Parquet files, and
// with -columns a job config that trains on them.
func runParquet(f Options, d config.DataConfig) error {
	gen, err := datagen.New(d.Config)
	if err != nil {
		return err
	}
	if err := writeParquet(gen, f.Train, d.TrainSamples, nil); err != nil {
		return err
	}
	if f.Test != "" {
		var labels, probs []float32
		keep := func(y, p float32) { labels, probs = append(labels, y), append(probs, p) }
		if err := writeParquet(gen, f.Test, d.TestSamples, keep); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "ctrgen: best achievable test AUC %.4f\n", metrics.AUC(labels, probs))
	}
	if f.Columns == "" {
		return nil
	}
	return writeJobConfig(f, d.Fields, d.UserFields)
}

// writeParquet streams the next n samples of gen to a Parquet file.
func writeParquet(gen *datagen.Generator, path string, n int, sample func(y, p float32)) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	tw := parquetsrc.NewTokenWriter(w, gen.Fields())
	err = gen.Tokens(n, func(label, p float32, fields [][]uint64) error {
		if sample != nil {
			sample(label, p)
		}
		return tw.Write(label, fields)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "ctrgen: wrote %d samples to %s\n", n, path)
	return nil
}

// writeJobConfig writes the job config of -columns: the files, format
// parquet and the column map, the user fields user-level (a sample group
// per user run, as the built-in data trains).
func writeJobConfig(f Options, fields, userFields int) error {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by ctrgen -format parquet: trains on its files.\njob:\n  train: [%q]\n", abs(f.Train))
	if f.Test != "" {
		fmt.Fprintf(&b, "  test: [%q]\n", abs(f.Test))
	}
	b.WriteString("train:\n  format: parquet\n  columns:\n")
	for _, line := range strings.Split(columnsYAML(fields, userFields), "\n") {
		if line != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	if err := os.WriteFile(f.Columns, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ctrgen: wrote the job config %s (worker -config %s)\n", f.Columns, f.Columns)
	return nil
}

// columnsYAML is parquetsrc.TokenColumns as YAML.
func columnsYAML(fields, userFields int) string {
	m := parquetsrc.TokenColumns(fields, userFields, true)
	var b strings.Builder
	fmt.Fprintf(&b, "label: %s\nfields:\n", m.Label)
	for _, c := range m.Fields {
		if c.User {
			fmt.Fprintf(&b, "  - {column: %s, user: true}\n", c.Column)
		} else {
			fmt.Fprintf(&b, "  - {column: %s}\n", c.Column)
		}
	}
	return b.String()
}
