package datagen

import (
	"slices"
	"testing"

	"github.com/xdlgo/xps/reader"
)

// TestNextGroupMatchesGenerate checks that NextGroup draws the samples
// Generate draws, in order, with the user's fields on the level-1 line.
func TestNextGroupMatchesGenerate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spu  float64
		max  int
	}{{"runs of 20", 20, 1 << 20}, {"capped groups", 20, 7}, {"no repetition", 1, 1 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Fields: 6, UserFields: 4, SamplesPerUser: tc.spu, Vocab: 1000, Seed: 3}
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(cfg)
			const n = 500
			ds := reader.NewDataset()
			want := a.Generate(ds, n)
			var got []float32
			var g reader.Group
			i := 0
			for i < n {
				got = b.NextGroup(&g, min(tc.max, n-i), got)
				if err := g.Validate(); err != nil {
					t.Fatal(err)
				}
				if g.NumSamples() > tc.max {
					t.Fatalf("group of %d samples, max %d", g.NumSamples(), tc.max)
				}
				uf, uids, _ := g.Levels[1].Line(0)
				for s := 0; s < g.NumSamples(); s++ {
					label, fields, ids, _ := ds.Sample(i)
					if g.Label(s) != label {
						t.Fatalf("sample %d: label %v, want %v", i, g.Label(s), label)
					}
					f0, id0, _ := g.Levels[0].Line(s)
					if !slices.Equal(append(slices.Clone(uf), f0...), fields) || !slices.Equal(append(slices.Clone(uids), id0...), ids) {
						t.Fatalf("sample %d: features differ", i)
					}
					i++
				}
			}
			if !slices.Equal(got, want) {
				t.Fatal("probabilities differ")
			}
		})
	}
}
