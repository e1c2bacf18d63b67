package slide

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// recallResult is the fraction of the exact top-k neurons (by score
// W_j·x + b_j) that the LSH lookup of x finds, for k = 1 and 10.
type recallResult struct {
	union1, union10 float64 // in the union of the L buckets
	cut1, cut10     float64 // in the candidate set after the cut to s*d
	unionSize       float64 // mean sizes
	cands           float64
}

// recallRecord is one line of XPS_RECALL_OUT.
type recallRecord struct {
	Family     string  `json:"family"`
	D          int     `json:"d"`
	DIn        int     `json:"d_in"`
	Sparsity   float64 `json:"sparsity"`
	K          int     `json:"k"`
	L          int     `json:"l"`
	R          int     `json:"r"`
	Inputs     string  `json:"inputs"`
	Queries    int     `json:"queries"`
	Top1       float64 `json:"recall_top1"`
	Top10      float64 `json:"recall_top10"`
	Candidates float64 `json:"candidates"`
	UnionTop1  float64 `json:"union_recall_top1"`
	UnionTop10 float64 `json:"union_recall_top10"`
	UnionSize  float64 `json:"union_size"`
	RandomTop1 float64 `json:"random_set_recall_top1"`
}

func (r recallResult) String() string {
	return fmt.Sprintf("top-1 %.3f / top-10 %.3f in the candidates (%.0f), %.3f / %.3f in the bucket union (%.0f)",
		r.cut1, r.cut10, r.cands, r.union1, r.union10, r.unionSize)
}

// measureRecall queries the layer with each input row of x.
func measureRecall(l *Layer, x []float32, n int) recallResult {
	const k = 10
	din := l.din
	var res recallResult
	top := make([]int32, n*k)
	l.PredictDense(x, n, k, top)
	codes := make([]uint32, l.par.L)
	seen := make([]bool, l.d)
	var union []int32
	for i := 0; i < n; i++ {
		xi := x[i*din : (i+1)*din]
		cand := l.Candidates(xi, nil)
		l.fam.Hash(xi, codes)
		union = union[:0]
		for tb, c := range codes {
			for _, id := range l.tables.Bucket(tb, c) {
				if !seen[id] {
					seen[id] = true
					union = append(union, id)
				}
			}
		}
		for j, id := range top[i*k : (i+1)*k] {
			var u, c float64
			if seen[id] {
				u = 1
			}
			if slices.Contains(cand, id) {
				c = 1
			}
			if j == 0 {
				res.union1 += u
				res.cut1 += c
			}
			res.union10 += u
			res.cut10 += c
		}
		for _, id := range union {
			seen[id] = false
		}
		res.unionSize += float64(len(union))
		res.cands += float64(len(cand))
	}
	nf := float64(n)
	res.union1 /= nf
	res.cut1 /= nf
	res.union10 /= nf * k
	res.cut10 /= nf * k
	res.unionSize /= nf
	res.cands /= nf
	return res
}

// TestRecall logs, for each family at the autotuned K and L, how many of
// the exact top-1 and top-10 neurons the LSH candidates contain, with
// "trained-ish" weights (each neuron's weight vector is a label prototype of
// the synthetic problem of learn_test.go) and two kinds of queries: inputs
// of that problem (sums of 1-3 prototypes plus noise) and isotropic random
// inputs. It asserts only that the lookup beats a random candidate set of
// the same size by a wide margin; the figures are for the log.
//
// XPS_RECALL_DIMS (comma-separated layer sizes) replaces d = 20,000, and
// XPS_RECALL_OUT names a file that gets one JSON object (recallRecord) per
// size, sparsity, family and kind of input, for BENCHMARKS.md:
//
//	XPS_RECALL_DIMS=20000,670091 XPS_RECALL_OUT=/tmp/recall.jsonl \
//	    go test ./sparsenet/slide -run TestRecall -v -timeout 30m
func TestRecall(t *testing.T) {
	dims := []int{20000}
	if env := os.Getenv("XPS_RECALL_DIMS"); env != "" {
		dims = nil
		for _, f := range strings.Split(env, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || d < 100 {
				t.Fatalf("XPS_RECALL_DIMS %q: %q is not a layer size >= 100", env, f)
			}
			dims = append(dims, d)
		}
	}
	var out *json.Encoder
	if path := os.Getenv("XPS_RECALL_OUT"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out = json.NewEncoder(f)
	}
	for _, d := range dims {
		testRecall(t, d, out)
	}
}

func testRecall(t *testing.T, d int, out *json.Encoder) {
	din, n := 128, 300
	sparsities := []float64{0.005, 0.02}
	if raceEnabled || testing.Short() {
		d, n, sparsities = 4000, 30, sparsities[:1]
	}
	syn := newSynth(d, din, 5)
	r := newRNG(6, 6, 6)
	xs := make([]float32, n*din)
	ls := make([][]int32, n)
	syn.fill(&r, n, xs, ls)
	xr := make([]float32, n*din)
	for i := range xr {
		xr[i] = float32(r.normal())
	}
	for _, s := range sparsities {
		for _, fam := range []Kind{KindDWTA, KindSimHash} {
			l, err := New(Config{Dim: d, InputDim: din, Sparsity: s, Family: fam, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			copy(l.w, syn.proto)
			clear(l.b)
			l.Rehash()
			p := l.Params()
			rs := measureRecall(l, xs, n)
			rr := measureRecall(l, xr, n)
			t.Logf("%-7s d=%d din=%d s=%v K=%d L=%d R=%d", fam, d, din, s, p.K, p.L, p.R)
			t.Logf("    synthetic inputs: %v", rs)
			t.Logf("    random inputs:    %v", rr)
			if out != nil {
				for _, in := range []struct {
					name string
					r    recallResult
				}{{"synthetic", rs}, {"random", rr}} {
					rec := recallRecord{Family: fam.String(), D: d, DIn: din, Sparsity: s, K: p.K, L: p.L, R: p.R,
						Inputs: in.name, Queries: n, Top1: in.r.cut1, Top10: in.r.cut10, Candidates: in.r.cands,
						UnionTop1: in.r.union1, UnionTop10: in.r.union10, UnionSize: in.r.unionSize,
						RandomTop1: in.r.cands / float64(d)}
					if err := out.Encode(rec); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A random set of the same size would hold cands/d of the top-k.
			if base := rs.cands / float64(d); rs.cut1 < 10*base {
				t.Errorf("%s: top-1 recall %.3f, random sets give %.3f", fam, rs.cut1, base)
			}
			l.Close()
		}
	}
}
