package sparsenet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestDedupMatchesMap(t *testing.T) {
	var d Dedup
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 5; round++ {
		d.Reset()
		ref := map[uint64]int32{}
		var order []uint64
		for i := 0; i < 5000; i++ {
			k := rng.Uint64N(3000)
			if round == 2 {
				k = 0 // key zero is a valid id
			}
			got := d.Index(k)
			want, ok := ref[k]
			if !ok {
				want = int32(len(ref))
				ref[k] = want
				order = append(order, k)
			}
			if got != want {
				t.Fatalf("round %d: Index(%d) = %d, want %d", round, k, got, want)
			}
		}
		if d.Len() != len(ref) || len(d.Keys) != len(order) {
			t.Fatalf("round %d: Len %d keys %d, want %d", round, d.Len(), len(d.Keys), len(ref))
		}
		for i, k := range order {
			if d.Keys[i] != k {
				t.Fatalf("round %d: Keys[%d] = %d, want %d", round, i, d.Keys[i], k)
			}
		}
		for k := uint64(0); k < 3100; k++ { // Lookup finds what Index added, adds nothing
			got, ok := d.Lookup(k)
			want, wok := ref[k]
			if ok != wok || got != want {
				t.Fatalf("round %d: Lookup(%d) = %d, %v; want %d, %v", round, k, got, ok, want, wok)
			}
		}
		if d.Len() != len(ref) {
			t.Fatalf("round %d: Lookup added keys: Len %d, want %d", round, d.Len(), len(ref))
		}
	}
	var empty Dedup
	if _, ok := empty.Lookup(7); ok {
		t.Fatal("Lookup in an empty Dedup found a key")
	}
}

type sample struct {
	fields []uint32
	ids    []uint64
	values []float32
}

func randomSamples(rng *rand.Rand, n, fields int) []sample {
	out := make([]sample, n)
	for i := range out {
		for f := 0; f < fields; f++ {
			for k := rng.IntN(3); k >= 0; k-- {
				if rng.IntN(5) == 0 {
					continue // empty bags happen
				}
				out[i].fields = append(out[i].fields, uint32(f))
				out[i].ids = append(out[i].ids, rng.Uint64N(20))
				out[i].values = append(out[i].values, float32(rng.NormFloat64()))
			}
		}
	}
	return out
}

// TestPoolScatterAgainstReference checks Pool against a per-sample loop with
// a map of rows, and Scatter as the adjoint of Pool:
// <Pool(rows), dx> == <rows, Scatter(dx)>.
func TestPoolScatterAgainstReference(t *testing.T) {
	for _, tc := range []poolCase{
		{"one-table-sum", []int{4}, []int{0, 0, 0}, Sum},
		{"two-tables-sum", []int{3, 5}, []int{0, 1, 1, 0}, Sum},
		{"two-tables-mean", []int{3, 5}, []int{1, 0, 1}, Mean},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 9))
			l, err := NewLayout(tc.fields, tc.tables, tc.pooling)
			if err != nil {
				t.Fatal(err)
			}
			samples := randomSamples(rng, 9, len(tc.fields))
			b := l.NewBatch()
			for it := 0; it < 2; it++ { // reuse after Reset
				b.Reset()
				for _, s := range samples {
					if err := b.Add(s.fields, s.ids, s.values); err != nil {
						t.Fatal(err)
					}
				}
				rows := hiddenRows(b, tc.tables)
				x := make([]float32, b.N*l.Width())
				b.Pool(rows, x)
				tc.checkPooled(t, l, samples, x)
				checkScatterAdjoint(t, rng, b, rows, x)
			}
		})
	}
}

// poolCase is a one-level layout: the dims of its tables, the table of
// each field and its pooling.
type poolCase struct {
	name    string
	tables  []int
	fields  []int
	pooling Pooling
}

// hiddenRow is value j of the hidden "true" row of id in table tab.
func hiddenRow(tab int, id uint64, j int) float32 {
	return float32(math.Sin(float64(tab*1000 + int(id)*10 + j)))
}

// hiddenRows returns the hidden rows of b's unique ids, table by table;
// tables holds the tables' dims.
func hiddenRows(b *Batch, tables []int) [][]float32 {
	rows := make([][]float32, len(tables))
	for tab := range rows {
		ids := b.IDs(tab)
		rows[tab] = make([]float32, len(ids)*tables[tab])
		for k, id := range ids {
			for j := 0; j < tables[tab]; j++ {
				rows[tab][k*tables[tab]+j] = hiddenRow(tab, id, j)
			}
		}
	}
	return rows
}

// checkPooled checks x, the pooled samples, against a per-sample loop
// over the hidden rows.
func (tc poolCase) checkPooled(t *testing.T, l *Layout, samples []sample, x []float32) {
	for si, s := range samples {
		want := make([]float64, l.Width())
		for k, f := range s.fields {
			tab := tc.fields[f]
			v := float64(s.values[k])
			if tc.pooling == Mean {
				n := 0
				for _, g := range s.fields {
					if g == f {
						n++
					}
				}
				v /= float64(n)
			}
			for j := 0; j < tc.tables[tab]; j++ {
				want[l.offsets[f]+j] += v * float64(hiddenRow(tab, s.ids[k], j))
			}
		}
		for j, w := range want {
			if got := float64(x[si*l.Width()+j]); math.Abs(got-w) > 1e-5 {
				t.Fatalf("sample %d col %d: pooled %v, want %v", si, j, got, w)
			}
		}
	}
}

// checkScatterAdjoint checks Scatter as the adjoint of Pool, with x =
// Pool(rows) and a random dx: <Pool(rows), dx> == <rows, Scatter(dx)>.
func checkScatterAdjoint(t *testing.T, rng *rand.Rand, b *Batch, rows [][]float32, x []float32) {
	dx := make([]float32, len(x))
	for i := range dx {
		dx[i] = float32(rng.NormFloat64())
	}
	grads := make([][]float32, len(rows))
	for tab := range grads {
		grads[tab] = make([]float32, len(rows[tab]))
	}
	b.Scatter(dx, grads)
	var lhs, rhs float64
	for i := range x {
		lhs += float64(x[i]) * float64(dx[i])
	}
	for tab := range rows {
		for i := range rows[tab] {
			rhs += float64(rows[tab][i]) * float64(grads[tab][i])
		}
	}
	if math.Abs(lhs-rhs) > 1e-3*(1+math.Abs(lhs)) {
		t.Fatalf("adjoint mismatch: <Pool(rows),dx> = %v, <rows,Scatter(dx)> = %v", lhs, rhs)
	}
}

func TestLayoutErrors(t *testing.T) {
	for _, tc := range []struct {
		fields, dims []int
	}{
		{nil, []int{4}},
		{[]int{0}, nil},
		{[]int{1}, []int{4}},
		{[]int{0}, []int{0}},
	} {
		if _, err := NewLayout(tc.fields, tc.dims, Sum); !errors.Is(err, ErrBadLayout) {
			t.Errorf("NewLayout(%v, %v) = %v, want ErrBadLayout", tc.fields, tc.dims, err)
		}
	}
	l, _ := NewLayout([]int{0, 0}, []int{2}, Sum)
	b := l.NewBatch()
	if err := b.Add([]uint32{0, 2}, []uint64{1, 2}, []float32{1, 1}); !errors.Is(err, ErrUnknownField) {
		t.Fatalf("Add with field 2 of 2 = %v, want ErrUnknownField", err)
	}
	if b.N != 0 || b.Features() != 0 {
		t.Fatalf("a refused sample left N=%d features=%d", b.N, b.Features())
	}
}

// BenchmarkDedup_9k deduplicates 17,664 Zipf-like ids (a batch of 256
// samples x 69 features) into about 9,000 unique ones, as a training batch
// of the XDL-shaped data does.
func BenchmarkDedup_9k(b *testing.B) {
	ids := dedupBenchIDs()
	var d Dedup
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.Reset()
		for _, id := range ids {
			d.Index(id)
		}
	}
	b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkDedupEvicted is BenchmarkDedup_9k with the caches flushed
// between batches (16 MiB written), as the trainer's and the tables' work
// between two batches of the builder does, and the ids taken 69 at a time
// (a sample's features), without and with Prefetch of a sample's ids
// before their Index, as Batch.AddNode does.
func BenchmarkDedupEvicted(b *testing.B) {
	ids := dedupBenchIDs()
	junk := make([]byte, 16<<20)
	for _, hint := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", hint), func(b *testing.B) {
			var d Dedup
			var inBatch time.Duration
			for b.Loop() {
				for i := range junk {
					junk[i]++
				}
				t0 := time.Now()
				d.Reset()
				for lo := 0; lo < len(ids); lo += 69 {
					sample := ids[lo : lo+69]
					if hint {
						for _, id := range sample {
							d.Prefetch(id)
						}
					}
					for _, id := range sample {
						d.Index(id)
					}
				}
				inBatch += time.Since(t0)
			}
			b.ReportMetric(float64(inBatch.Nanoseconds())/float64(b.N*len(ids)), "ns/id")
		})
	}
}

// dedupBenchIDs returns the ids of BenchmarkDedup_9k's batch.
func dedupBenchIDs() []uint64 {
	rng := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(rand.New(rand.NewPCG(5, 6)), 1.1, 1, 1<<21)
	ids := make([]uint64, 256*69)
	for i := range ids {
		ids[i] = z.Uint64()*0x9E3779B97F4A7C15 ^ rng.Uint64N(2)
	}
	return ids
}
