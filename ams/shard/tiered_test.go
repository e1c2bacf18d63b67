package shard

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
)

// tieredSpec is snapSpec kept in tiers: budget rows per shard in DRAM.
func tieredSpec(budget int64) ams.TableSpec {
	spec := snapSpec
	spec.Budget = ams.Budget{Rows: budget}
	spec.Storage = ams.StorageTiered
	return spec
}

// zipfBatches draws n batches of up to size ids each from a Zipf law
// (exponent 1.1, as the generator's) over a universe of random ids, each
// batch's ids unique.
func zipfBatches(n, size, universe int, seed uint64) [][]uint64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	ids := randomIDs(universe, seed)
	z := rand.NewZipf(rng, 1.1, 1, uint64(universe-1))
	out := make([][]uint64, n)
	for b := range out {
		seen := map[uint64]bool{}
		for range size {
			id := ids[z.Uint64()]
			if !seen[id] {
				seen[id] = true
				out[b] = append(out[b], id)
			}
		}
	}
	return out
}

// snapshotRows returns the rows of table emb in snapshot m of store, by
// id, as their encodings.
func snapshotRows(t *testing.T, store snapshot.Store, m *snapshot.Manifest) map[uint64]string {
	t.Helper()
	rows := map[uint64]string{}
	for _, e := range m.Tables {
		for _, f := range e.Files {
			tr, err := snapshot.OpenTable(store, m.Seq, f)
			if err != nil {
				t.Fatal(err)
			}
			for tr.Next() {
				id, v := tr.Row()
				if _, dup := rows[id]; dup {
					t.Fatalf("row %d is in the snapshot twice", id)
				}
				rows[id] = string(v)
			}
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			tr.Close()
		}
	}
	return rows
}

// tierUsage sums the tier figures of table emb over c's shards, and
// returns the most DRAM rows one shard holds.
func (c *testCluster) tierUsage(t *testing.T) (ams.TierUsage, int64) {
	t.Helper()
	var u ams.TierUsage
	var most int64
	for _, s := range c.shards {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		u.Add(st.Tables[0].Tier)
		most = max(most, st.Tables[0].Rows)
	}
	return u, most
}

// TestTieredEquivalence: the same pulls and pushes (Zipf ids, Adam) on a
// table in memory and on a tiered one whose DRAM budget holds a tenth of
// the rows end with the same rows, bit for bit (values, optimizer state,
// statistics), written by snapshots that read both tiers; the tiered
// table's DRAM stayed within its budget, rows moved both ways, and a
// restore of its snapshot onto 3 shards and onto 1 gives the same rows
// again, with DRAM within the budget.
func TestTieredEquivalence(t *testing.T) {
	batches := zipfBatches(300, 512, 30000, 11)
	distinct := map[uint64]bool{}
	for _, b := range batches {
		for _, id := range b {
			distinct[id] = true
		}
	}
	budget := int64(len(distinct) / 10 / 2) // a tenth of the rows, over 2 shards
	mem, tiered := newTestCluster(t, 2), newTestClusterOf(t, 2, tieredSpec(budget))
	for i, b := range batches {
		for _, c := range []*testCluster{mem, tiered} {
			c.do(t, b, nil, false)
			c.train(t, b, uint64(i))
		}
	}
	u, most := tiered.tierUsage(t)
	t.Logf("%d rows, budget %d per shard: %+v, DRAM hit ratio %.3f", len(distinct), budget, u, u.HitRatio())
	if u.Promoted == 0 || u.Demoted == 0 || u.ColdRows == 0 || u.DiskBatches == 0 {
		t.Fatalf("no traffic between the tiers: %+v", u)
	}
	if slack := budget/16 + 3; most > budget+slack {
		t.Fatalf("a shard holds %d rows in DRAM, over its budget %d (+%d)", most, budget, slack)
	}
	stores := make([]snapshot.Store, 2)
	want := map[uint64]string{}
	for i, c := range []*testCluster{mem, tiered} {
		var err error
		if stores[i], err = snapshot.OpenDir(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		rows := snapshotRows(t, stores[i], c.snapshotTo(t, stores[i], 1))
		if i == 0 {
			want = rows
			continue
		}
		checkSameRows(t, "tiered", rows, want, len(distinct))
	}
	m, _, err := snapshot.Latest(stores[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 1} {
		dst := newTestClusterOf(t, n, tieredSpec(budget))
		for i, s := range dst.shards {
			if err := s.Restore(stores[1], m, dst.ownership(i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, most := dst.tierUsage(t); most > budget+budget/16+3 {
			t.Fatalf("restored onto %d: a shard holds %d rows in DRAM, over its budget %d", n, most, budget)
		}
		store, err := snapshot.OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		checkSameRows(t, "restored", snapshotRows(t, store, dst.snapshotTo(t, store, 2)), want, len(distinct))
	}
}

func checkSameRows(t *testing.T, what string, got, want map[uint64]string, n int) {
	t.Helper()
	if len(got) != len(want) || len(want) != n {
		t.Fatalf("%s: %d rows, want %d (%d ids)", what, len(got), len(want), n)
	}
	for id, r := range want {
		if got[id] != r {
			t.Fatalf("%s: row %d differs from the table in memory's", what, id)
		}
	}
}

// TestTieredRefusals: a tiered table without a budget, on a shard
// without tier directories, in a directory outside them or one that
// cannot be made, and a request whose part is over a stripe's budget
// share are refused with errors that say so; nothing is created.
func TestTieredRefusals(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	declare := func(opts Options, spec ams.TableSpec) error {
		s := New(opts)
		defer s.Close()
		_, err := s.Declare(1, []ams.TableSpec{spec}, nil)
		return err
	}
	noBudget := tieredSpec(0)
	outside := tieredSpec(10)
	outside.TierDir = t.TempDir()
	underFile := tieredSpec(10)
	underFile.TierDir = filepath.Join(file, "tier")
	for _, c := range []struct {
		name string
		opts Options
		spec ams.TableSpec
		is   error
		says string
	}{
		{"no budget", Options{TierDirs: []string{root}}, noBudget, ams.ErrBadSpec, "needs a budget"},
		{"no tier dirs", Options{}, tieredSpec(10), ams.ErrBadSpec, "-tier-dir"},
		{"outside", Options{TierDirs: []string{root}}, outside, ams.ErrStoreNotAllowed, outside.TierDir},
		{"under a file", Options{TierDirs: []string{root}}, underFile, ams.ErrStoreNotAllowed, "not a directory"},
	} {
		err := declare(c.opts, c.spec)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.is, c.says)
		}
	}
	if err := (Options{TierDirs: []string{"hdfs://nn:8020/x"}}).Validate(); !errors.Is(err, ams.ErrBadSpec) {
		t.Errorf("a tier dir on HDFS: %v", err)
	}
	s := New(Options{Stripes: 2, TierDirs: []string{root}})
	defer s.Close()
	if _, err := s.Declare(1, []ams.TableSpec{tieredSpec(20)}, nil); err != nil {
		t.Fatal(err)
	}
	ids := randomIDs(200, 3)
	err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, len(ids)*snapSpec.Dim)}}, true)
	if !errors.Is(err, ams.ErrBadRequest) || !strings.Contains(err.Error(), "budget share") {
		t.Fatalf("a part over the budget share: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "ams")); err != nil {
		t.Fatalf("the shard's tier directory: %v", err)
	}
}
