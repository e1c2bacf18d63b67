package ams

import (
	"math"
	"testing"
)

func TestInitDeterministic(t *testing.T) {
	for _, kind := range []string{InitZeros, InitConstant, InitUniform, InitNormal} {
		spec := InitSpec{Kind: kind, Value: 0.5, Scale: 0.2, Seed: 99}
		for _, id := range []uint64{0, 1, 12345, math.MaxUint64} {
			a := make([]float32, 17)
			b := make([]float32, 17)
			spec.Fill(id, a)
			spec.Fill(id, b)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s id %d: two fills differ at %d", kind, id, i)
				}
			}
			// A prefix of columns does not depend on the row length.
			short := make([]float32, 6)
			spec.Fill(id, short)
			for i := range short {
				if short[i] != a[i] {
					t.Fatalf("%s id %d: column %d depends on the row length", kind, id, i)
				}
			}
		}
	}
}

func TestInitSameAcrossTables(t *testing.T) {
	for _, kind := range []string{InitUniform, InitNormal} {
		mk := func(name string, seed uint64) *Table {
			tb, err := NewTable(TableSpec{Name: name, Dim: 8, Init: InitSpec{Kind: kind, Scale: 0.1, Seed: seed}})
			if err != nil {
				t.Fatal(err)
			}
			return tb
		}
		a, b, c := mk("a", 3), mk("b", 3), mk("c", 4)
		ids := []uint64{5, 0, 77, 1 << 40}
		outA := make([]float32, len(ids)*8)
		outB := make([]float32, len(ids)*8)
		outC := make([]float32, len(ids)*8)
		// Different creation orders and interleavings.
		b.Pull([]uint64{999, 1000}, make([]float32, 16), true, 0)
		a.Pull(ids, outA, true, 0)
		rev := []uint64{ids[3], ids[2], ids[1], ids[0]}
		tmp := make([]float32, len(ids)*8)
		b.Pull(rev, tmp, true, 0)
		b.Pull(ids, outB, false, 0)
		c.Pull(ids, outC, true, 0)
		same := 0
		for i := range outA {
			if outA[i] != outB[i] {
				t.Fatalf("%s: same seed, different rows at %d", kind, i)
			}
			if outA[i] == outC[i] {
				same++
			}
		}
		if same > 1 {
			t.Fatalf("%s: different seeds agree on %d values", kind, same)
		}
		// Different ids get different rows.
		if outA[0] == outA[8] && outA[1] == outA[9] {
			t.Fatalf("%s: ids 5 and 0 start equal", kind)
		}
	}
}

func TestInitDistributions(t *testing.T) {
	const n = 200_000
	row := make([]float32, 16)
	fill := func(spec InitSpec) (mean, std float64, lo, hi float32) {
		var sum, sum2 float64
		lo, hi = float32(math.Inf(1)), float32(math.Inf(-1))
		for id := uint64(0); id < n/16; id++ {
			spec.Fill(id, row)
			for _, v := range row {
				sum += float64(v)
				sum2 += float64(v) * float64(v)
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		mean = sum / n
		return mean, math.Sqrt(sum2/n - mean*mean), lo, hi
	}
	t.Run("uniform", func(t *testing.T) {
		mean, std, lo, hi := fill(InitSpec{Kind: InitUniform, Scale: 0.5, Seed: 1})
		if lo < -0.5 || hi > 0.5 {
			t.Fatalf("values in [%v, %v], want inside [-0.5, 0.5]", lo, hi)
		}
		if lo > -0.49 || hi < 0.49 {
			t.Fatalf("values in [%v, %v] do not cover the range", lo, hi)
		}
		if math.Abs(mean) > 0.005 || math.Abs(std-0.5/math.Sqrt(3)) > 0.005 {
			t.Fatalf("mean %v std %v, want 0 and %v", mean, std, 0.5/math.Sqrt(3))
		}
	})
	t.Run("normal", func(t *testing.T) {
		mean, std, lo, hi := fill(InitSpec{Kind: InitNormal, Scale: 0.1, Seed: 2})
		if math.Abs(mean) > 0.002 || math.Abs(std-0.1) > 0.002 {
			t.Fatalf("mean %v std %v, want 0 and 0.1", mean, std)
		}
		if lo > -0.35 || hi < 0.35 || lo < -0.7 || hi > 0.7 {
			t.Fatalf("range [%v, %v] implausible for 200k normal draws of std 0.1", lo, hi)
		}
	})
	t.Run("constant", func(t *testing.T) {
		mean, std, _, _ := fill(InitSpec{Kind: InitConstant, Value: -2})
		if mean != -2 || std != 0 {
			t.Fatalf("mean %v std %v", mean, std)
		}
	})
	t.Run("zeros", func(t *testing.T) {
		for i := range row {
			row[i] = 1
		}
		InitSpec{Kind: InitZeros, Value: 3, Scale: 1}.Fill(1, row)
		for _, v := range row {
			if v != 0 {
				t.Fatal("zeros left a non-zero")
			}
		}
	})
}

func TestInitFillPanicsOnBadKind(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Fill with an unknown kind did not panic")
		}
	}()
	InitSpec{Kind: "gaussian"}.Fill(1, make([]float32, 2))
}
