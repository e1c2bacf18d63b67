package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteAUC counts every (positive, negative) pair.
func bruteAUC(labels, scores []float32) float64 {
	var wins, pairs float64
	for i := range labels {
		if labels[i] <= 0.5 {
			continue
		}
		for j := range labels {
			if labels[j] > 0.5 {
				continue
			}
			pairs++
			switch {
			case scores[i] > scores[j]:
				wins++
			case scores[i] == scores[j]:
				wins += 0.5
			}
		}
	}
	return wins / pairs
}

func TestAUCMatchesPairCounting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 2 + r.IntN(200)
		labels := make([]float32, n)
		scores := make([]float32, n)
		levels := 1 + r.IntN(20) // few levels: many ties
		if trial%3 == 0 {
			levels = 1 << 30
		}
		for i := range n {
			if r.Float64() < 0.3 {
				labels[i] = 1
			}
			scores[i] = float32(r.IntN(levels)) - float32(levels)/2
		}
		labels[0], labels[1] = 0, 1
		got, want := AUC(labels, scores), bruteAUC(labels, scores)
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: AUC = %v, pair counting %v", trial, got, want)
		}
	}
}

func TestAUCSpecialCases(t *testing.T) {
	tests := []struct {
		name           string
		labels, scores []float32
		want           float64
	}{
		{"perfect", []float32{0, 0, 1, 1}, []float32{0.1, 0.2, 0.3, 0.4}, 1},
		{"inverted", []float32{1, 1, 0, 0}, []float32{0.1, 0.2, 0.3, 0.4}, 0},
		{"all tied", []float32{1, 0, 1, 0}, []float32{5, 5, 5, 5}, 0.5},
		{"half", []float32{0, 1, 0, 1}, []float32{1, 2, 3, 4}, 0.75},
		{"no positives", []float32{0, 0}, []float32{1, 2}, math.NaN()},
		{"no negatives", []float32{1, 1}, []float32{1, 2}, math.NaN()},
		{"empty", nil, nil, math.NaN()},
		{"nan score", []float32{0, 1}, []float32{float32(math.NaN()), 1}, math.NaN()},
		{"infinities", []float32{0, 1}, []float32{float32(math.Inf(-1)), float32(math.Inf(1))}, 1},
	}
	for _, tc := range tests {
		got := AUC(tc.labels, tc.scores)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s: AUC = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLogLoss(t *testing.T) {
	labels := []float32{1, 0, 1, 0.25}
	probs := []float32{0.8, 0.3, 0, 0.5}
	want := 0.0
	for i := range labels {
		p := math.Min(math.Max(float64(probs[i]), 1e-7), 1-1e-7)
		y := float64(labels[i])
		want += -(y*math.Log(p) + (1-y)*math.Log(1-p))
	}
	want /= 4
	if got := LogLoss(labels, probs); math.Abs(got-want) > 1e-12 {
		t.Errorf("LogLoss = %v, want %v", got, want)
	}
	if got := LogLoss([]float32{1, 0}, []float32{0.5, 0.5}); math.Abs(got-math.Ln2) > 1e-12 {
		t.Errorf("LogLoss at 0.5 = %v, want ln 2", got)
	}
	if got := LogLoss([]float32{1}, []float32{0}); math.IsInf(got, 0) || got < 16 {
		t.Errorf("confident mistake: LogLoss = %v, want large and finite", got)
	}
	if got := LogLoss(nil, nil); !math.IsNaN(got) {
		t.Errorf("empty: %v", got)
	}
}

func TestLengthMismatchPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"AUC":     func() { AUC([]float32{1}, nil) },
		"LogLoss": func() { LogLoss([]float32{1}, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic on a length mismatch", name)
				}
			}()
			f()
		}()
	}
}

func BenchmarkAUC_1M(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 1 << 20
	labels := make([]float32, n)
	scores := make([]float32, n)
	for i := range n {
		scores[i] = r.Float32()
		if r.Float32() < scores[i]*0.4 {
			labels[i] = 1
		}
	}
	for b.Loop() {
		AUC(labels, scores)
	}
}
