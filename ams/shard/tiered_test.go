package shard

import (
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
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

// TestTieredExpiry: rows idle past the TTL expire from both tiers, each
// with a tombstone, and the cold tier ends empty; rows pushed every batch
// stay.
func TestTieredExpiry(t *testing.T) {
	spec := ams.TableSpec{Expiry: filters.ExpirySpec{TTLSamples: 100 * batchSamples}, Budget: ams.Budget{Rows: 200}, Storage: ams.StorageTiered}
	ls := newLifeShard(t, spec, Options{TierDirs: []string{t.TempDir()}})
	old, hot := idRange(0, 1000), idRange(1_000_000, 100)
	for i := 0; i < len(old); i += 100 {
		ls.push(t, old[i:i+100])
	}
	if u := ls.stats(t).Tier; u.ColdRows < 700 {
		t.Fatalf("%d rows went to the cold tier, want at least 700 of 1000 over a budget of 200", u.ColdRows)
	}
	ls.pushRandom(t, old[:100], 1) // back in DRAM, their disk copies stale: expiry must delete both
	for range 300 {
		ls.push(t, hot)
	}
	st := ls.stats(t)
	if st.Tier.ColdRows != 0 || st.Expired != uint64(len(old)) || st.Rows != int64(len(hot)) {
		t.Fatalf("after 300 batches (ttl 100): %d rows in DRAM, %d cold, %d expired; want %d, 0, %d", st.Rows, st.Tier.ColdRows, st.Expired, len(hot), len(old))
	}
	tombs, lost, err := ls.s.DrainTombstones("emb")
	slices.Sort(tombs)
	if err != nil || lost != 0 || !slices.Equal(tombs, old) {
		t.Fatalf("tombstones: %d ids (lost %d, %v), want the %d expired", len(tombs), lost, err, len(old))
	}
	fresh := newLifeShard(t, spec, Options{TierDirs: []string{t.TempDir()}})
	if !maps.EqualFunc(ls.read(t, old), fresh.read(t, old), slices.Equal) {
		t.Fatal("an expired row reads as something else than its initial row (a stale disk copy came back)")
	}
}

// pushRandom pushes random gradients to ids as worker w's next batch.
func (ls *lifeShard) pushRandom(t *testing.T, ids []uint64, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	g := make([]float32, 4*len(ids))
	for i := range g {
		g[i] = float32(rng.NormFloat64())
	}
	origin := ams.Origin{Worker: "w", Batch: ls.batch, Samples: batchSamples}
	ls.batch++
	if err := ls.s.apply(1, origin, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: g}}, nil); err != nil {
		t.Fatal(err)
	}
}

// read reads the rows of ids from both tiers (a pull without create).
func (ls *lifeShard) read(t *testing.T, ids []uint64) map[uint64][]float32 {
	t.Helper()
	buf := make([]float32, 4*len(ids))
	if err := ls.s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: buf}}, false); err != nil {
		t.Fatal(err)
	}
	out := map[uint64][]float32{}
	for i, id := range ids {
		out[id] = buf[4*i : 4*i+4]
	}
	return out
}

// TestTieredExportChain: a full export of a tiered table holds the rows
// of both tiers; a delta holds exactly the rows pushed since, those
// demoted to disk since included; full + delta equal the table as a pull
// without create reads it (from both tiers, promoting nothing).
func TestTieredExportChain(t *testing.T) {
	spec := ams.TableSpec{Budget: ams.Budget{Rows: 200}, Storage: ams.StorageTiered}
	ls := newLifeShard(t, spec, Options{TierDirs: []string{t.TempDir()}})
	store, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	all := idRange(0, 1000)
	for i := 0; i < len(all); i += 100 {
		ls.pushRandom(t, all[i:i+100], uint64(i))
	}
	rep := chainReplica{}
	m1, err := ls.export(t, store, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep.apply(t, store, m1)
	before := ls.stats(t).Tier
	if !maps.EqualFunc(rep, ls.read(t, all), slices.Equal) || before.ColdRows < 700 {
		t.Fatalf("full export: %d rows, the replica differs from the table (%d cold)", len(rep), before.ColdRows)
	}
	if after := ls.stats(t).Tier; after.Promoted != before.Promoted {
		t.Fatal("a pull without create promoted rows")
	}
	changed := all[300:600]
	for i := 0; i < len(changed); i += 100 {
		ls.pushRandom(t, changed[i:i+100], uint64(1000+i))
	}
	for i := 0; i < 200; i += 100 { // pushes the changed rows out of DRAM
		ls.pushRandom(t, all[800+i:900+i], uint64(2000+i))
	}
	back := changed[:50] // and some back in, by a pull: dirty again
	if err := ls.s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: back, Rows: make([]float32, 4*len(back))}}, true); err != nil {
		t.Fatal(err)
	}
	m2, err := ls.export(t, store, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rows, dels := m2.Rows(); rows != int64(len(changed)+200) || dels != 0 {
		t.Fatalf("delta: %d rows and %d deletions, want %d and 0", rows, dels, len(changed)+200)
	}
	rep.apply(t, store, m2)
	if !maps.EqualFunc(rep, ls.read(t, all), slices.Equal) {
		t.Fatal("full + delta differ from the table")
	}
}

// TestTieredDiskFull: a tiered table whose disk fills up (a 16 MiB tmpfs,
// mounted by the test as root; skipped elsewhere) fails a request with
// ams.ErrTier, naming the disk's error, and fails every later one; every
// row it created is still there, in DRAM or on disk: none is lost.
func TestTieredDiskFull(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v: %s", err, out)
	}
	defer exec.Command("umount", "-l", dir).Run()
	spec := ams.TableSpec{Budget: ams.Budget{Rows: 1000}, Storage: ams.StorageTiered}
	ls := newLifeShard(t, spec, Options{TierDirs: []string{dir}})
	var err error
	pushed := 0
	for b := 0; b < 10000 && err == nil; b++ { // 4M rows at most: 200 MiB, on 16 MiB
		ids := idRange(b*400, 400)
		err = ls.s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, 4*len(ids))}}, true)
		if err == nil {
			pushed += len(ids)
		}
	}
	if !errors.Is(err, ams.ErrTier) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("after %d rows on a 16 MiB disk: %v, want ErrTier (no space left)", pushed, err)
	}
	st := ls.stats(t)
	if got := st.Rows + st.Tier.ColdRows; got < int64(pushed) || st.Created != uint64(got) {
		t.Fatalf("%d rows created, %d in DRAM and %d on disk: rows were lost", st.Created, st.Rows, st.Tier.ColdRows)
	}
	ids := idRange(0, 10)
	if err := ls.s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, 40)}}, true); !errors.Is(err, ams.ErrTier) {
		t.Fatalf("a request after the failure: %v, want ErrTier", err)
	}
	t.Logf("%d rows, then: %v", pushed, err)
}
