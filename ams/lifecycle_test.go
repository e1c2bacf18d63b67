package ams

import (
	"errors"
	"slices"
	"testing"

	"github.com/xdlgo/xps/filters"
)

func admittingTable(t *testing.T, adm filters.Spec) *Table {
	t.Helper()
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 4, Admission: adm})
	if err := tb.EnableAdmission(DefaultPartitions); err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestAdmissionCount: with count 3, an ID's first two training pulls read
// the row it would have had (the initializer's values, as a table without
// a filter creates) and create nothing, its pushes are dropped, and its
// third pull creates the row; every refusal is counted.
func TestAdmissionCount(t *testing.T) {
	tb := admittingTable(t, filters.Spec{Kind: filters.KindCount, N: 3})
	plain := newTestTable(t, TableSpec{Name: "t", Dim: 4})
	want := make([]float32, 4)
	plain.Pull([]uint64{42}, want, true, 0)
	grad := []float32{1, 1, 1, 1}
	for sighting := 1; sighting <= 2; sighting++ {
		out := make([]float32, 4)
		if n := tb.Pull([]uint64{42}, out, true, 0); n != 0 || tb.Len() != 0 {
			t.Fatalf("sighting %d created %d rows (table has %d)", sighting, n, tb.Len())
		}
		if !slices.Equal(out, want) {
			t.Fatalf("sighting %d read %v, want the initial row %v", sighting, out, want)
		}
		if n := tb.Push([]uint64{42}, grad, 0); n != 0 || tb.Len() != 0 {
			t.Fatalf("push after sighting %d created %d rows", sighting, n)
		}
	}
	if n := tb.Pull([]uint64{42}, make([]float32, 4), true, 0); n != 1 {
		t.Fatalf("third sighting created %d rows, want 1", n)
	}
	got := tb.Counters()
	if got != (Counters{Created: 1, FilteredPulls: 2, FilteredPushes: 2}) {
		t.Fatalf("counters %+v", got)
	}
	// A pull without create is no sighting and creates nothing.
	if n := tb.Pull([]uint64{7, 7, 7}, make([]float32, 12), false, 0); n != 0 || tb.Filter().Count(Partition("t", 7, DefaultPartitions), 7) != 0 {
		t.Fatal("a pull without create was counted as a sighting")
	}
}

// TestAdmissionProbabilityAgrees: the probability policy admits about p of
// the IDs, the same ones in every table of the same name (every worker,
// shard and retry agrees), at pulls and pushes alike.
func TestAdmissionProbabilityAgrees(t *testing.T) {
	spec := filters.Spec{Kind: filters.KindProbability, P: 0.25}
	a, b := admittingTable(t, spec), admittingTable(t, spec)
	ids := make([]uint64, 20000)
	for i := range ids {
		ids[i] = uint64(i) * 7919
	}
	a.Pull(ids, make([]float32, 4*len(ids)), true, 0)
	b.Push(ids, make([]float32, 4*len(ids)), 0)
	if a.Len() != b.Len() {
		t.Fatalf("pulls admitted %d, pushes %d", a.Len(), b.Len())
	}
	for _, id := range ids {
		_, ina := a.Get(id)
		_, inb := b.Get(id)
		if ina != inb {
			t.Fatalf("id %d admitted by one table and not the other", id)
		}
	}
	if share := float64(a.Len()) / float64(len(ids)); share < 0.23 || share > 0.27 {
		t.Fatalf("admitted %.3f of the ids, want about 0.25", share)
	}
	if c := a.Counters(); c.Created+c.FilteredPulls != uint64(len(ids)) {
		t.Fatalf("counters %+v for %d ids", c, len(ids))
	}
}

func TestAdmissionBadPolicy(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 4})
	tb.spec.Admission = filters.Spec{Kind: filters.KindCount, N: 3}
	if err := tb.EnableAdmission(0); !errors.Is(err, filters.ErrBadPolicy) {
		t.Fatalf("0 partitions: %v", err)
	}
	if _, err := NewTable(TableSpec{Name: "t", Dim: 4, Admission: filters.Spec{Kind: "often"}}); !errors.Is(err, ErrBadSpec) || !errors.Is(err, filters.ErrBadPolicy) {
		t.Fatalf("unknown kind: %v", err)
	}
}

// TestSweepRemovesAndReusesSlots: a sweep in slices visits every row once
// per lap, removes those its function picks, and the slots freed are
// reused by later rows (the slab does not grow).
func TestSweepRemovesAndReusesSlots(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 4})
	const n = 5000
	for i := range n {
		tb.SetStep(uint32(i / 100))
		tb.Push([]uint64{uint64(i)}, make([]float32, 4), 0)
	}
	tb.SetStep(60)
	var sw Sweeper
	seen := map[uint64]int{}
	lap := func() {
		for lapEnd := false; !lapEnd; {
			_, lapEnd = tb.Sweep(&sw, 97, func(r RowInfo) bool {
				seen[r.ID]++
				if want := 60 - uint32(r.ID/100); r.Age != want {
					t.Fatalf("row %d: age %d, want %d", r.ID, r.Age, want)
				}
				return r.Age > 30 // rows 0..2999
			})
		}
	}
	lap()
	// A row that a deletion shifted back into a bucket the lap had
	// visited waits for the next lap: a few.
	if len(seen) < n*97/100 || sw.Laps != 1 {
		t.Fatalf("a lap saw %d of %d rows, laps %d", len(seen), n, sw.Laps)
	}
	lap()
	if len(seen) != n || tb.Len() != 2000 {
		t.Fatalf("two laps saw %d of %d rows and left %d, want 2000", len(seen), n, tb.Len())
	}
	mem := tb.rows.memoryBytes()
	for i := range 3000 {
		tb.Push([]uint64{uint64(n + i)}, make([]float32, 4), 0)
	}
	if tb.rows.memoryBytes() != mem || tb.next != n {
		t.Fatalf("slab grew from %d to %d bytes (next slot %d): freed slots not reused", mem, tb.rows.memoryBytes(), tb.next)
	}
}

// TestSweepSaturatesAge: a row not updated for more than 2^31 step units
// keeps reading as old after its step word wraps around.
func TestSweepSaturatesAge(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 4})
	tb.Push([]uint64{1}, make([]float32, 4), 0)
	var sw Sweeper
	ages := []uint32{}
	for _, step := range []uint32{1 << 30, 1 << 31, 3 << 30, 0} {
		tb.SetStep(step) // wraps past 2^32 at the end
		tb.Sweep(&sw, 1<<20, func(r RowInfo) bool { ages = append(ages, r.Age); return false })
	}
	if want := []uint32{1 << 30, 1 << 31, 1 << 31, 1 << 31}; !slices.Equal(ages, want) {
		t.Fatalf("ages %v, want %v", ages, want)
	}
}

// TestSetStepOnlyMovesForward: a step behind the table's (a request that
// reached the owner late) does not move its clock back.
func TestSetStepOnlyMovesForward(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 4})
	tb.SetStep(100)
	tb.Push([]uint64{1}, make([]float32, 4), 0)
	tb.SetStep(90) // a late pull of the next batch
	var ages []uint32
	tb.Sweep(&Sweeper{}, 64, func(r RowInfo) bool { ages = append(ages, r.Age); return false })
	if tb.Step() != 100 || !slices.Equal(ages, []uint32{0}) {
		t.Fatalf("step %d, ages %v: the clock went back", tb.Step(), ages)
	}
	tb.SetStep(100 - 16) // 2^32 - 16 units ahead, modulo 2^32: 16 behind
	if tb.Step() != 100 {
		t.Fatalf("step %d", tb.Step())
	}
}

// longestRun returns the longest run of occupied buckets of the index.
func longestRun(x *index) int {
	best, run := 0, 0
	for i := 0; i < len(x.b); i += 3 {
		if slotOf(x.b, i) == emptySlot {
			run = 0
			continue
		}
		run++
		best = max(best, run)
	}
	return best
}

// TestSweepKeepsTheIndexEvenlyLoaded: a budget's hand that removes every
// row it passes while new rows keep coming keeps the index's clusters
// short. Swept in bucket order it emptied the index behind the hand and
// filled it past capacity ahead of it: runs of occupied buckets grew to
// tens of thousands and every lookup walked one.
func TestSweepKeepsTheIndexEvenlyLoaded(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 1})
	const limit = 90_000 // 0.69 of 2^17 buckets
	var sw Sweeper
	id := uint64(0)
	batch := make([]uint64, 1000)
	for range 2000 {
		for i := range batch {
			batch[i] = Mix64(id)
			id++
		}
		tb.Push(batch, make([]float32, len(batch)), 0)
		for tb.Len() > limit {
			over := tb.Len() - limit
			tb.Sweep(&sw, 256, func(RowInfo) bool { over--; return over >= 0 })
		}
	}
	if run := longestRun(&tb.idx); run > 500 {
		t.Fatalf("the longest cluster of the index is %d buckets (load %.2f)", run, float64(tb.Len())/float64(tb.idx.capacity()))
	}
}
