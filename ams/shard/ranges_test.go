package shard

import (
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
)

// withRangeRows has snapshots and full exports list a stripe's rows n at
// a time (about) until the test ends.
func withRangeRows(t *testing.T, n int) {
	old := rangeRows
	rangeRows = n
	t.Cleanup(func() { rangeRows = old })
}

// TestRangesWriteTheSameFiles: a table listed and written range by range
// (rangeRows cut small, so that each stripe's rows take several ranges)
// gives the same files, byte for byte, as listed whole: a snapshot of
// rows in DRAM, and a snapshot and a full export of a tiered table,
// whose rows on disk are merged range by range.
func TestRangesWriteTheSameFiles(t *testing.T) {
	store, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := newTestCluster(t, 1) // 3 stripes
	ids := idRange(1<<40, 3000)
	src.do(t, ids, nil, false)
	src.train(t, ids, 3)
	tiered := newLifeShard(t, ams.TableSpec{Budget: ams.Budget{Rows: 400}, Storage: ams.StorageTiered}, Options{TierDirs: []string{t.TempDir()}})
	all := idRange(0, 2000)
	for i := 0; i < len(all); i += 100 {
		tiered.pushRandom(t, all[i:i+100], uint64(i))
	}
	write := map[string]func(seq uint64) []snapshot.FileMeta{
		"snapshot": func(seq uint64) []snapshot.FileMeta {
			part, err := src.shards[0].WriteSnapshot(store, seq, 0)
			if err != nil {
				t.Fatal(err)
			}
			return part.Tables[0].Files
		},
		"tiered snapshot": func(seq uint64) []snapshot.FileMeta {
			part, err := tiered.s.WriteSnapshot(store, seq, 0)
			if err != nil {
				t.Fatal(err)
			}
			return part.Tables[0].Files
		},
		"tiered full export": func(seq uint64) []snapshot.FileMeta {
			m, err := tiered.export(t, store, seq, 0)
			if err != nil {
				t.Fatal(err)
			}
			return m.Tables[0].Files
		},
	}
	seq := uint64(1)
	for name, w := range write {
		whole := w(seq)
		withRangeRows(t, 50)
		ranged := w(seq + 1)
		rangeRows = 1 << 19
		seq += 2
		same := func(a, b snapshot.FileMeta) bool {
			return a.Size == b.Size && a.CRC32C == b.CRC32C && a.Rows == b.Rows && a.Deletes == b.Deletes
		}
		if !slices.EqualFunc(whole, ranged, same) || whole[0].Rows == 0 {
			t.Fatalf("%s: listed whole %+v, by ranges %+v", name, whole, ranged)
		}
	}
}
