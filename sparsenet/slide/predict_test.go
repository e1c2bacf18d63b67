package slide

import (
	"slices"
	"sort"
	"testing"
)

// bruteTop returns the k best ids among cand for x by the layer's scores.
func bruteTop(l *Layer, x []float32, cand []int32, k int) []int32 {
	type sc struct {
		s  float32
		id int32
	}
	var all []sc
	for _, id := range cand {
		var s float32
		for i := 0; i < l.din; i++ {
			s += l.w[int(id)*l.din+i] * x[i]
		}
		all = append(all, sc{s + l.b[id], id})
	}
	sort.Slice(all, func(i, j int) bool { return better(all[i].s, all[i].id, all[j].s, all[j].id) })
	out := make([]int32, k)
	for i := range out {
		out[i] = -1
		if i < len(all) {
			out[i] = all[i].id
		}
	}
	return out
}

func TestPredict(t *testing.T) {
	const d, din, n, k = 3000, 16, 7, 5
	l := newTestLayer(t, Config{Dim: d, InputDim: din, Sparsity: 0.02, Threads: 3, Seed: 6, InferSparsity: 0.5})
	r := newRNG(7, 7, 7)
	x := make([]float32, n*din)
	for i := range x {
		x[i] = float32(r.normal())
	}
	all := make([]int32, d)
	for i := range all {
		all[i] = int32(i)
	}
	out := make([]int32, n*k)
	l.PredictDense(x, n, k, out)
	for i := 0; i < n; i++ {
		want := bruteTop(l, x[i*din:(i+1)*din], all, k)
		// Gemm and the reference loop round differently, but random
		// scores are far enough apart for the rankings to agree.
		got := out[i*k : (i+1)*k]
		if !slices.Equal(got, want) {
			t.Errorf("dense sample %d: %v, want %v", i, got, want)
		}
	}
	l.PredictSparse(x, n, k, out)
	for i := 0; i < n; i++ {
		xi := x[i*din : (i+1)*din]
		cand := l.Candidates(xi, nil)
		if len(cand) == 0 || len(cand) > d/2 {
			t.Fatalf("sample %d: %d candidates", i, len(cand))
		}
		want := bruteTop(l, xi, cand, k)
		if got := out[i*k : (i+1)*k]; !slices.Equal(got, want) {
			t.Errorf("sparse sample %d: %v, want %v", i, got, want)
		}
	}
	// k larger than the candidate sets: -1 padding.
	big := 2000
	out = make([]int32, n*big)
	l.PredictSparse(x, n, big, out)
	if out[big-1] != -1 {
		t.Fatalf("no padding: %v", out[big-5:big])
	}
	// Dense k > d.
	out = make([]int32, 1*(d+2))
	l.PredictDense(x[:din], 1, d+2, out)
	if out[d] != -1 || out[d+1] != -1 || out[d-1] < 0 {
		t.Fatalf("dense padding: %v", out[d-2:])
	}
}
