package ctr

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
)

// netKinds are the kinds of Net the tests build.
var netKinds = []string{config.KindMLP, config.KindLR, config.KindFM, config.KindDeepFM, config.KindDCNv2, config.KindWDL, "dcnv2+wide"}

// testNet builds a Net of kind over 6 fields of dim 4, the first 3 at
// level 1 (a user's), with random parameters, and a random compressed
// batch of n samples under users nodes.
func testNet(t *testing.T, kind string, n, users int, rng *rand.Rand) (*Net, []float32, densenet.Tree) {
	t.Helper()
	var cfg config.Config
	if kind == "dcnv2+wide" { // the wide part with a kind that does not have it by default
		kind = config.KindDCNv2
		wide := true
		cfg.Model.Wide = &wide
	}
	cfg.Model.Kind = kind
	cfg.Model.Tables = []ams.TableSpec{{Name: "emb", Dim: 4}}
	if kind != config.KindLR && kind != config.KindFM {
		cfg.Model.Hidden = []int{8, 5}
	}
	cfg.EnsureDefaults()
	net, err := NewNet(cfg, Shape{Fields: 6, Levels: []int{1, 1, 1, 0, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if net.wide != cfg.Model.HasWide() || net.wide && net.Layout.Width() != 6*4+6 {
		t.Fatalf("%s: wide %v, layout width %d", kind, net.wide, net.Layout.Width())
	}
	params := make([]float32, net.NumParams())
	net.Init(params, 3)
	for i := range params { // away from the initial values, so that every term counts
		params[i] += float32(rng.NormFloat64()) * 0.1
	}
	tr := densenet.Tree{Cols: net.Cols, Count: []int{n, users}, Parent: [][]int32{make([]int32, n)}}
	for s := range n {
		tr.Parent[0][s] = int32(s * users / n)
	}
	for k := range 2 {
		x := make([]float32, tr.Count[k]*(net.Cols[k+1]-net.Cols[k]))
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * 0.5
		}
		tr.X = append(tr.X, x)
	}
	return net, params, tr
}

// flat is t's flat expansion: one level, a row per sample.
func flat(t densenet.Tree) densenet.Tree {
	w := t.Cols[len(t.Cols)-1]
	x := make([]float32, t.Count[0]*w)
	densenet.ExpandTree(x, t)
	return densenet.Tree{Cols: []int{0, w}, Count: []int{t.Count[0]}, X: [][]float32{x}}
}

// TestNetTreeEqualsFlat: for every kind, a compressed batch gives the
// logits, the dense gradient and (summed over each node's samples) the
// input gradient of its flat expansion, up to float32 rounding.
func TestNetTreeEqualsFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kind := range netKinds {
		net, params, tr := testNet(t, kind, 12, 4, rng)
		fl := flat(tr)
		n := tr.Count[0]
		dout := make([]float32, n)
		for i := range dout {
			dout[i] = float32(rng.NormFloat64())
		}
		run := func(x densenet.Tree) (logits, grad []float32, dX [][]float32) {
			ws := net.NewWorkspace(n, 1)
			logits, grad = make([]float32, n), make([]float32, net.NumParams())
			for k := range x.Count {
				dX = append(dX, make([]float32, x.Count[k]*(x.Cols[k+1]-x.Cols[k])))
			}
			net.ForwardTree(ws, params, x, logits)
			net.BackwardTree(ws, params, x, dout, grad, dX)
			return logits, grad, dX
		}
		lt, gt, dt := run(tr)
		lf, gf, df := run(fl)
		reduced := [][]float32{make([]float32, len(dt[0])), make([]float32, len(dt[1]))}
		densenet.ReduceTree(reduced, tr, df[0], 0)
		for _, c := range []struct {
			what       string
			tree, flat []float32
		}{{"logits", lt, lf}, {"dense gradient", gt, gf}, {"level-0 input gradient", dt[0], reduced[0]}, {"level-1 input gradient", dt[1], reduced[1]}} {
			if i, d := maxDiff(c.tree, c.flat); d > 1e-4 {
				t.Errorf("%s: %s differs at %d by %g (tree %g, flat %g)", kind, c.what, i, d, c.tree[i], c.flat[i])
			}
		}
	}
}

// maxDiff returns the index and size of the largest difference between a
// and b relative to max(1, |b|).
func maxDiff(a, b []float32) (int, float64) {
	at, worst := 0, 0.0
	for i := range a {
		d := math.Abs(float64(a[i]-b[i])) / max(1, math.Abs(float64(b[i])))
		if d > worst {
			at, worst = i, d
		}
	}
	return at, worst
}

// TestNetGradients: for every kind, the gradients BackwardTree gives for
// the loss sum(r[s] * logit[s]) match central finite differences, on
// dense parameters and on the nodes' inputs of both levels.
func TestNetGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kind := range netKinds {
		net, params, tr := testNet(t, kind, 6, 2, rng)
		n := tr.Count[0]
		r := make([]float32, n)
		for i := range r {
			r[i] = float32(rng.NormFloat64())
		}
		ws := net.NewWorkspace(n, 1)
		logits := make([]float32, n)
		loss := func() float64 {
			net.ForwardTree(ws, params, tr, logits)
			var l float64
			for i, z := range logits {
				l += float64(r[i] * z)
			}
			return l
		}
		loss()
		grad := make([]float32, net.NumParams())
		dX := [][]float32{make([]float32, len(tr.X[0])), make([]float32, len(tr.X[1]))}
		net.BackwardTree(ws, params, tr, r, grad, dX)
		check := func(what string, v []float32, g []float32) {
			for range 8 {
				i := rng.IntN(len(v))
				old := v[i]
				const eps = 2e-3
				v[i] = old + eps
				up := loss()
				v[i] = old - eps
				down := loss()
				v[i] = old
				fd := (up - down) / (2 * eps)
				if d := math.Abs(fd - float64(g[i])); d > 2e-2*max(1, math.Abs(fd)) {
					t.Errorf("%s: d loss / d %s[%d] = %g, finite differences %g", kind, what, i, g[i], fd)
				}
			}
		}
		check("params", params, grad)
		check("X[0]", tr.X[0], dX[0])
		check("X[1]", tr.X[1], dX[1])
	}
}

// TestNetKindErrors: fm and deepfm refuse fields of several dims and dense
// fields, with messages naming them.
func TestNetKindErrors(t *testing.T) {
	var cfg config.Config
	cfg.Model.Kind = config.KindDeepFM
	cfg.Model.Tables = []ams.TableSpec{{Name: "a", Dim: 4}, {Name: "b", Dim: 8}}
	cfg.Model.FieldTables = []string{"a", "b"}
	cfg.EnsureDefaults()
	if _, err := NewNet(cfg, Shape{Fields: 2}); err == nil {
		t.Error("deepfm over tables of dims 4 and 8 built")
	}
	cfg.Model.Tables[1].Dim = 4
	if _, err := NewNet(cfg, Shape{Fields: 2, DenseWidths: []int{0, 3}}); err == nil {
		t.Error("deepfm over a dense field built")
	}
	if _, err := NewNet(cfg, Shape{Fields: 2}); err != nil {
		t.Errorf("deepfm over two tables of dim 4: %v", err)
	}
}
