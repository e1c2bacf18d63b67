package parquetsrc

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
)

// TestTokenWriter: the generated data written by a TokenWriter reads back
// as the samples of the same data written as libFFM.
func TestTokenWriter(t *testing.T) {
	dir := t.TempDir()
	var cfg datagen.Config
	cfg.EnsureDefaults()
	const n = 3000
	gen, err := datagen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := gen.Write(&text, n, reader.LibFFM, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "train.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := NewTokenWriter(f, cfg.Fields)
	gen, _ = datagen.New(cfg)
	if err := gen.Tokens(n, func(label, _ float32, fields [][]uint64) error { return tw.Write(label, fields) }); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cols := TokenColumns(cfg.Fields, cfg.UserFields, false)
	if err := Check(nil, []string{path}, cols, nil); err != nil {
		t.Fatal(err)
	}
	got := drain(t, openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: cols}))
	compareGroups(t, got, readText(t, dir, text.String(), reader.LibFFM))
	grouped := drain(t, openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: TokenColumns(cfg.Fields, cfg.UserFields, true)}))
	samples := 0
	for _, g := range grouped {
		samples += g.NumSamples()
		if len(g.Levels) != 2 || g.Levels[1].Len() != 1 {
			t.Fatalf("a group of %d levels", len(g.Levels))
		}
	}
	if samples != n || len(grouped) >= n/2 {
		t.Fatalf("grouped by user: %d samples in %d groups", samples, len(grouped))
	}
}
