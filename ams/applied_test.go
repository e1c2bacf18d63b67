package ams

import (
	"math/rand/v2"
	"testing"
)

// TestAppliedAgainstSet adds random batches and checks the ranges against
// a plain set: membership, count, invariants, refusals.
func TestAppliedAgainstSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		var a Applied
		set := map[uint64]bool{}
		refused := uint64(0)
		for k := 0; k < 60; k++ {
			b := uint64(rng.IntN(40))
			if got, want := a.Add(Origin{Worker: "w", Batch: b, Samples: 2}), !set[b]; got != want {
				t.Fatalf("Add(%d) = %v, want %v (record %s)", b, got, want, a.String())
			}
			if set[b] {
				refused++
			}
			set[b] = true
			for i, r := range a.Ranges {
				if r.Lo >= r.Hi || (i > 0 && a.Ranges[i-1].Hi >= r.Lo) {
					t.Fatalf("ranges break the invariants: %s", a.String())
				}
			}
		}
		for b := uint64(0); b < 42; b++ {
			if a.Has(b) != set[b] {
				t.Fatalf("Has(%d) = %v in %s", b, a.Has(b), a.String())
			}
		}
		if a.Batches() != uint64(len(set)) || a.Samples != int64(2*len(set)) || a.Refused != refused {
			t.Fatalf("batches %d samples %d refused %d; want %d, %d, %d", a.Batches(), a.Samples, a.Refused, len(set), 2*len(set), refused)
		}
	}
}

func TestAppliedExactlyAndUnion(t *testing.T) {
	var a, b Applied
	for i := uint64(0); i < 10; i++ {
		a.Add(Origin{Worker: "w", Batch: i, Samples: 1})
		if i != 4 {
			b.Add(Origin{Worker: "w", Batch: i, Samples: 1})
		}
	}
	if !a.Exactly(10) || a.Exactly(9) || b.Exactly(10) {
		t.Fatalf("Exactly wrong: a %s b %s", a.String(), b.String())
	}
	if b.String() != "[0,4) [5,10)" {
		t.Fatalf("b = %s", b.String())
	}
	u, exact := b.Union(&a)
	if exact || !u.Exactly(10) || u.Samples != 9 {
		t.Fatalf("b ∪ a = %s samples %d exact %v", u.String(), u.Samples, exact)
	}
	u, exact = a.Union(&b)
	if !exact || !u.Equal(&a) {
		t.Fatalf("a ∪ b = %s exact %v", u.String(), exact)
	}
	var empty Applied
	if !empty.Exactly(0) || empty.String() != "none" {
		t.Fatal("empty record")
	}
}
