package slide

import (
	"errors"
	"math"
	"slices"
	"testing"
)

type familyCase struct {
	name string
	make func(dim, k, l int, seed uint64) (Family, error)
}

var families = []familyCase{
	{"simhash", func(dim, k, l int, seed uint64) (Family, error) { return NewSimHash(dim, k, l, 1.0/3, seed) }},
	{"dwta", func(dim, k, l int, seed uint64) (Family, error) { return NewDWTA(dim, k, l, 8, seed) }},
}

func randVec(r *rng, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.normal())
	}
	return v
}

// perturb returns v plus noise of relative size eps.
func perturb(r *rng, v []float32, eps float64) []float32 {
	out := make([]float32, len(v))
	for i := range v {
		out[i] = v[i] + float32(eps*r.normal())
	}
	return out
}

func TestFamilyDeterministicAndInRange(t *testing.T) {
	for _, fc := range families {
		t.Run(fc.name, func(t *testing.T) {
			const dim, k, l = 64, 7, 12
			f1, err := fc.make(dim, k, l, 42)
			if err != nil {
				t.Fatal(err)
			}
			f2, _ := fc.make(dim, k, l, 42)
			f3, _ := fc.make(dim, k, l, 43)
			if f1.Dim() != dim || f1.K() != k || f1.L() != l {
				t.Fatalf("shape %d %d %d", f1.Dim(), f1.K(), f1.L())
			}
			r := newRNG(1, 2, 3)
			same3 := 0
			for it := 0; it < 50; it++ {
				v := randVec(&r, dim)
				c1, c2, c3 := make([]uint32, l), make([]uint32, l), make([]uint32, l)
				f1.Hash(v, c1)
				f2.Hash(v, c2)
				f3.Hash(v, c3)
				if !slices.Equal(c1, c2) {
					t.Fatalf("same seed, different codes: %v %v", c1, c2)
				}
				again := make([]uint32, l)
				f1.Hash(v, again)
				if !slices.Equal(c1, again) {
					t.Fatal("Hash is not a function")
				}
				for _, c := range c1 {
					if c >= 1<<k {
						t.Fatalf("code %d >= 2^%d", c, k)
					}
				}
				for i := range c1 {
					if c1[i] == c3[i] {
						same3++
					}
				}
			}
			if frac := float64(same3) / (50 * l); frac > 0.2 {
				t.Fatalf("another seed agrees on %.2f of the codes", frac)
			}
		})
	}
}

// collisionRate is the fraction of codes two vectors share.
func collisionRate(f Family, a, b []float32) float64 {
	ca, cb := make([]uint32, f.L()), make([]uint32, f.L())
	f.Hash(a, ca)
	f.Hash(b, cb)
	n := 0
	for i := range ca {
		if ca[i] == cb[i] {
			n++
		}
	}
	return float64(n) / float64(f.L())
}

func TestFamilyLocalitySensitive(t *testing.T) {
	for _, fc := range families {
		t.Run(fc.name, func(t *testing.T) {
			const dim, k, l = 128, 6, 64
			f, err := fc.make(dim, k, l, 7)
			if err != nil {
				t.Fatal(err)
			}
			r := newRNG(5, 6, 7)
			var near, mid, far float64
			const trials = 40
			for it := 0; it < trials; it++ {
				v := randVec(&r, dim)
				near += collisionRate(f, v, perturb(&r, v, 0.1))
				mid += collisionRate(f, v, perturb(&r, v, 0.5))
				far += collisionRate(f, v, randVec(&r, dim))
			}
			near, mid, far = near/trials, mid/trials, far/trials
			t.Logf("%s K=%d: collision rate near %.3f, mid %.3f, random %.3f", fc.name, k, near, mid, far)
			if !(near > mid && mid > far) || near < 0.3 || far > 0.05 {
				t.Fatalf("not locality-sensitive: near %.3f mid %.3f far %.3f", near, mid, far)
			}
		})
	}
}

func TestSimHashSign(t *testing.T) {
	// Without sampling (density 1) and K = 1, v and -v never share a bit
	// unless a projection is exactly 0, and v and 2v always do.
	f, err := NewSimHash(16, 1, 32, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if f.Sample() != 16 {
		t.Fatalf("sample %d", f.Sample())
	}
	r := newRNG(1, 1, 1)
	v := randVec(&r, 16)
	neg, dbl := make([]float32, 16), make([]float32, 16)
	for i := range v {
		neg[i], dbl[i] = -v[i], 2*v[i]
	}
	if c := collisionRate(f, v, neg); c != 0 {
		t.Fatalf("v, -v collide at rate %v", c)
	}
	if c := collisionRate(f, v, dbl); c != 1 {
		t.Fatalf("v, 2v collide at rate %v", c)
	}
}

func TestDWTADensification(t *testing.T) {
	const dim = 256
	f, err := NewDWTA(dim, 6, 32, 8, 11)
	if err != nil {
		t.Fatal(err)
	}
	// A very sparse vector leaves most bins empty; densified codes still
	// tell its neighbours from strangers.
	sparse := func(r *rng, nnz int) []float32 {
		v := make([]float32, dim)
		for j := 0; j < nnz; j++ {
			v[r.IntN(dim)] = float32(1 + r.Float64())
		}
		return v
	}
	r := newRNG(9, 9, 9)
	var near, far float64
	for it := 0; it < 40; it++ {
		v := sparse(&r, 12)
		w := slices.Clone(v)
		// Change one of the non-zeros' values slightly: rankings stay.
		for i := range w {
			if w[i] != 0 {
				w[i] *= 1.01
				break
			}
		}
		near += collisionRate(f, v, w)
		far += collisionRate(f, v, sparse(&r, 12))
	}
	if near/40 < 0.9 || far/40 > 0.1 {
		t.Fatalf("sparse vectors: near %.3f far %.3f", near/40, far/40)
	}
	// The zero vector hashes (to code 0: every bin empty, every probe too).
	out := make([]uint32, 32)
	f.Hash(make([]float32, dim), out)
	for _, c := range out {
		if c != 0 {
			t.Fatalf("zero vector codes %v", out)
		}
	}
	// The stream is made of permutations: every coordinate lies in
	// floor or ceil of NumHashes*8/dim bins.
	count := make([]int, dim)
	for _, c := range f.stream {
		count[c]++
	}
	lo := f.NumHashes() * 8 / dim
	for c, n := range count {
		if n != lo && n != lo+1 {
			t.Fatalf("coordinate %d in %d bins, want %d or %d", c, n, lo, lo+1)
		}
	}
}

func TestFamilyBadShapes(t *testing.T) {
	if _, err := NewSimHash(0, 0, 0, 0, 1); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("simhash: %v", err)
	}
	if _, err := NewDWTA(8, 4, 4, 6, 1); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("dwta bin 6: %v", err)
	}
	if _, err := NewDWTA(8, 25, 4, 8, 1); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("dwta K 25: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on a short vector")
		}
	}()
	f, _ := NewDWTA(8, 4, 4, 8, 1)
	f.Hash(make([]float32, 7), make([]uint32, 4))
}

// TestSimHashBatch: HashBatch (GEMM over dense projections, or the gather
// when the matrix would be too large) gives the codes Hash (the gather)
// gives; they could differ only where a projection rounds to 0.
func TestSimHashBatch(t *testing.T) {
	for _, c := range []struct{ dim, n int }{{64, 300}, {300000, 4}} { // 300000*60 > 2^24: no dense matrix
		dim, n := c.dim, c.n // n = 300 is more than one GEMM chunk
		f, err := NewSimHash(dim, 6, 10, 1.0/3, 4)
		if err != nil {
			t.Fatal(err)
		}
		if (f.proj != nil) != (dim == 64) {
			t.Fatalf("dim %d: dense projections %v", dim, f.proj != nil)
		}
		r := newRNG(1, 2, 3)
		x := randVec(&r, n*dim)
		batch := make([]uint32, n*10)
		f.HashBatch(x, n, batch)
		one := make([]uint32, 10)
		mismatch := 0
		for i := 0; i < n; i++ {
			f.Hash(x[i*dim:(i+1)*dim], one)
			for j := range one {
				if one[j] != batch[i*10+j] {
					mismatch++
				}
			}
		}
		if mismatch > 0 {
			t.Fatalf("dim %d: %d of %d codes differ between HashBatch and Hash", dim, mismatch, n*10)
		}
		// A row's codes do not depend on the batch.
		single := make([]uint32, 10)
		f.HashBatch(x[(n-1)*dim:n*dim], 1, single)
		if !slices.Equal(single, batch[(n-1)*10:n*10]) {
			t.Fatalf("dim %d: last row alone %v, in the batch %v", dim, single, batch[(n-1)*10:n*10])
		}
	}
}

// nonNegative is the bit SimHash stores for a projection: 1 exactly when
// v >= 0, as the branch it replaced.
func TestNonNegative(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	for _, tc := range []struct {
		v    float32
		want uint32
	}{
		{0, 1}, {negZero, 1}, {1e-30, 1}, {3, 1}, {float32(math.Inf(1)), 1},
		{-1e-30, 0}, {-3, 0}, {float32(math.Inf(-1)), 0}, {float32(math.NaN()), 0},
	} {
		if got := nonNegative(tc.v); got != tc.want {
			t.Errorf("nonNegative(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}
