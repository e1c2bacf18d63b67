package filters

import (
	"math/rand"
	"testing"

	"github.com/xdlgo/xps/internal/hashmix"
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
