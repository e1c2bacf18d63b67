package seqgen

import (
	"math"
	"testing"

	"github.com/xdlgo/xps/model/metrics"
)

// teacherStats are the figures of the package documentation: CTR, the
// teacher's AUC and the AUCs of two oracles that know the item vectors but
// not the whole teacher, each with its best scale.
type teacherStats struct {
	ctr, teacher, noRecency, mean float64
}

func measure(g *Generator, n int) teacherStats {
	labels := make([]float32, n)
	probs := make([]float32, n)
	scales := []float64{1, 2, 3, 4, 6}
	noRec := make([][]float32, len(scales))
	mean := make([][]float32, len(scales))
	var st teacherStats
	for i := range n {
		g.next()
		labels[i], probs[i] = g.label, float32(g.prob)
		st.ctr += g.prob / float64(n)
		a := g.w.attend(g.hist, g.cand, g.cfg.Beta, 0, g.dots)
		m := g.w.attend(g.hist, g.cand, 0, 0, g.dots)
		for k, s := range scales {
			noRec[k] = append(noRec[k], float32(g.prof.term+s*a))
			mean[k] = append(mean[k], float32(g.prof.term+s*m))
		}
	}
	st.teacher = metrics.AUC(labels, probs)
	for k := range scales {
		st.noRecency = max(st.noRecency, metrics.AUC(labels, noRec[k]))
		st.mean = max(st.mean, metrics.AUC(labels, mean[k]))
	}
	return st
}

// TestTeacher checks the teacher's figures on the test stream: the CTR and
// the best achievable AUC in their bands, a clear loss for the mean of the
// history (what sum pooling gives), and a loss for attention without
// recency that drift makes larger.
func TestTeacher(t *testing.T) {
	n := 40000
	if raceEnabled {
		n = 8000
	}
	var st [2]teacherStats
	for i, drift := range []bool{false, true} {
		g := mustNew(t, Config{Drift: drift}).Fork(TestStream)
		st[i] = measure(g, n)
		s := st[i]
		t.Logf("drift %v: bias %.3f, CTR %.3f, teacher AUC %.4f, no recency %.4f, mean of the history %.4f",
			drift, g.Bias(), s.ctr, s.teacher, s.noRecency, s.mean)
		if s.ctr < 0.2 || s.ctr > 0.3 || s.teacher < 0.75 || s.teacher > 0.85 {
			t.Errorf("drift %v: CTR %.3f or teacher AUC %.4f out of [0.2, 0.3] and [0.75, 0.85]", drift, s.ctr, s.teacher)
		}
		if s.teacher-s.mean < 0.03 {
			t.Errorf("drift %v: the mean of the history loses only %.4f AUC", drift, s.teacher-s.mean)
		}
	}
	if st[1].teacher-st[1].noRecency < 0.015 || st[1].teacher-st[1].noRecency < 2*(st[0].teacher-st[0].noRecency) {
		t.Errorf("attention without recency loses %.4f with drift, %.4f without", st[1].teacher-st[1].noRecency, st[0].teacher-st[0].noRecency)
	}
}

// TestDriftMovesInterest checks that with drift the late history comes
// from other categories than the early history: the total variation
// distance between the category distributions of the first and the last
// third of a history, averaged over groups.
func TestDriftMovesInterest(t *testing.T) {
	var dist [2]float64
	for i, drift := range []bool{false, true} {
		g := mustNew(t, Config{Drift: drift, Seed: 11})
		const groups = 2000
		for range groups {
			g.newGroup()
			third := len(g.hist) / 3
			h := map[int]float64{}
			for _, it := range g.hist[:third] {
				h[g.w.category(it)] += 1 / float64(third)
			}
			for _, it := range g.hist[len(g.hist)-third:] {
				h[g.w.category(it)] -= 1 / float64(third)
			}
			var tv float64
			for _, d := range h {
				tv += math.Abs(d) / 2
			}
			dist[i] += tv / groups
		}
	}
	t.Logf("distance between early and late categories: %.3f without drift, %.3f with", dist[0], dist[1])
	if dist[1] < dist[0]+0.25 {
		t.Errorf("drift does not move the interests: distance %.3f without, %.3f with", dist[0], dist[1])
	}
}

// TestNegativesDifferFromPositives draws small worlds where the 16 tries
// can fail: a negative is still never its position's positive.
func TestNegativesDifferFromPositives(t *testing.T) {
	g := mustNew(t, Config{Items: 40, Categories: 8, MaxLen: 200})
	for range 200 {
		g.newGroup()
		for i, n := range g.negs {
			if n == g.hist[i] || n < 0 || int(n) >= g.cfg.Items {
				t.Fatalf("negative %d at the position of %d", n, g.hist[i])
			}
		}
	}
}
