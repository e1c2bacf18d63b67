// Command exportdump writes a model export chain in the dump format
// (package export/dump): one line of JSON (the chain, the config, each
// table's and dense vector's shape), then the arrays' little-endian
// bytes: each table's ids and float32 rows in id order, deletions
// applied, and the dense vectors. It is how the Python package
// (xps.export.open) and other tools outside Go read a model.
//
// Usage:
//
//	exportdump -store DIR|hdfs://HOST:PORT/PATH [-out FILE]
//
// Flags:
//
//	-store loc   the export store (the job's export.store). Required.
//	-out file    where to write the dump. Default "-": stdout.
//
// It reads the chain serve would load: the newest intact full export and
// the deltas after it. A store without one is an error, and nothing is
// written.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/xdlgo/xps/export/dump"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/snapshot"
)

func main() {
	store := flag.String("store", "", "the export store: a directory or hdfs://HOST:PORT/PATH (required)")
	out := flag.String("out", "-", `where to write the dump ("-": stdout)`)
	cli.ParseCommandLine("exportdump")
	if err := run(*store, *out); err != nil {
		cli.Fatal("exportdump", err)
	}
}

func run(store, out string) (err error) {
	if store == "" {
		flag.Usage()
		return errors.New("-store is required")
	}
	if !strings.HasPrefix(store, "hdfs://") {
		if _, err := os.Stat(store); err != nil {
			return err // opening would make the directory
		}
	}
	s, err := snapshot.OpenStore(store, "")
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := dump.Load(s)
	if err != nil {
		return err
	}
	w := os.Stdout
	if out != "-" {
		if w, err = os.Create(out); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, w.Close()) }()
	}
	if err := m.Write(w, store); err != nil {
		return fmt.Errorf("writing the dump: %w", err)
	}
	return nil
}
