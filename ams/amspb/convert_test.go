package amspb

import (
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
)

// TestTableSpecRoundTrip: a table spec with every lifecycle setting
// crosses the wire unchanged.
func TestTableSpecRoundTrip(t *testing.T) {
	s := ams.TableSpec{Name: "emb", Dim: 8, Optimizer: ams.OptimizerSpec{Name: "adam", LR: 0.01},
		Init:      ams.InitSpec{Kind: "normal", Scale: 0.1, Seed: 3},
		Admission: filters.Spec{Kind: filters.KindCount, N: 3, FalsePositiveRate: 0.001, MaxPartitionBytes: 4096, Generations: 3},
		Expiry: filters.ExpirySpec{TTLSamples: 1000, TTL: "72h", MinHits: 3, MinHitsTTLSamples: 100, MinHitsTTL: "1h",
			Expr: `hits < 3 && age > "72h"`, MaxExpireFraction: 0.2},
		Budget: ams.Budget{Rows: 1 << 20, Bytes: 1 << 30}, Storage: ams.StorageTiered, TierDir: "/ssd/xps",
		NonFinite: ams.NonFiniteClip, NonFiniteBound: 3}
	if got := ToTableSpec(FromTableSpec(s)); got != s {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
}

// TestTableUsageRoundTrip: a tiered table's figures cross the wire
// unchanged, and a table in memory's carry no tier.
func TestTableUsageRoundTrip(t *testing.T) {
	u := ams.TableUsage{Name: "emb", Rows: 10, RowBytes: 640, MemoryBytes: 1024, FilterBytes: 8,
		Counters: ams.Counters{Created: 5, FilteredPulls: 1, FilteredPushes: 2, Expired: 3, Evicted: 4, NonFiniteRefused: 6, NonFiniteClipped: 7},
		Tier:     ams.TierUsage{ColdRows: 90, ColdBytes: 9000, Lookups: 100, Misses: 40, DiskReads: 39, DiskBatches: 7, Promoted: 30, Demoted: 120}}
	if got := ToTableUsage(FromTableUsage(u)); got != u {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, u)
	}
	u.Tier = ams.TierUsage{}
	if p := FromTableUsage(u); p.Tier != nil {
		t.Fatalf("a table in memory sent a tier: %v", p.Tier)
	}
}

// TestDenseUsageRoundTrip: a dense range's figures cross the wire
// unchanged.
func TestDenseUsageRoundTrip(t *testing.T) {
	u := ams.DenseUsage{Name: "mlp", NonFiniteRefused: 3}
	if got := ToDenseUsage(FromDenseUsage(u)); got != u {
		t.Fatalf("round trip: got %+v, want %+v", got, u)
	}
}
