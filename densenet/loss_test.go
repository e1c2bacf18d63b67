package densenet

import (
	"fmt"
	"math"
	"testing"
)

func TestSigmoidBCE(t *testing.T) {
	tests := []struct {
		logits, labels []float32
	}{
		{nil, nil},
		{[]float32{0}, []float32{1}},
		{[]float32{0.3, -1.2, 2.5, -0.01}, []float32{1, 0, 0, 1}},
		{[]float32{5, -5, 12, -12, 1e-7}, []float32{1, 1, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.logits), func(t *testing.T) {
			n := len(tt.logits)
			probs, dl := make([]float32, n), make([]float32, n)
			got := SigmoidBCE(tt.logits, tt.labels, probs, dl)
			// The direct formula, fine for moderate logits.
			var want float64
			for i, z := range tt.logits {
				p := 1 / (1 + math.Exp(-float64(z)))
				y := float64(tt.labels[i])
				want -= y*math.Log(p) + (1-y)*math.Log(1-p)
				if d := math.Abs(float64(probs[i]) - p); d > 1e-7 {
					t.Errorf("probs[%d] = %v, want %v", i, probs[i], p)
				}
				if wd := (p - y) / float64(n); math.Abs(float64(dl[i])-wd) > 1e-7 {
					t.Errorf("dlogits[%d] = %v, want %v", i, dl[i], wd)
				}
			}
			if n > 0 {
				want /= float64(n)
			}
			if math.Abs(got-want) > 1e-9*max(1, want) {
				t.Errorf("loss = %v, want %v", got, want)
			}
		})
	}
}

func TestSigmoidBCELargeLogits(t *testing.T) {
	big := []float32{100, -100, 1e4, -1e4, math.MaxFloat32, -math.MaxFloat32}
	for _, z := range big {
		for _, y := range []float32{0, 1} {
			t.Run(fmt.Sprintf("z=%g/y=%v", z, y), func(t *testing.T) {
				probs, dl := make([]float32, 1), make([]float32, 1)
				loss := SigmoidBCE([]float32{z}, []float32{y}, probs, dl)
				// For |z| this large, the loss is |z| when wrong and 0 when right.
				want := 0.0
				if (z > 0) != (y == 1) {
					want = math.Abs(float64(z))
				}
				if math.IsNaN(loss) || math.IsInf(loss, 0) || math.Abs(loss-want) > 1e-6*max(1, want) {
					t.Errorf("loss = %v, want %v", loss, want)
				}
				wantP := float32(0)
				if z > 0 {
					wantP = 1
				}
				if math.Abs(float64(probs[0]-wantP)) > 1e-30 || math.Abs(float64(dl[0]-(wantP-y))) > 1e-30 {
					t.Errorf("probs, dlogits = %v, %v, want %v, %v", probs[0], dl[0], wantP, wantP-y)
				}
			})
		}
	}
}

func TestSigmoid(t *testing.T) {
	for _, x := range []float32{0, 1, -1, 20, -20, 89, -89, 1e4, -1e4, math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1))} {
		got := Sigmoid(x)
		if math.IsNaN(float64(got)) || got < 0 || got > 1 {
			t.Errorf("Sigmoid(%v) = %v", x, got)
		}
		if s := Sigmoid(-x); math.Abs(float64(got+s)-1) > 2e-7 {
			t.Errorf("Sigmoid(%v) + Sigmoid(%v) = %v, want 1", x, -x, got+s)
		}
	}
	if got := Sigmoid(0); got != 0.5 {
		t.Errorf("Sigmoid(0) = %v", got)
	}
	if got, want := Sigmoid(-30), float32(math.Exp(-30)); math.Abs(float64(got-want)) > 1e-7*float64(want) {
		t.Errorf("Sigmoid(-30) = %v, want %v (no cancellation)", got, want)
	}
}

func TestSigmoidBCEPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	SigmoidBCE(make([]float32, 2), make([]float32, 2), make([]float32, 2), make([]float32, 1))
}
