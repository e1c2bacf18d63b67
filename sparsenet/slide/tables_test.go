package slide

import (
	"math"
	"slices"
	"testing"
)

// checkTables verifies the invariants of the package doc against the
// neurons' codes.
func checkTables(t *testing.T, tb *Tables) {
	t.Helper()
	seen := make([]int, tb.l*tb.nb)
	for id := 0; id < tb.d; id++ {
		for l := 0; l < tb.l; l++ {
			if c, ok := tb.Code(int32(id), l); ok {
				seen[l*tb.nb+int(c)]++
			}
		}
	}
	for l := 0; l < tb.l; l++ {
		for c := 0; c < tb.nb; c++ {
			b := tb.Bucket(l, uint32(c))
			if len(b) > tb.r {
				t.Fatalf("table %d bucket %d holds %d > R = %d", l, c, len(b), tb.r)
			}
			if got := tb.Seen(l, uint32(c)); got != seen[l*tb.nb+c] {
				t.Fatalf("table %d bucket %d: Seen %d, %d neurons assigned", l, c, got, seen[l*tb.nb+c])
			}
			if len(b) > seen[l*tb.nb+c] {
				t.Fatalf("table %d bucket %d stores %d > %d assigned", l, c, len(b), seen[l*tb.nb+c])
			}
			for j, id := range b {
				if code, ok := tb.Code(id, l); !ok || code != uint32(c) {
					t.Fatalf("table %d bucket %d holds %d, assigned to %d (%v)", l, c, id, code, ok)
				}
				if slices.Contains(b[:j], id) {
					t.Fatalf("table %d bucket %d holds %d twice", l, c, id)
				}
			}
		}
	}
}

func TestTablesRandomOps(t *testing.T) {
	const d, k, l, r = 300, 3, 4, 5
	tb, err := NewTables(d, k, l, r, 9)
	if err != nil {
		t.Fatal(err)
	}
	g := newRNG(1, 2, 3)
	codes := make([]uint32, l)
	for step := 0; step < 5000; step++ {
		id := int32(g.IntN(d))
		switch op := g.IntN(10); {
		case op < 6:
			for i := range codes {
				codes[i] = uint32(g.IntN(1 << k))
			}
			tb.Insert(id, codes)
		case op < 8:
			tb.RemoveTable(g.IntN(l), id)
		case op < 9:
			tl, c := g.IntN(l), uint32(g.IntN(1<<k))
			tb.ForceTable(tl, id, c)
			if !slices.Contains(tb.Bucket(tl, c), id) {
				t.Fatalf("forced neuron %d not stored", id)
			}
		default:
			tb.Remove(id)
		}
		if step%500 == 0 {
			checkTables(t, tb)
		}
	}
	checkTables(t, tb)
	tb.Clear()
	checkTables(t, tb)
	for c := 0; c < 1<<k; c++ {
		if len(tb.Bucket(0, uint32(c))) != 0 {
			t.Fatal("Clear left ids")
		}
	}
}

func TestTablesForceStores(t *testing.T) {
	tb, _ := NewTables(100, 1, 1, 2, 1)
	for id := int32(0); id < 50; id++ {
		tb.InsertTable(0, id, 0)
	}
	tb.ForceTable(0, 77, 0)
	if b := tb.Bucket(0, 0); len(b) != 2 || !slices.Contains(b, 77) {
		t.Fatalf("bucket %v lacks the forced id", b)
	}
	// Forcing again is harmless, and moving it away frees its slot.
	tb.ForceTable(0, 77, 0)
	tb.InsertTable(0, 77, 1)
	if b := tb.Bucket(0, 0); slices.Contains(b, 77) || len(b) != 1 {
		t.Fatalf("bucket 0 after the move: %v", b)
	}
	if b := tb.Bucket(0, 1); !slices.Equal(b, []int32{77}) {
		t.Fatalf("bucket 1: %v", b)
	}
	checkTables(t, tb)
}

// TestReservoirUniform offers n neurons to one bucket of capacity R, over
// many seeds, and checks that every neuron is kept with probability R/n.
func TestReservoirUniform(t *testing.T) {
	const n, R, seeds = 40, 8, 4000
	kept := make([]int, n)
	for s := 0; s < seeds; s++ {
		tb, _ := NewTables(n, 1, 1, R, uint64(s)+1)
		for id := int32(0); id < n; id++ {
			tb.InsertTable(0, id, 0)
			if got := len(tb.Bucket(0, 0)); got > R {
				t.Fatalf("bucket over capacity: %d", got)
			}
		}
		if tb.Seen(0, 0) != n {
			t.Fatalf("seen %d", tb.Seen(0, 0))
		}
		for _, id := range tb.Bucket(0, 0) {
			kept[id]++
		}
	}
	p := float64(R) / n
	sd := math.Sqrt(seeds * p * (1 - p))
	var chi2 float64
	for id, c := range kept {
		dev := float64(c) - seeds*p
		if math.Abs(dev) > 5*sd {
			t.Fatalf("neuron %d kept %d times, want %.0f ± %.0f", id, c, seeds*p, sd)
		}
		chi2 += dev * dev / (seeds * p)
	}
	t.Logf("reservoir: kept counts chi2 = %.1f over %d neurons (first %d, last %d of %.0f expected)",
		chi2, n, kept[0], kept[n-1], seeds*p)
	// chi2 with 39 degrees of freedom: 99.9% quantile ~ 72.
	if chi2 > 90 {
		t.Fatalf("chi2 %.1f: not uniform", chi2)
	}
}

func TestTablesDeterministic(t *testing.T) {
	build := func() *Tables {
		tb, _ := NewTables(1000, 4, 3, 4, 5)
		g := newRNG(3, 3, 3)
		codes := make([]uint32, 3)
		for id := int32(0); id < 1000; id++ {
			for i := range codes {
				codes[i] = uint32(g.IntN(16))
			}
			tb.Insert(id, codes)
		}
		return tb
	}
	a, b := build(), build()
	if !slices.Equal(a.ids, b.ids) || !slices.Equal(a.cnt, b.cnt) {
		t.Fatal("same operations, different tables")
	}
}

func TestNewTablesErrors(t *testing.T) {
	for _, c := range [][4]int{{0, 4, 4, 4}, {10, 0, 4, 4}, {10, 4, 0, 4}, {10, 4, 4, 0}, {10, 24, 4096, 1000}} {
		if _, err := NewTables(c[0], c[1], c[2], c[3], 1); err == nil {
			t.Errorf("NewTables%v: no error", c)
		}
	}
}
