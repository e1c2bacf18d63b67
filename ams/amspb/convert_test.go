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
		Budget: ams.Budget{Rows: 1 << 20, Bytes: 1 << 30}}
	if got := ToTableSpec(FromTableSpec(s)); got != s {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
}
