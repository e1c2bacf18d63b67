package shard

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
	"github.com/xdlgo/xps/snapshot"
)

// lifeShard is one shard of 2 stripes with table emb of spec (dim 4) and
// a worker "w" whose batches of batchSamples samples advance its clock.
type lifeShard struct {
	s     *Shard
	batch uint64
}

const batchSamples = 64 // one ams.StepUnit per batch

func newLifeShard(t *testing.T, spec ams.TableSpec, opts Options) *lifeShard {
	t.Helper()
	opts.Stripes = 2
	s := New(opts)
	t.Cleanup(func() { s.Close() })
	spec.Name, spec.Dim = "emb", 4
	if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	return &lifeShard{s: s}
}

// push pushes a batch of ids (zero gradients) as worker w's next batch.
func (ls *lifeShard) push(t *testing.T, ids []uint64) {
	t.Helper()
	origin := ams.Origin{Worker: "w", Batch: ls.batch, Samples: batchSamples}
	ls.batch++
	req := []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, 4*len(ids))}}
	if err := ls.s.apply(1, origin, req, nil); err != nil {
		t.Fatal(err)
	}
}

func (ls *lifeShard) stats(t *testing.T) TableStats {
	t.Helper()
	st, err := ls.s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st.Tables[0]
}

// has reports which of ids have a row.
func (ls *lifeShard) has(t *testing.T, ids []uint64) []bool {
	t.Helper()
	out := make([]bool, len(ids))
	err := ls.s.onStripes(func(_ int, st *stripe) error {
		for i, id := range ids {
			if _, ok := st.tables[0].Get(id); ok {
				out[i] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func idRange(lo, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(lo + i)
	}
	return ids
}

func count(b []bool) (n int) {
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

// TestExpiryTTLSamples: rows idle for more than ttl_samples trained
// samples expire, a few sweeps at a time, with a tombstone each; rows
// pushed every batch stay.
func TestExpiryTTLSamples(t *testing.T) {
	ls := newLifeShard(t, ams.TableSpec{Expiry: filters.ExpirySpec{TTLSamples: 100 * batchSamples}}, Options{})
	old, hot := idRange(0, 1000), idRange(1_000_000, 100)
	ls.push(t, old)
	for range 300 {
		ls.push(t, hot)
	}
	if n := count(ls.has(t, old)); n != 0 {
		t.Fatalf("%d of the rows idle for 300 batches are left (ttl 100 batches)", n)
	}
	if n := count(ls.has(t, hot)); n != len(hot) {
		t.Fatalf("%d of %d rows pushed every batch are left", n, len(hot))
	}
	if st := ls.stats(t); st.Expired != uint64(len(old)) || st.Rows != int64(len(hot)) {
		t.Fatalf("stats %+v", st)
	}
	tombs, lost, err := ls.s.DrainTombstones("emb")
	slices.Sort(tombs)
	if err != nil || lost != 0 || !slices.Equal(tombs, old) {
		t.Fatalf("tombstones: %d ids (lost %d, %v), want the %d expired", len(tombs), lost, err, len(old))
	}
	if tombs, _, _ := ls.s.DrainTombstones("emb"); len(tombs) != 0 {
		t.Fatal("a drain left tombstones behind")
	}
}

// TestExpiryMinHitsExprAndHook: the min-hits rule, an expression and the
// embedder's hook each expire their rows.
func TestExpiryMinHitsExprAndHook(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec filters.ExpirySpec
		hook filters.ExpireFunc
	}{
		{"min-hits", filters.ExpirySpec{MinHits: 3, MinHitsTTLSamples: 20 * batchSamples}, nil},
		{"expr", filters.ExpirySpec{Expr: fmt.Sprintf("hits < 3 && idle_samples > %d", 20*batchSamples)}, nil},
		{"hook", filters.ExpirySpec{}, func(table string, r filters.RowStats) bool {
			return table == "emb" && r.Hits < 3 && r.IdleSamples > 20*batchSamples
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := newLifeShard(t, ams.TableSpec{Expiry: tc.spec}, Options{Expire: tc.hook})
			rare, often, hot := idRange(0, 200), idRange(1000, 200), idRange(1_000_000, 50)
			ls.push(t, rare)
			ls.push(t, often)
			ls.push(t, often)
			ls.push(t, often)
			for range 200 {
				ls.push(t, hot)
			}
			if n, m := count(ls.has(t, rare)), count(ls.has(t, often)); n != 0 || m != len(often) {
				t.Fatalf("%d rare rows (1 hit) left, want 0; %d of %d rows with 3 hits left", n, m, len(often))
			}
		})
	}
}

// TestExpiryCapPerLap: one lap expires at most max_expire_fraction of the
// rows its table had when it began, however many rows the rules pick.
func TestExpiryCapPerLap(t *testing.T) {
	tab, err := ams.NewTable(ams.TableSpec{Name: "emb", Dim: 4})
	if err != nil {
		t.Fatal(err)
	}
	tab.Push(idRange(0, 10000), make([]float32, 40000), 0)
	tab.SetStep(1000)
	l := &life{name: "emb"}
	l.expiry, err = filters.NewExpiry(filters.ExpirySpec{TTLSamples: 1, MaxExpireFraction: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	l.lap = l.expiry.NewLap()
	for range 100 { // one lap: the index has fewer than 100 x 256 buckets
		l.expire(tab, 256, 0)
		if !l.inLap {
			break
		}
	}
	if tab.Len() != 9500 || tab.Counters().Expired != 500 {
		t.Fatalf("one lap left %d of 10000 rows (expired %d), want 9500", tab.Len(), tab.Counters().Expired)
	}
}

// TestBudgetEvictsLeastRecentlyUpdated: past its budget, a table loses
// the rows updated least recently; rows pushed every batch stay, and the
// table stays within the budget plus its slack.
func TestBudgetEvictsLeastRecentlyUpdated(t *testing.T) {
	const budget = 1000
	ls := newLifeShard(t, ams.TableSpec{Budget: ams.Budget{Rows: budget}}, Options{})
	hot := idRange(1_000_000, 300)
	for b := range 100 {
		ls.push(t, slices.Concat(hot, idRange(50*b, 50))) // 50 new ids a batch
		if rows := ls.stats(t).Rows; rows > budget+budget/16+50 {
			t.Fatalf("batch %d: %d rows, budget %d", b, rows, budget)
		}
	}
	if n := count(ls.has(t, hot)); n != len(hot) {
		t.Fatalf("%d of %d rows pushed every batch survived the budget", n, len(hot))
	}
	if n := count(ls.has(t, idRange(0, 2500))); n > 2*budget/3 {
		t.Fatalf("%d of the cold rows left", n)
	}
	st := ls.stats(t)
	tombs, _, _ := ls.s.DrainTombstones("emb")
	if st.Evicted == 0 || uint64(len(tombs)) != st.Evicted || int64(st.Created)-st.Rows != int64(st.Evicted) {
		t.Fatalf("stats %+v, %d tombstones", st, len(tombs))
	}
}

// TestBudgetInBytes: a budget in bytes bounds rows by their size.
func TestBudgetInBytes(t *testing.T) {
	tab, _ := ams.NewTable(ams.TableSpec{Name: "emb", Dim: 4})
	ls := newLifeShard(t, ams.TableSpec{Budget: ams.Budget{Bytes: int64(500 * tab.RowBytes())}}, Options{})
	for b := range 20 {
		ls.push(t, idRange(100*b, 100))
	}
	if rows := ls.stats(t).Rows; rows > 500+500/16+100 || rows < 400 {
		t.Fatalf("%d rows of %d bytes in a budget of 500 rows' bytes", rows, tab.RowBytes())
	}
}

// TestHalfExpiredTableRestores: a table half expired, with its clock and
// the rows' steps, snapshots and restores onto 3 shards; the rest expires
// there when the restored clock says so, as it would have on the source.
func TestHalfExpiredTableRestores(t *testing.T) {
	spec := snapSpec
	spec.Expiry = filters.ExpirySpec{TTLSamples: 100 * batchSamples, MaxExpireFraction: 1}
	src := newTestClusterOf(t, 2, spec)
	early, late, hot := idRange(0, 500), idRange(10_000, 500), idRange(1_000_000, 20)
	pushAll := func(c *testCluster, b uint64, ids []uint64) {
		for k, s := range c.shards {
			var sid []uint64
			for _, id := range ids {
				if c.m.ShardOf("emb", id) == k {
					sid = append(sid, id)
				}
			}
			req := []ams.TableRequest{{Table: "emb", IDs: sid, Rows: make([]float32, len(sid)*snapSpec.Dim)}}
			if err := s.apply(c.v(), ams.Origin{Worker: "w", Batch: b, Samples: batchSamples}, req, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := uint64(0)
	pushAll(src, b, early)
	b++
	for ; b < 60; b++ {
		pushAll(src, b, hot)
	}
	pushAll(src, b, late) // late at 60: expires at 160; early at 0 by 100
	for b++; b < 130; b++ {
		pushAll(src, b, hot)
	}
	if n, m := src.rows(t); n != len(late)+len(hot) || m.Expired != uint64(len(early)) {
		t.Fatalf("half expired: %d rows, counters %+v", n, m)
	}
	store, _ := snapshot.OpenDir(t.TempDir())
	m := src.snapshotTo(t, store, 5)
	dst := newTestClusterOf(t, 3, spec)
	for i, s := range dst.shards {
		if err := s.Restore(store, m, dst.ownership(i)); err != nil {
			t.Fatal(err)
		}
		if s.Samples() != src.shards[0].Samples() {
			t.Fatalf("restored clock %d, source %d", s.Samples(), src.shards[0].Samples())
		}
	}
	for ; b < 150; b++ { // before late's ttl: it stays
		pushAll(dst, b, hot)
	}
	if n, _ := dst.rows(t); n != len(late)+len(hot) {
		t.Fatalf("restored: %d rows before the late rows' ttl, want %d", n, len(late)+len(hot))
	}
	for ; b < 200; b++ {
		pushAll(dst, b, hot)
	}
	if n, _ := dst.rows(t); n != len(hot) {
		t.Fatalf("restored: %d rows after the late rows' ttl, want %d", n, len(hot))
	}
}

// TestExpiryWallTTL: rows idle for longer than the wall-time ttl expire,
// on the shard's clock (Options.Now).
func TestExpiryWallTTL(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC).Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	ls := newLifeShard(t, ams.TableSpec{Expiry: filters.ExpirySpec{TTL: "1h", MaxExpireFraction: 1}}, Options{Now: clock})
	old, hot := idRange(0, 500), idRange(1_000_000, 20)
	ls.push(t, old)
	now.Add(3000) // 50 minutes: within the ttl
	for range 50 {
		ls.push(t, hot)
	}
	if n := count(ls.has(t, old)); n != len(old) {
		t.Fatalf("%d of %d rows idle 50 minutes are left (ttl 1h)", n, len(old))
	}
	now.Add(1200) // 70 minutes
	for range 50 {
		ls.push(t, hot)
	}
	if n := count(ls.has(t, old)); n != 0 {
		t.Fatalf("%d rows idle 70 minutes are left (ttl 1h)", n)
	}
}
