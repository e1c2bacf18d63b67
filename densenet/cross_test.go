package densenet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// crossForward64 is the reference loop of Cross.Forward in float64; it
// returns x_0 .. x_L and u_0 .. u_{L-1}.
func crossForward64(c *Cross, p, x []float64, n int) (xs, us [][]float64) {
	w := c.Width
	xs = [][]float64{x}
	for l := 0; l < c.Layers; l++ {
		off := l * (w*w + w)
		W, b := p[off:off+w*w], p[off+w*w:off+w*w+w]
		xl, u, next := xs[l], make([]float64, n*w), make([]float64, n*w)
		for s := 0; s < n; s++ {
			for o := 0; o < w; o++ {
				v := b[o]
				for i := 0; i < w; i++ {
					v += W[o*w+i] * xl[s*w+i]
				}
				u[s*w+o] = v
				next[s*w+o] = x[s*w+o]*v + xl[s*w+o]
			}
		}
		xs, us = append(xs, next), append(us, u)
	}
	return xs, us
}

// crossFixture is a Cross with random parameters (biases too, which Init
// sets to 0), a batch and an output gradient.
type crossFixture struct {
	c             *Cross
	params, x, dl []float32
	n             int
}

func newCrossFixture(t testing.TB, rng *rand.Rand, width, layers, n int) crossFixture {
	c, err := NewCross(width, layers)
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float32, c.NumParams())
	c.Init(params, rng.Uint64())
	for l := 0; l < layers; l++ {
		_, b := c.LayerParams(params, l)
		copy(b, randSlice(rng, width))
	}
	return crossFixture{c: c, params: params, x: randSlice(rng, n*width), dl: randSlice(rng, n*width), n: n}
}

var crossShapes = []struct{ width, layers, n int }{
	{1, 1, 1}, {3, 0, 2}, {5, 1, 3}, {4, 2, 4}, {7, 3, 2}, {6, 2, 0},
}

// TestCrossGradFiniteDifferences checks Forward against the float64
// reference loop and Backward against central differences of the float64
// loss Σ dout ⊙ x_L, with respect to every parameter and input.
func TestCrossGradFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, sh := range crossShapes {
		t.Run(fmt.Sprintf("w=%d/L=%d/n=%d", sh.width, sh.layers, sh.n), func(t *testing.T) {
			f := newCrossFixture(t, rng, sh.width, sh.layers, sh.n)
			c, n := f.c, f.n
			ws := c.NewWorkspace(n + 1)
			out := nanSlice(n * c.Width)
			c.Forward(ws, f.params, f.x, n, out)
			grad, dx := nanSlice(c.NumParams()), nanSlice(len(f.x))
			c.Backward(ws, f.params, f.x, n, f.dl, grad, dx)

			p64, x64, dl64 := f64(f.params), f64(f.x), f64(f.dl)
			xs, _ := crossForward64(c, p64, x64, n)
			closeTo(t, "out", out, xs[len(xs)-1])
			loss := func() float64 {
				xs, _ := crossForward64(c, p64, x64, n)
				var l float64
				for i, v := range xs[len(xs)-1] {
					l += dl64[i] * v
				}
				return l
			}
			const h = 1e-6
			check := func(what string, got []float32, v []float64) {
				for i := range v {
					old := v[i]
					v[i] = old + h
					up := loss()
					v[i] = old - h
					down := loss()
					v[i] = old
					want := (up - down) / (2 * h)
					if math.Abs(float64(got[i])-want) > 1e-4+1e-3*math.Abs(want) {
						t.Errorf("%s[%d] = %v, finite difference %v", what, i, got[i], want)
					}
				}
			}
			check("grad", grad, p64)
			check("dx", dx, x64)
		})
	}
}

// TestCrossLargeBatch runs a batch that crosses the GEMM blocks and its
// parallel threshold: the results match the float64 reference, do not
// depend on the number of goroutines, and the parameter gradient does not
// depend on whether dx is asked for.
func TestCrossLargeBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	f := newCrossFixture(t, rng, 70, 2, 300)
	c, n := f.c, f.n
	run := func(threads int, withDx bool) (out, grad, dx []float32) {
		ws := c.NewWorkspace(n)
		ws.Threads = threads
		out, grad = make([]float32, n*c.Width), make([]float32, c.NumParams())
		if withDx {
			dx = make([]float32, len(f.x))
		}
		c.Forward(ws, f.params, f.x, n, out)
		c.Backward(ws, f.params, f.x, n, f.dl, grad, dx)
		return out, grad, dx
	}
	o1, g1, d1 := run(1, true)
	o4, g4, d4 := run(4, true)
	if !slices.Equal(o1, o4) || !slices.Equal(g1, g4) || !slices.Equal(d1, d4) {
		t.Fatal("results with 4 goroutines differ from 1")
	}
	if _, g, _ := run(2, false); !slices.Equal(g, g1) {
		t.Fatal("grad depends on whether dx is asked for")
	}
	xs, _ := crossForward64(c, f64(f.params), f64(f.x), n)
	closeTo(t, "out", o1, xs[len(xs)-1])
}

func TestCrossInit(t *testing.T) {
	c, _ := NewCross(16, 3)
	p, q := make([]float32, c.NumParams()), make([]float32, c.NumParams())
	c.Init(p, 5)
	c.Init(q, 5)
	if !slices.Equal(p, q) {
		t.Fatal("Init is not deterministic")
	}
	bound := float32(math.Sqrt(3.0 / 16))
	for l := 0; l < c.Layers; l++ {
		w, b := c.LayerParams(p, l)
		if slices.ContainsFunc(b, func(v float32) bool { return v != 0 }) {
			t.Fatalf("layer %d bias not 0", l)
		}
		if slices.ContainsFunc(w, func(v float32) bool { return v < -bound || v > bound }) || slices.Max(w) < bound/2 {
			t.Fatalf("layer %d weights outside [-%v, %v] or not spread", l, bound, bound)
		}
	}
}

func TestCrossNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	f := newCrossFixture(t, rng, 414, 2, 64)
	ws := f.c.NewWorkspace(64)
	ws.Threads = 1
	out, grad, dx := make([]float32, len(f.x)), make([]float32, f.c.NumParams()), make([]float32, len(f.x))
	allocs := testing.AllocsPerRun(3, func() { // the warm-up run grows the packing buffers
		f.c.Forward(ws, f.params, f.x, f.n, out)
		f.c.Backward(ws, f.params, f.x, f.n, f.dl, grad, dx)
	})
	if allocs > 0 {
		t.Fatalf("Forward+Backward allocate %v times per pass", allocs)
	}
}

func TestCrossErrorsAndPanics(t *testing.T) {
	for _, bad := range [][2]int{{0, 1}, {-1, 2}, {3, -1}} {
		if _, err := NewCross(bad[0], bad[1]); !errors.Is(err, ErrBadSizes) {
			t.Errorf("NewCross(%d, %d): %v, want ErrBadSizes", bad[0], bad[1], err)
		}
	}
	c, _ := NewCross(3, 2)
	other, _ := NewCross(3, 2)
	p, x, o := make([]float32, c.NumParams()), make([]float32, 6), make([]float32, 6)
	fwd := func() *CrossWorkspace {
		ws := c.NewWorkspace(2)
		c.Forward(ws, p, x, 2, o)
		return ws
	}
	tests := []struct {
		name string
		f    func()
	}{
		{"layer out of range", func() { c.LayerParams(p, 2) }},
		{"short params", func() { c.Forward(c.NewWorkspace(2), p[1:], x, 2, o) }},
		{"short x", func() { c.Forward(c.NewWorkspace(2), p, x[1:], 2, o) }},
		{"short out", func() { c.Forward(c.NewWorkspace(2), p, x, 2, o[1:]) }},
		{"batch too large", func() { c.Forward(c.NewWorkspace(1), p, x, 2, o) }},
		{"foreign workspace", func() { c.Forward(other.NewWorkspace(2), p, x, 2, o) }},
		{"backward before forward", func() { c.Backward(c.NewWorkspace(2), p, x, 2, o, make([]float32, len(p)), nil) }},
		{"backward other n", func() { c.Backward(fwd(), p, x[:3], 1, o[:3], make([]float32, len(p)), nil) }},
		{"backward short grad", func() { c.Backward(fwd(), p, x, 2, o, make([]float32, len(p)-1), nil) }},
		{"backward short dx", func() { c.Backward(fwd(), p, x, 2, o, make([]float32, len(p)), make([]float32, 5)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tt.f()
		})
	}
}
