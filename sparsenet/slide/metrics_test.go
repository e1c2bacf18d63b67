package slide

import (
	"math"
	"testing"
)

func TestPrecisionAtK(t *testing.T) {
	pred := []int32{
		3, 1, 2, 9, 8, // labels {1, 3}: hits at ranks 0 and 1
		7, 7, 0, -1, -1, // labels {0}: a repeated prediction counts once
		4, 5, 6, 1, 0, // labels {}: nothing
	}
	labels := [][]int32{{1, 3}, {0, 0}, {}}
	tests := []struct {
		k    int
		want float64
	}{
		{1, 1.0 / 3},               // (1 + 0 + 0) / 3
		{3, (2.0/3 + 1.0/3) / 3},   // (2/3 + 1/3 + 0) / 3
		{5, (2.0/5 + 1.0/5) / 3},   // (2/5 + 1/5 + 0) / 3
		{2, (2.0/2 + 0.0/2) / 3.0}, // (1 + 0 + 0) / 3
	}
	for _, tc := range tests {
		if got := PrecisionAtK(pred, 5, labels, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("P@%d = %v, want %v", tc.k, got, tc.want)
		}
	}
	var p Precision
	if p.At(1) != 0 {
		t.Fatal("empty meter")
	}
	p.Add(pred[:5], 5, labels[:1])
	p.Add(pred[5:], 5, labels[1:])
	if got := p.At(3); math.Abs(got-tests[1].want) > 1e-12 || p.N() != 3 {
		t.Fatalf("accumulated P@3 = %v over %d", got, p.N())
	}
}
