package shard

import (
	"math/rand/v2"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
)

// BenchmarkLifecycle measures a training step (a pull with create, then a
// push of the same ids, as one batch of a worker) on a shard of 2 stripes
// over a drifting stream: each batch draws 4096 ids from a Zipf over a
// window of 2^20 ids that slides by 64 ids a batch, so that new ids keep
// appearing and old ones stop. Sub-benchmarks add admission, expiry and a
// budget, alone and together; ns/op is per batch, and rows/op the table's
// rows at the end.
func BenchmarkLifecycle(b *testing.B) {
	for _, bc := range []struct {
		name string
		spec ams.TableSpec
	}{
		{"none", ams.TableSpec{}},
		{"admission", ams.TableSpec{Admission: filters.Spec{Kind: filters.KindCount, N: 2}}},
		{"expiry", ams.TableSpec{Expiry: filters.ExpirySpec{TTLSamples: 200 * 256}}},
		{"budget", ams.TableSpec{Budget: ams.Budget{Rows: 200_000}}},
		{"all", ams.TableSpec{Admission: filters.Spec{Kind: filters.KindCount, N: 2},
			Expiry: filters.ExpirySpec{TTLSamples: 200 * 256}, Budget: ams.Budget{Rows: 200_000}}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchLifecycle(b, bc.spec) })
	}
}

func benchLifecycle(b *testing.B, spec ams.TableSpec) {
	s := New(Options{Stripes: 2})
	defer s.Close()
	spec.Name, spec.Dim = "emb", 16
	if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		b.Fatal(err)
	}
	const batch, window, slide = 4096, 1 << 20, 64
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, window-1)
	ids := make([]uint64, batch)
	buf := make([]float32, batch*16)
	draw := func(i int) {
		seen := map[uint64]bool{}
		ids = ids[:0]
		for len(ids) < batch {
			id := uint64(i*slide) + zipf.Uint64()
			if !seen[id] {
				seen[id] = true
				ids = append(ids, ams.Mix64(id))
			}
		}
	}
	step := func(i int) {
		req := []ams.TableRequest{{Table: "emb", IDs: ids, Rows: buf}}
		if err := s.Pull(1, req, true); err != nil {
			b.Fatal(err)
		}
		if err := s.apply(1, ams.Origin{Worker: "w", Batch: uint64(i), Samples: 256}, req, nil); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 500 { // warm up: past the TTL, at the budget
		draw(i)
		step(i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		draw(500 + i)
		b.StartTimer()
		step(500 + i)
	}
	b.StopTimer()
	st, _ := s.Stats()
	b.ReportMetric(float64(st.Tables[0].Rows), "rows/op")
}
