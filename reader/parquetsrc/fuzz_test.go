package parquetsrc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/xdlgo/xps/reader"
)

// FuzzSource: no file bytes make the source panic or loop; whatever it
// reads before an error are valid groups.
func FuzzSource(f *testing.F) {
	dir := f.TempDir()
	for i, o := range []wopts{{codec: compress.Codecs.Snappy, dict: true, rowGroup: 20},
		{codec: compress.Codecs.Uncompressed, twoLevel: true, v2: true, pageSize: 200}} {
		path := filepath.Join(dir, "seed.parquet")
		writeArrow(f, path, genRows(40, uint64(i), !o.twoLevel), o)
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, true)
	}
	f.Add([]byte("PAR1"), false)
	f.Fuzz(func(t *testing.T, data []byte, grouped bool) {
		path := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := NewSource([]reader.FileSplit{{Path: path}}, Options{Columns: testColumns(grouped, true), OnError: reader.SkipBad})
		if err != nil {
			return
		}
		// A footer may claim billions of rows of nulls, which RLE holds in
		// a few bytes: a valid file, slow to read; not what this looks for.
		for _, rg := range src.f.pf.Metadata().RowGroups {
			for _, c := range rg.Columns {
				if rg.NumRows > 1e5 || c.MetaData.NumValues > 1e5 {
					src.Close()
					return
				}
			}
		}
		defer src.Close()
		var g reader.Group
		for range 100_000 {
			if err := src.Next(context.Background(), &g); err != nil {
				return
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("more groups than the rows the footer claims")
	})
}
