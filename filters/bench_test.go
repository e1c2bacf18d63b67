package filters

import (
	"math/rand"
	"testing"
	"time"

	"github.com/xdlgo/xps/model/hashmix"
)

// benchPartitions is the partitions of one stripe owner: 4096 virtual
// partitions over 8 shards of 8 stripes.
const benchPartitions = 64

// rowless returns the sightings a shard would pass to Admit under spec:
// a stream of 2^22 sightings, Zipf-distributed (s = 1.1) over 2^26 IDs,
// minus the sightings of IDs already admitted (they have a row), with
// their partitions. A filter fed them from empty admits as the one that
// chose them did (invariant 2).
func rowless(b *testing.B, spec Spec) (ids []uint64, parts []uint32) {
	f := mustNew(b, spec, benchPartitions)
	z := rand.NewZipf(rand.New(rand.NewSource(9)), 1.1, 1, 1<<26-1)
	rows := map[uint64]bool{}
	for range 1 << 22 {
		id := hashmix.Mix64(z.Uint64())
		if rows[id] {
			continue
		}
		p := partOf(id, benchPartitions)
		ids, parts = append(ids, id), append(parts, p)
		rows[id] = f.Admit(p, id)
	}
	return ids, parts
}

// benchAdmit measures Admit over the rowless sightings of spec, from an
// empty filter at each pass over them. It reports the share admitted and
// the filter's memory at the end of a pass.
func benchAdmit(b *testing.B, spec Spec) {
	ids, parts := rowless(b, spec)
	f := mustNew(b, spec, benchPartitions)
	b.ReportAllocs()
	b.ResetTimer()
	admitted, mem := 0, 0
	for i := range b.N {
		k := i % len(ids)
		if k == 0 && i > 0 {
			b.StopTimer()
			mem, f = f.MemoryBytes(), mustNew(b, spec, benchPartitions)
			b.StartTimer()
		}
		admitted += b2i(f.Admit(parts[k], ids[k]))
	}
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
	b.ReportMetric(float64(max(mem, f.MemoryBytes())), "filter-bytes")
}

func BenchmarkAdmit_None(b *testing.B) { benchAdmit(b, Spec{}) }
func BenchmarkAdmit_Probability(b *testing.B) {
	benchAdmit(b, Spec{Kind: KindProbability, P: 0.25})
}
func BenchmarkAdmit_Count2(b *testing.B) { benchAdmit(b, Spec{Kind: KindCount, N: 2}) }
func BenchmarkAdmit_Count3(b *testing.B) { benchAdmit(b, Spec{Kind: KindCount, N: 3}) }
func BenchmarkAdmit_Count5(b *testing.B) { benchAdmit(b, Spec{Kind: KindCount, N: 5}) }

// Count3_G4_1MiB: a bound of 64 MiB over the 64 partitions, of which a
// pass allocates 16 MiB (one generation each), beyond the caches: a probe
// costs memory misses.
func BenchmarkAdmit_Count3_G4_1MiB(b *testing.B) {
	benchAdmit(b, Spec{Kind: KindCount, N: 3, Generations: 4, MaxPartitionBytes: 1 << 20})
}

func BenchmarkMarshalPartition(b *testing.B) {
	f := mustNew(b, Spec{Kind: KindCount, N: 3}, 1)
	for i := range uint64(1 << 16) {
		f.Admit(0, hashmix.Mix64(i))
	}
	buf := f.AppendPartition(nil, 0)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = f.AppendPartition(buf[:0], 0)
		if err := f.UnmarshalPartition(0, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRows returns rows of a sweep: hits, wall age (up to 8 days) and
// idle samples (up to 2^20) spread so that each rule of the
// BenchmarkExpired family expires a part of them.
func benchRows() []RowStats {
	rng := rand.New(rand.NewSource(7))
	rows := make([]RowStats, 1<<12)
	for i := range rows {
		rows[i] = RowStats{Hits: uint32(rng.ExpFloat64() * 8), Age: time.Duration(rng.Int63n(int64(8 * day))),
			IdleSamples: rng.Int63n(1 << 20), Norm: float32(rng.Float64())}
	}
	return rows
}

// benchExpired measures Expired per row over benchRows under spec, and
// reports the share of rows expired.
func benchExpired(b *testing.B, spec ExpirySpec) {
	rows := benchRows()
	e := mustExpiry(b, spec)
	expired := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if e.Expired(rows[i&(len(rows)-1)]) {
			expired++
		}
	}
	b.ReportMetric(float64(expired)/float64(b.N), "expired/op")
}

func BenchmarkExpired_TTL(b *testing.B) {
	benchExpired(b, ExpirySpec{TTLSamples: 15 << 16, TTL: "7d"})
}

func BenchmarkExpired_TTLMinHits(b *testing.B) {
	benchExpired(b, ExpirySpec{TTLSamples: 15 << 16, TTL: "7d", MinHits: 3, MinHitsTTL: "2d"})
}

func BenchmarkExpired_Expr(b *testing.B) {
	benchExpired(b, ExpirySpec{Expr: `hits < 3 && age > "72h"`})
}

func BenchmarkExpired_ExprNorm(b *testing.B) {
	benchExpired(b, ExpirySpec{Expr: `norm < 0.05 || idle_samples > 500000 && hits < 10`})
}

// BenchmarkExpired_TTLExpr: the expression runs only for the rows the
// TTLs keep.
func BenchmarkExpired_TTLExpr(b *testing.B) {
	benchExpired(b, ExpirySpec{TTLSamples: 15 << 16, TTL: "7d", Expr: `hits < 3 && age > "72h"`})
}
