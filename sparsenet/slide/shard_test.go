package slide

import (
	"math"
	"math/rand/v2"
	"testing"
)

// shardStep runs one training step of the owners on (x, n, labels) and
// returns the loss and the summed dx.
func shardStep(t *testing.T, owners []*Layer, x []float32, n int, labels [][]int32) (float64, []float32) {
	t.Helper()
	din := owners[0].din
	parts := make([][]Partial, len(owners))
	for o, l := range owners {
		parts[o] = make([]Partial, n)
		if err := l.ShardForward(x, n, labels, parts[o]); err != nil {
			t.Fatal(err)
		}
	}
	glob := make([]Global, n)
	loss, withLabels := Combine(parts, glob)
	dx, part := make([]float32, n*din), make([]float32, n*din)
	for _, l := range owners {
		l.ShardBackward(x, n, glob, withLabels, part)
		for i, v := range part {
			dx[i] += v
		}
	}
	return loss, dx
}

func closeTo(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// TestShardsEqualOneLayer trains one dense layer (Sparsity 1) and the same
// layer split between 3 owners (each Sparsity 1, so their active sets make
// up the whole layer) on the same batches: the loss, dx and every row's
// weights and bias after each step agree to float rounding. Samples
// without labels, repeated labels and labels of every owner are in the
// batches.
func TestShardsEqualOneLayer(t *testing.T) {
	const d, din, n, steps = 50, 8, 12, 4
	base := Config{Dim: d, InputDim: din, Sparsity: 1, Threads: 2, Seed: 7, LearningRate: 0.01}
	one, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	bounds := []int{0, 17, 34, d}
	owners := make([]*Layer, len(bounds)-1)
	for o := range owners {
		c := base
		c.Dim, c.FirstRow = bounds[o+1]-bounds[o], bounds[o]
		if owners[o], err = New(c); err != nil {
			t.Fatal(err)
		}
		defer owners[o].Close()
	}
	checkRows := func(step int) {
		t.Helper()
		for o, l := range owners {
			for r := 0; r < l.d; r++ {
				g := bounds[o] + r
				if !closeTo(float64(l.b[r]), float64(one.b[g]), 1e-5) {
					t.Fatalf("step %d: bias of row %d: owner %d has %v, one layer %v", step, g, o, l.b[r], one.b[g])
				}
				for c := 0; c < din; c++ {
					if a, b := l.w[r*din+c], one.w[g*din+c]; !closeTo(float64(a), float64(b), 1e-5) {
						t.Fatalf("step %d: W[%d][%d]: owner %d has %v, one layer %v", step, g, c, o, a, b)
					}
				}
			}
		}
	}
	checkRows(0)
	rng := rand.New(rand.NewPCG(5, 6))
	for step := 1; step <= steps; step++ {
		x := make([]float32, n*din)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		labels := make([][]int32, n)
		for i := range labels {
			switch i % 4 {
			case 0: // no labels
			case 1:
				labels[i] = []int32{int32(rng.IntN(d))}
			case 2:
				v := int32(rng.IntN(d))
				labels[i] = []int32{v, int32(rng.IntN(d)), v}
			default:
				labels[i] = []int32{int32(rng.IntN(17)), int32(34 + rng.IntN(16))}
			}
		}
		labels[n-1] = []int32{0, 16, 17, 33, 34, d - 1} // every owner's first and last rows
		want := make([]float32, n*din)
		wantLoss, err := one.TrainBatch(x, n, labels, want)
		if err != nil {
			t.Fatal(err)
		}
		loss, dx := shardStep(t, owners, x, n, labels)
		if !closeTo(loss, wantLoss, 1e-5) {
			t.Fatalf("step %d: loss %v, one layer %v", step, loss, wantLoss)
		}
		for i := range dx {
			if !closeTo(float64(dx[i]), float64(want[i]), 1e-5) {
				t.Fatalf("step %d: dx[%d] = %v, one layer %v", step, i, dx[i], want[i])
			}
		}
		checkRows(step)
	}
}

// TestOneShardEqualsTrainBatch checks the sparse path: one owner holding
// every row (FirstRow 0) draws the same active sets as TrainBatch with the
// same Seed, so its steps (hash tables, label insertion and Maintain
// included) give the same loss, dx and weights.
func TestOneShardEqualsTrainBatch(t *testing.T) {
	const d, din, n, steps = 400, 16, 20, 6
	cfg := Config{Dim: d, InputDim: din, Sparsity: 0.05, Threads: 2, Seed: 3, InsertLabels: true, LearningRate: 0.01}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rng := rand.New(rand.NewPCG(1, 9))
	for step := 1; step <= steps; step++ {
		x := make([]float32, n*din)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		labels := make([][]int32, n)
		for i := 1; i < n; i++ {
			labels[i] = []int32{int32(rng.IntN(d)), int32(rng.IntN(d))}
		}
		want := make([]float32, n*din)
		wantLoss, err := a.TrainBatch(x, n, labels, want)
		if err != nil {
			t.Fatal(err)
		}
		a.Maintain()
		loss, dx := shardStep(t, []*Layer{b}, x, n, labels)
		b.Maintain()
		if !closeTo(loss, wantLoss, 1e-5) {
			t.Fatalf("step %d: loss %v, TrainBatch %v", step, loss, wantLoss)
		}
		for i := range dx {
			if !closeTo(float64(dx[i]), float64(want[i]), 1e-5) {
				t.Fatalf("step %d: dx[%d] = %v, TrainBatch %v", step, i, dx[i], want[i])
			}
		}
		for i := range a.w {
			if !closeTo(float64(a.w[i]), float64(b.w[i]), 1e-5) {
				t.Fatalf("step %d: W flat %d: %v, TrainBatch %v", step, i, b.w[i], a.w[i])
			}
		}
		for r := 0; r < d; r++ {
			if a.steps[r] != b.steps[r] {
				t.Fatalf("step %d: row %d updated %d times, TrainBatch %d", step, r, b.steps[r], a.steps[r])
			}
		}
	}
}

// TestShardForwardRefusesNegativeLabel: a negative label is an error and
// keeps nothing.
func TestShardForwardRefusesNegativeLabel(t *testing.T) {
	l, err := New(Config{Dim: 10, InputDim: 4, Sparsity: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = l.ShardForward(make([]float32, 8), 2, [][]int32{{1}, {-3}}, make([]Partial, 2))
	if err == nil {
		t.Fatal("a negative label was taken")
	}
}
