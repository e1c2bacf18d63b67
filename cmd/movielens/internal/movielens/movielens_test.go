package movielens

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
)

const dataDir = "../../../../../shared/data/ml-100k" // the module root is four levels up

// TestConvertRealData converts ua.test and reads both outputs back: the
// same samples, labels and feature ids, one group per user.
func TestConvertRealData(t *testing.T) {
	if _, err := os.Stat(filepath.Join(dataDir, "ua.test")); err != nil {
		t.Skipf("MovieLens-100K is absent (%v): ../shared/data/ml-100k is needed for this test", err)
	}
	d, err := Open(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var group, ffm bytes.Buffer
	c, err := d.Convert("ua.test", &group, &ffm)
	if err != nil {
		t.Fatal(err)
	}
	if c.Samples != 9430 || c.Groups != 943 || c.Positives == 0 || c.Positives == c.Samples {
		t.Fatalf("counts %+v, want 9430 samples in 943 groups", c)
	}
	gs := readAll(t, "group", group.String())
	fs := readAll(t, "libffm", ffm.String())
	if len(gs) != c.Groups || len(fs) != c.Samples {
		t.Fatalf("%d groups and %d libffm lines read back", len(gs), len(fs))
	}
	k := 0
	for _, g := range gs {
		uf, uid, _ := g.Levels[1].Line(0)
		for s := 0; s < g.NumSamples(); s++ {
			f0, id0, _ := g.Levels[0].Line(s)
			ff, fid, _ := fs[k].Levels[0].Line(0)
			want := append(append([]uint64(nil), uid...), id0...)
			if g.Label(s) != fs[k].Label(0) || len(ff) != len(uf)+len(f0) || !slices.Equal(fid, want) {
				t.Fatalf("sample %d differs between the two outputs", k)
			}
			k++
		}
	}
}

func readAll(t *testing.T, format, text string) []*reader.Group {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := reader.ParseFormat(format)
	src, err := reader.OpenFiles([]reader.FileSplit{{Path: path}}, f, reader.StopOnBad)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := reader.ReadAll(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil {
		t.Fatal("Open of an empty directory: no error")
	}
	os.WriteFile(filepath.Join(dir, "u.user"), []byte("1|24|M\n"), 0o644)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "u.user:1") {
		t.Fatalf("short u.user line: %v, want an error naming u.user:1", err)
	}
}
