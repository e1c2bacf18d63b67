package slide

import (
	"slices"
	"testing"
)

// TestScheduleReinsertion drives the schedule with every row dirty and
// checks the rows it hands out tick by tick and the period's growth.
func TestScheduleReinsertion(t *testing.T) {
	s := newSchedule(Schedule{RehashBase: 4, RehashGrowth: 2, RehashMax: 8, RedrawPeriod: -1, SliceNeurons: 100}, 20)
	all := func(int) bool { return true }
	type tick struct {
		lo, hi int // rows [lo, hi)
		period float64
		done   bool
	}
	// Period 4 over ticks 1-3 (20/4 = 5 rows a tick), then 8 from tick 4
	// (3 rows a tick: ceil(20/8)).
	want := []tick{
		{0, 5, 4, false}, {5, 10, 4, false}, {10, 15, 4, false},
		{15, 18, 8, false}, {18, 20, 8, true}, {0, 3, 8, false},
	}
	for i, w := range want {
		st := s.tick(all, nil)
		var rows []int32
		for r := w.lo; r < w.hi; r++ {
			rows = append(rows, int32(r))
		}
		if !slices.Equal(st.rows, rows) || s.period != w.period || st.sweepDone != w.done || st.build || st.start {
			t.Fatalf("tick %d: rows %v period %v done %v, want %v %v %v", i+1, st.rows, s.period, st.sweepDone, rows, w.period, w.done)
		}
	}
}

func TestScheduleDirtyAndSlice(t *testing.T) {
	s := newSchedule(Schedule{RehashBase: 1, RehashGrowth: 1, RehashMax: 1, RedrawPeriod: -1, SliceNeurons: 3}, 100)
	even := func(r int) bool { return r%2 == 0 }
	// Period 1: the whole table per tick, but at most 3 dirty rows.
	st := s.tick(even, nil)
	if !slices.Equal(st.rows, []int32{0, 2, 4}) || st.sweepDone {
		t.Fatalf("first tick %v", st.rows)
	}
	st = s.tick(even, nil)
	if !slices.Equal(st.rows, []int32{6, 8, 10}) {
		t.Fatalf("second tick %v", st.rows)
	}
	none := func(int) bool { return false }
	st = s.tick(none, nil)
	if len(st.rows) != 0 || !st.sweepDone || s.cursor != 0 {
		t.Fatalf("clean tick: %v done %v cursor %d", st.rows, st.sweepDone, s.cursor)
	}
}

func TestScheduleRedraw(t *testing.T) {
	s := newSchedule(Schedule{RehashBase: 2, RehashGrowth: 1, RehashMax: 2, RedrawPeriod: 3, SliceNeurons: 4}, 10)
	all := func(int) bool { return true }
	var log []string
	for i := 0; i < 10; i++ {
		st := s.tick(all, nil)
		e := "sweep"
		switch {
		case st.start && st.build:
			e = "start"
		case st.swap:
			e = "swap"
		case st.build:
			e = "build"
		}
		log = append(log, e)
		if st.build && len(st.rows) == 0 {
			t.Fatalf("tick %d: empty build", i+1)
		}
	}
	// Ticks 1-2 sweep; 3 starts (rows 0-3), 4 builds (4-7), 5 swaps (8-9);
	// the next redraw is 3 ticks later, at 8.
	want := []string{"sweep", "sweep", "start", "build", "swap", "sweep", "sweep", "start", "build", "swap"}
	if !slices.Equal(log, want) {
		t.Fatalf("got %v\nwant %v", log, want)
	}
}

// TestMaintainKeepsTablesFresh: after training, a full sweep leaves every
// row's codes equal to the hash of its current weights.
func TestMaintainKeepsTablesFresh(t *testing.T) {
	const d, din = 300, 8
	l := newTestLayer(t, Config{Dim: d, InputDim: din, Sparsity: 0.1, Threads: 2, Seed: 2,
		Schedule: Schedule{RehashBase: 3, RehashGrowth: 1, RehashMax: 3, RedrawPeriod: -1}})
	r := newRNG(4, 5, 6)
	x := make([]float32, 16*din)
	labels := make([][]int32, 16)
	for b := 0; b < 5; b++ {
		for i := range x {
			x[i] = float32(r.normal())
		}
		for i := range labels {
			labels[i] = []int32{int32(r.IntN(d))}
		}
		if _, err := l.TrainBatch(x, 16, labels, nil); err != nil {
			t.Fatal(err)
		}
	}
	stale := func() int {
		n := 0
		codes := make([]uint32, l.par.L)
		buf := make([]float32, din)
		for row := 0; row < d; row++ {
			l.fam.Hash(l.hashRow(int32(row), buf), codes)
			for tb, c := range codes {
				if got, _ := l.tables.Code(int32(row), tb); got != c {
					n++
					break
				}
			}
		}
		return n
	}
	if stale() == 0 {
		t.Fatal("training changed no codes; the test is vacuous")
	}
	for i := 0; i < 3; i++ {
		l.Maintain()
	}
	if n := stale(); n != 0 {
		t.Fatalf("%d rows stale after a sweep", n)
	}
	checkTables(t, l.tables)
}
