package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestStreamMatchesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{10, 1000, 50000} {
		s := NewStream()
		var labels, probs []float32
		for i := 0; i < n; i++ {
			y := float32(rng.IntN(2))
			p := float32(1 / (1 + math.Exp(-(float64(y)-0.5)*2-rng.NormFloat64())))
			labels, probs = append(labels, y), append(probs, p)
		}
		for i := 0; i < n; i += 7 { // in uneven pieces
			j := min(i+7, n)
			s.Add(labels[i:j], probs[i:j])
		}
		if got, want := s.AUC(), AUC(labels, probs); math.Abs(got-want) > 1e-3 {
			t.Errorf("n=%d: stream AUC %v, exact %v", n, got, want)
		}
		if got, want := s.LogLoss(), LogLoss(labels, probs); math.Abs(got-want) > 1e-9 {
			t.Errorf("n=%d: stream logloss %v, exact %v", n, got, want)
		}
		if s.N() != int64(n) {
			t.Errorf("N = %d", s.N())
		}
	}
	if s := NewStream(); !math.IsNaN(s.AUC()) || !math.IsNaN(s.LogLoss()) {
		t.Error("empty stream gives numbers")
	}
}
