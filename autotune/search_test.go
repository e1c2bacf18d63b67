package autotune

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	// 9 trials, 3x: 9 of run/9 and 3 of run/3 cost two runs; the winner
	// the third.
	p, err := NewPlan(9, 3*90000, 90000, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rounds != 2 || p.First != 10000 || p.Samples(1) != 30000 || p.Keep(1) != 3 {
		t.Fatalf("plan %+v, round 1: %d samples, %d trials", p, p.Samples(1), p.Keep(1))
	}
	if p, err := NewPlan(1, 90000, 90000, 100, false); err != nil || p.Rounds != 0 {
		t.Fatalf("one trial: %+v, %v", p, err)
	}
	if p, err := NewPlan(27, 1e9, 90000, 100, false); err != nil || p.Samples(3) != 90000 {
		t.Fatalf("a round's trials train at most one run: %+v, %v", p, err)
	}
	// Resumed: the rounds cost 9 + 3x2 first rounds, and the winner's run
	// goes on from a third: a sixth and a half of a run at 3x.
	if p, err := NewPlan(9, 3*90000, 90000, 100, true); err != nil || p.First != 15000 || p.Samples(1) != 45000 {
		t.Fatalf("resumed: %+v, %v", p, err)
	}
	_, err = NewPlan(9, 90000+18*1000, 90000, 100, false)
	if err == nil || !strings.Contains(err.Error(), "at least 126000 samples (1.40x)") {
		t.Fatalf("a budget below one trial of 20 batches: %v", err)
	}
}

// TestSearchScript: the rounds keep the best third, ranked by the figure
// in the metric's direction, ties to the earlier setting, trials without
// a figure dropped; reports out of order are refused.
func TestSearchScript(t *testing.T) {
	p, err := NewPlan(9, 3*90000, 90000, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, higher := range []bool{true, false} {
		s := NewSearch(p, higher)
		figs := []float64{0.70, 0.75, math.NaN(), 0.72, 0.75, 0.60, 0.74, 0.71, 0.73}
		if !higher {
			for i := range figs {
				figs[i] = 1 - figs[i]
			}
		}
		if err := s.Report(Trial{Setting: 3}, Outcome{}); err == nil {
			t.Fatal("a report for a trial not asked for was taken")
		}
		for i := range 9 {
			tr, ok := s.Next()
			if !ok || tr != (Trial{Setting: i, Samples: 10000}) {
				t.Fatalf("trial %d: %+v %v", i, tr, ok)
			}
			if err := s.Report(tr, Outcome{Figure: figs[i], Trained: 10000}); err != nil {
				t.Fatal(err)
			}
		}
		var round1 []int
		for range 3 {
			tr, ok := s.Next()
			if !ok || tr.Round != 1 || tr.Samples != 30000 {
				t.Fatalf("round 1: %+v %v", tr, ok)
			}
			round1 = append(round1, tr.Setting)
			f := map[int]float64{1: 0.76, 4: 0.78, 6: 0.77}[tr.Setting]
			if !higher {
				f = 1 - f
			}
			if err := s.Report(tr, Outcome{Figure: f}); err != nil {
				t.Fatal(err)
			}
		}
		if want := []int{1, 4, 6}; !slices.Equal(round1, want) {
			t.Fatalf("higher %v: round 1 ran %v, want %v (ties to the earlier)", higher, round1, want)
		}
		if _, ok := s.Next(); ok {
			t.Fatal("a third round")
		}
		if w, ok := s.Winner(); !ok || w != 4 {
			t.Fatalf("winner %d %v", w, ok)
		}
		trials, outs := s.Trials()
		if len(trials) != 12 || len(outs) != 12 || outs[0].Trained != 10000 {
			t.Fatalf("%d trials", len(trials))
		}
	}
}

func TestSearchNoFigure(t *testing.T) {
	p, _ := NewPlan(3, 1e6, 90000, 100, false)
	s := NewSearch(p, true)
	var err error
	for tr, ok := s.Next(); ok; tr, ok = s.Next() {
		err = s.Report(tr, Outcome{Figure: math.NaN()})
	}
	if !errors.Is(err, ErrNoFigure) {
		t.Fatalf("a round without a figure: %v", err)
	}
	if _, ok := s.Winner(); ok {
		t.Fatal("a winner without a figure")
	}
}
