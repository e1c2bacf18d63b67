package ams

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFrozenAgainstTable: a Frozen loaded with runs of sorted ids, then
// changed by Set (loaded ids, new ones, ids deleted before) and Delete
// (loaded, added, absent), answers every Pull as a Table given the same
// rows and changes does, ids without a row included (the initializer's
// values), and counts the same rows.
func TestFrozenAgainstTable(t *testing.T) {
	const dim = 5
	spec := TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: OptSGD}, Init: InitSpec{Kind: "normal", Scale: 0.1, Seed: 7}}
	rng := rand.New(rand.NewPCG(1, 2))
	runs, all := sortedRuns(rng)
	f, err := NewFrozen(spec, len(all))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewTable(spec)
	if err != nil {
		t.Fatal(err)
	}
	row := func(x float32) []float32 { return []float32{x, x + 1, x + 2, x + 3, x + 4} }
	for i, run := range runs {
		f.StartRun()
		for k, id := range run {
			v := row(float32(i*10000 + k))
			if err := f.Append(id, v); err != nil {
				t.Fatal(err)
			}
			if err := ref.Load(id, v, nil, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		probe := append(slices.Clone(all), rng.Uint64(), 0, ^uint64(0), all[0]+1)
		got, want := make([]float32, len(probe)*dim), make([]float32, len(probe)*dim)
		f.Pull(probe, got)
		ref.Pull(probe, want, false, 0)
		for k := range probe {
			if !slices.Equal(got[k*dim:(k+1)*dim], want[k*dim:(k+1)*dim]) {
				t.Fatalf("%s: id %#x: %v, the table has %v", when, probe[k], got[k*dim:(k+1)*dim], want[k*dim:(k+1)*dim])
			}
		}
		if f.Len() != ref.Len() {
			t.Fatalf("%s: %d rows, the table has %d", when, f.Len(), ref.Len())
		}
	}
	check("loaded")
	for step := range 4000 {
		var id uint64
		switch rng.IntN(3) {
		case 0:
			id = all[rng.IntN(len(all))]
		case 1:
			id = rng.Uint64() & 0xffff // new ids, reused
		default:
			id = rng.Uint64()
		}
		if rng.IntN(3) == 0 {
			if f.Delete(id) != ref.Delete(id) {
				t.Fatalf("step %d: Delete(%#x) disagrees", step, id)
			}
			continue
		}
		v := row(float32(-step))
		if err := f.Set(id, v); err != nil {
			t.Fatal(err)
		}
		if err := ref.Load(id, v, nil, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	check("changed")
}

// sortedRuns returns three runs of sorted distinct random ids, the
// third crowded into few buckets, and all of them.
func sortedRuns(rng *rand.Rand) (runs [][]uint64, all []uint64) {
	runs = make([][]uint64, 3)
	for i := range runs {
		for range 3000 + i*500 {
			id := rng.Uint64()
			if i == 2 {
				id &= 0xffff << 40 // a run crowded into few buckets
			}
			runs[i] = append(runs[i], id)
		}
		slices.Sort(runs[i])
		runs[i] = slices.Compact(runs[i])
		all = append(all, runs[i]...)
	}
	return runs, all
}

// TestFrozenRefuses: rows out of order within a run, outside a run, of
// the wrong width or beyond the capacity are refused.
func TestFrozenRefuses(t *testing.T) {
	f, err := NewFrozen(TableSpec{Name: "emb", Dim: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	v := []float32{1, 2}
	if err := f.Append(5, v); err == nil {
		t.Error("a row outside a run appended")
	}
	f.StartRun()
	if err := f.Append(5, v); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		id uint64
		v  []float32
	}{{5, v}, {4, v}, {6, v[:1]}} {
		if err := f.Append(bad.id, bad.v); err == nil {
			t.Errorf("Append(%d, %v) after 5 accepted", bad.id, bad.v)
		}
	}
	f.StartRun()
	if err := f.Append(1, v); err != nil {
		t.Fatal(err)
	}
	if err := f.Append(2, v); err == nil {
		t.Error("a third row in a frozen table of 2")
	}
}

// BenchmarkFrozenPull_Dim18_1M4 pulls batches of 4,096 loaded ids from a
// Frozen of 1.4M rows of dim 18 (serve's default model) in one run, as
// serve loads it, and in two (its 2 shards' files unmerged), against the
// same rows in a Table (SGD, as serve held them before): the lookup by
// bucket and search against the hash index.
func BenchmarkFrozenPull_Dim18_1M4(b *testing.B) {
	const dim, rows, batch = 18, 1_400_000, 4096
	rng := rand.New(rand.NewPCG(5, 6))
	runs := [][]uint64{make([]uint64, rows/2), make([]uint64, rows/2)}
	for _, r := range runs {
		for i := range r {
			r[i] = rng.Uint64()
		}
		slices.Sort(r)
	}
	spec := TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: OptSGD}}
	merged := slices.Sorted(slices.Values(slices.Concat(runs...)))
	one, two := newFrozenOf(b, spec, merged), newFrozenOf(b, spec, runs...)
	tb := newTestTable(b, spec)
	v := make([]float32, dim)
	for _, id := range merged {
		if err := tb.Load(id, v, nil, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	batches := make([][]uint64, 64)
	for i := range batches {
		for range batch {
			r := runs[rng.IntN(2)]
			batches[i] = append(batches[i], r[rng.IntN(len(r))])
		}
	}
	out := make([]float32, batch*dim)
	for _, c := range []struct {
		name string
		pull func([]uint64)
	}{{"frozen-1-run", func(ids []uint64) { one.Pull(ids, out) }}, {"frozen-2-runs", func(ids []uint64) { two.Pull(ids, out) }},
		{"table", func(ids []uint64) { tb.Pull(ids, out, false, 0) }}} {
		b.Run(c.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				c.pull(batches[n%len(batches)])
				n++
			}
			b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// newFrozenOf returns a Frozen of spec holding runs, zero rows.
func newFrozenOf(b *testing.B, spec TableSpec, runs ...[]uint64) *Frozen {
	n := 0
	for _, r := range runs {
		n += len(r)
	}
	f, err := NewFrozen(spec, n)
	if err != nil {
		b.Fatal(err)
	}
	v := make([]float32, spec.Dim)
	for _, r := range runs {
		f.StartRun()
		for _, id := range r {
			if err := f.Append(id, v); err != nil {
				b.Fatal(err)
			}
		}
	}
	return f
}
