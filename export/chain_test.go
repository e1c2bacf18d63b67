package export

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xdlgo/xps/snapshot"
)

// writeExport writes export seq of one table (dim 2, fp32) on one shard:
// rows of ids with value id, deletions of dels.
func writeExport(t *testing.T, s snapshot.Store, seq, base, full uint64, ids, dels []uint64) *Manifest {
	t.Helper()
	tw, err := snapshot.CreateTableFile(s, Dir(seq), TableName("emb", 0), true)
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(slices.Values(append(slices.Clone(ids), dels...)))
	for _, id := range keys {
		if slices.Contains(dels, id) {
			err = tw.Delete(id)
		} else {
			err = tw.Add(id, AppendRow(nil, FP32, []float32{float32(id), -float32(id)}))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := tw.Close()
	if err != nil {
		t.Fatal(err)
	}
	d, err := snapshot.WriteFileIn(s, Dir(seq), DenseName("mlp", 0), AppendRow(nil, FP32, []float32{1, 2, 3}))
	if err != nil {
		t.Fatal(err)
	}
	kind := KindDelta
	if base == 0 {
		kind = KindFull
	}
	m := &Manifest{Seq: seq, Kind: kind, Base: base, Full: full, Shards: 1,
		Tables: []Table{{Name: "emb", Dim: 2, Quant: FP32, Files: []snapshot.FileMeta{f}}},
		Dense:  []Dense{{Name: "mlp", Len: 3, Parts: []DensePart{{Lo: 0, Hi: 3, File: d}}}}}
	if err := Commit(s, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func seqsOf(ms []*Manifest) []uint64 {
	var out []uint64
	for _, m := range ms {
		out = append(out, m.Seq)
	}
	return out
}

func openStore(t *testing.T) (*snapshot.DirStore, string) {
	dir := t.TempDir()
	s, err := snapshot.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func TestChain(t *testing.T) {
	s, dir := openStore(t)
	if _, _, err := Next(s, nil); !errors.Is(err, ErrNoExport) {
		t.Fatalf("Next of an empty store: %v, want ErrNoExport", err)
	}
	writeExport(t, s, 1, 0, 1, []uint64{1, 2, 3}, nil)
	writeExport(t, s, 2, 1, 1, []uint64{2}, []uint64{3})
	m3 := writeExport(t, s, 3, 2, 1, []uint64{4}, []uint64{1})
	next, skipped, err := Next(s, nil)
	if err != nil || len(skipped) > 0 || !slices.Equal(seqsOf(next), []uint64{1, 2, 3}) {
		t.Fatalf("Next(nil) = %v, %v, %v; want exports 1, 2, 3", seqsOf(next), skipped, err)
	}
	if rows, dels := m3.Rows(); rows != 1 || dels != 1 {
		t.Errorf("export 3 holds %d rows and %d deletions, want 1 and 1", rows, dels)
	}
	// Up to date: nothing.
	if next, skipped, err := Next(s, m3); err != nil || len(next)+len(skipped) > 0 {
		t.Fatalf("Next(3) = %v, %v, %v; want nothing", seqsOf(next), skipped, err)
	}
	// A delta being written (no manifest yet) is not a link; a delta onto
	// another base is a missing link; a delta with a damaged file is
	// refused; each stops the walk with a reason.
	if err := os.MkdirAll(filepath.Join(dir, Dir(4), "tables"), 0o755); err != nil {
		t.Fatal(err)
	}
	next, skipped, err = Next(s, m3)
	if err != nil || len(next) != 0 || len(skipped) != 1 || !errors.Is(skipped[0], ErrCorrupt) {
		t.Fatalf("Next(3) with export 4 half-written = %v, %v, %v", seqsOf(next), skipped, err)
	}
	os.RemoveAll(filepath.Join(dir, Dir(4)))
	writeExport(t, s, 4, 2, 1, []uint64{5}, nil) // onto 2, not 3
	if next, skipped, _ := Next(s, m3); len(next) != 0 || len(skipped) != 1 {
		t.Fatalf("Next(3) with a delta onto 2 = %v, %v; want a missing link", seqsOf(next), skipped)
	} else {
		t.Logf("refused: %v", skipped[0])
	}
	os.RemoveAll(filepath.Join(dir, Dir(4)))
	m4 := writeExport(t, s, 4, 3, 1, []uint64{5}, nil)
	f := filepath.Join(dir, Dir(4), m4.Tables[0].Files[0].Name)
	b, _ := os.ReadFile(f)
	b[10] ^= 1
	os.WriteFile(f, b, 0o644)
	if next, skipped, _ := Next(s, m3); len(next) != 0 || len(skipped) != 1 || !errors.Is(skipped[0], ErrCorrupt) {
		t.Fatalf("Next(3) with a damaged delta = %v, %v; want it refused", seqsOf(next), skipped)
	}
	// A newer full export starts a new chain; its deltas follow.
	os.RemoveAll(filepath.Join(dir, Dir(4)))
	writeExport(t, s, 5, 0, 5, []uint64{1, 4}, nil)
	writeExport(t, s, 6, 5, 5, []uint64{7}, nil)
	if next, _, err := Next(s, m3); err != nil || !slices.Equal(seqsOf(next), []uint64{5, 6}) {
		t.Fatalf("Next(3) after full 5 = %v, %v; want 5, 6", seqsOf(next), err)
	}
	// Prune keeps the newest full and its chain.
	removed, err := Prune(s, 1)
	if err != nil || !slices.Equal(removed, []uint64{1, 2, 3}) {
		t.Fatalf("Prune(1) removed %v, %v; want 1, 2, 3", removed, err)
	}
	if removed, err := Prune(s, 2); err != nil || len(removed) != 0 {
		t.Fatalf("Prune(2) with one full removed %v, %v", removed, err)
	}
}

func TestManifestRefusals(t *testing.T) {
	s, dir := openStore(t)
	writeExport(t, s, 1, 0, 1, []uint64{1}, nil)
	p := filepath.Join(dir, Dir(1), ManifestName)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o644)
	if _, err := ReadManifest(s, 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a truncated manifest: %v, want ErrCorrupt", err)
	}
	bad := &Manifest{Seq: 2, Kind: KindDelta, Base: 3, Full: 1}
	if err := Commit(s, bad); err == nil {
		t.Error("Commit of a delta onto a later export succeeded")
	}
}
