package ams

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var (
	nan32  = float32(math.NaN())
	pinf32 = float32(math.Inf(1))
	ninf32 = float32(math.Inf(-1))
)

// TestAllFiniteAgainstReference checks AllFinite's bit trick against
// math.IsNaN and math.IsInf, on the edge values and random bit patterns
// (every exponent, NaNs with any payload and sign).
func TestAllFiniteAgainstReference(t *testing.T) {
	ref := func(x []float32) bool {
		for _, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return false
			}
		}
		return true
	}
	edges := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, nan32, pinf32, ninf32,
		math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000), math.Float32frombits(0x7f7fffff)}
	for _, v := range edges {
		if got, want := AllFinite([]float32{1, v, 2}), ref([]float32{v}); got != want {
			t.Errorf("AllFinite(%v, bits %#08x) = %v, want %v", v, math.Float32bits(v), got, want)
		}
	}
	if !AllFinite(nil) {
		t.Error("AllFinite(nil) = false")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		x := make([]float32, 1+rng.IntN(20))
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		if rng.IntN(2) == 0 {
			x[rng.IntN(len(x))] = math.Float32frombits(rng.Uint32())
		}
		if got, want := AllFinite(x), ref(x); got != want {
			t.Fatalf("AllFinite(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestClipNonFinite(t *testing.T) {
	src := []float32{1, nan32, pinf32, -2, ninf32, math.MaxFloat32}
	dst := make([]float32, len(src))
	if n := ClipNonFinite(dst, src, 3); n != 3 {
		t.Fatalf("ClipNonFinite changed %d values, want 3", n)
	}
	if want := []float32{1, 0, 3, -2, -3, math.MaxFloat32}; !slices.Equal(dst, want) {
		t.Fatalf("ClipNonFinite = %v, want %v", dst, want)
	}
	if !math.IsNaN(float64(src[1])) {
		t.Fatal("ClipNonFinite modified src")
	}
}

// nonFiniteGrads returns the gradients (dim d) of a push of ids 1..6,
// then 1 again, 50 twice (a row to create) and 4 again: row 1 (id 2)
// holds a NaN and row 3 (id 4) a +Inf, among finite values; the others,
// 4's second one included, are finite.
func nonFiniteGrads(d int) (ids []uint64, grads []float32) {
	ids = []uint64{1, 2, 3, 4, 5, 6, 1, 50, 50, 4}
	grads = make([]float32, len(ids)*d)
	for i := range grads {
		grads[i] = float32(i%7)*0.1 - 0.3
	}
	grads[1*d+d/2] = nan32
	grads[3*d] = pinf32
	return ids, grads
}

// TestPushNonFinite: a push with a NaN and an Inf gradient among good
// rows (and duplicate ids, and a row to create), for every optimizer, at
// a dim the vector kernels take (16) and one they do not (5). Refuse: the
// good rows are applied exactly as a push of them alone, the bad rows
// keep their values, optimizer state and statistics and are not marked
// dirty (id 2; id 4's later good gradient is applied), and
// NonFiniteRefused says 2; a bad gradient of a missing row creates
// nothing. Clip: every row is applied, the bad ones as a push of their
// clipped gradients, and the rows are finite.
func TestPushNonFinite(t *testing.T) {
	for _, dim := range []int{5, 16} {
		for _, opt := range []string{OptSGD, OptAdagrad, OptAdam, OptFTRL, OptMomentum} {
			for _, mode := range []string{NonFiniteRefuse, NonFiniteClip} {
				spec := TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: opt, L1: 0.01},
					Init: InitSpec{Kind: InitUniform, Scale: 0.1, Seed: 9}, NonFinite: mode, NonFiniteBound: 2}
				t.Run(fmt.Sprintf("dim=%d/%s/%s", dim, opt, mode), func(t *testing.T) { pushNonFinite(t, spec) })
			}
		}
	}
}

func pushNonFinite(t *testing.T, spec TableSpec) {
	d := spec.Dim
	tb, ref := newTestTable(t, spec), newRefTable(spec)
	ids, grads := nonFiniteGrads(d)
	// Rows 1..6 exist, with optimizer state of a first push.
	warmIDs := ids[:6]
	warm := make([]float32, len(warmIDs)*d)
	for i := range warm {
		warm[i] = 0.05 * float32(i%5+1)
	}
	tb.Push(warmIDs, warm, 1)
	for k, id := range warmIDs {
		ref.push(id, warm[k*d:(k+1)*d], 1)
	}
	tb.ClearDirty()
	sent := slices.Clone(grads)
	tb.Push(ids, grads, 2)
	if !slices.EqualFunc(grads, sent, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
		t.Fatal("Push modified its gradients")
	}
	clip := spec.NonFinite == NonFiniteClip
	for k, id := range ids {
		g := slices.Clone(grads[k*d : (k+1)*d])
		if !AllFinite(g) {
			if !clip {
				continue // refused: the reference is not pushed
			}
			ClipNonFinite(g, g, spec.NonFiniteBound)
		}
		ref.push(id, g, 2)
	}
	checkAgainstRef(t, tb, ref)
	c := tb.Counters()
	wantDirty := 6 // 1, 3, 4 (its second gradient), 5, 6, 50
	if clip {
		wantDirty = 7
		if c.NonFiniteClipped != 2 || c.NonFiniteRefused != 0 {
			t.Fatalf("counters %+v, want 2 clipped", c)
		}
		tb.Range(func(id uint64, values, state []float32, _, _ uint32) bool {
			if !AllFinite(values) || !AllFinite(state) {
				t.Fatalf("row %d after a clipped push: %v, state %v", id, values, state)
			}
			return true
		})
	} else if c.NonFiniteRefused != 2 || c.NonFiniteClipped != 0 {
		t.Fatalf("counters %+v, want 2 refused", c)
	}
	if n := tb.DirtyLen(); n != wantDirty {
		t.Fatalf("%d rows marked dirty by the push, want %d", n, wantDirty)
	}
	// A bad gradient of a missing row: refused, nothing created (clip:
	// created and applied).
	rows := tb.Len()
	g := make([]float32, d)
	g[0] = ninf32
	created := tb.Push([]uint64{99}, g, 3)
	if clip != (created == 1) || clip != (tb.Len() == rows+1) {
		t.Fatalf("push of a -Inf gradient to a missing row created %d (Len %d -> %d), clip %v", created, rows, tb.Len(), clip)
	}
}

// TestDenseNonFinite: a dense gradient holding a NaN changes nothing
// (values, optimizer state, the schedule's step) and is counted; the next
// good one is applied as if the bad one never came. Initial values
// holding an Inf are refused with ErrNonFinite.
func TestDenseNonFinite(t *testing.T) {
	spec := DenseSpec{Name: "mlp", Size: 20, Optimizer: OptimizerSpec{Name: OptAdam, LR: 0.1},
		Schedule: LRSchedule{WarmupSteps: 10}}
	v, err := NewDenseVar(spec, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := NewDenseVar(spec, 0, 20)
	init := make([]float32, 20)
	for i := range init {
		init[i] = float32(i) * 0.1
	}
	bad := slices.Clone(init)
	bad[7] = pinf32
	if err := v.Set(bad); !errors.Is(err, ErrNonFinite) || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "value 7") {
		t.Fatalf("Set with an Inf = %v, want ErrNonFinite naming value 7", err)
	}
	if v.Initialized() {
		t.Fatal("a refused Set initialised the vector")
	}
	for _, x := range []*DenseVar{v, ref} {
		if err := x.Set(init); err != nil {
			t.Fatal(err)
		}
	}
	good := make([]float32, 20)
	for i := range good {
		good[i] = 0.01 * float32(i-10)
	}
	nan := slices.Clone(good)
	nan[3] = nan32
	for _, g := range [][]float32{good, nan, good} {
		if err := v.Apply(g); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range [][]float32{good, good} {
		if err := ref.Apply(g); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(v.Values(), ref.Values()) || !slices.Equal(v.State(), ref.State()) {
		t.Fatalf("after good, NaN, good: %v state %v; want (good, good) %v state %v", v.Values(), v.State(), ref.Values(), ref.State())
	}
	if v.Refused() != 1 {
		t.Fatalf("Refused = %d, want 1", v.Refused())
	}
}

func TestNonFiniteSpec(t *testing.T) {
	s := TableSpec{Name: "emb", Dim: 4}
	s.EnsureDefaults()
	if s.NonFinite != NonFiniteRefuse || s.NonFiniteBound != 1 {
		t.Fatalf("defaults: nonfinite %q bound %v, want refuse and 1", s.NonFinite, s.NonFiniteBound)
	}
	s.NonFinite, s.NonFiniteBound = "drop", 1e20
	err := s.Validate()
	for _, want := range []string{`nonfinite "drop" is not one of refuse, clip`, "nonfinite_bound 1e+20"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
	if !errors.Is(err, ErrBadSpec) {
		t.Errorf("Validate = %v, want ErrBadSpec", err)
	}
	s.NonFinite, s.NonFiniteBound = NonFiniteClip, float32(math.NaN())
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "nonfinite_bound NaN") {
		t.Errorf("Validate of a NaN bound = %v", err)
	}
}

// TestCheckFinite: the error names the first bad id, its column and the
// number of bad rows.
func TestCheckFinite(t *testing.T) {
	vals := []float32{1, 2, 3, nan32, 5, 6, pinf32, 8}
	err := CheckFinite("load", []uint64{10, 11, 12, 13}, vals, 2)
	if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "id 11 has NaN in column 1 (2 of 4 rows") {
		t.Fatalf("CheckFinite = %v", err)
	}
	if err := CheckFinite("load", []uint64{10}, []float32{1, 2}, 2); err != nil {
		t.Fatal(err)
	}
}

// TestNonFiniteRowsAgainstReference checks nonFiniteRows (the AVX2 kernel
// where there is one) against the reference loop: every dim from 1 to
// 40, groups at any offset, with and without positions, NaNs and Infs of
// any sign and payload anywhere, subnormals, and a value just past each
// row that must not count.
func TestNonFiniteRowsAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	specials := []float32{nan32, pinf32, ninf32, math.Float32frombits(0xff800001), math.Float32frombits(0x7fffffff)}
	for d := 1; d <= 40; d++ {
		for trial := range 40 {
			rows := 1 + rng.IntN(40)
			grads := make([]float32, rows*d)
			for i := range grads {
				switch rng.IntN(6) {
				case 0:
					grads[i] = math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal or zero
				case 1:
					grads[i] = math.MaxFloat32
				default:
					grads[i] = float32(rng.NormFloat64())
				}
			}
			for range rng.IntN(4) {
				grads[rng.IntN(len(grads))] = specials[rng.IntN(len(specials))]
			}
			var pos []int32
			lo, n := 0, 0
			if trial%2 == 0 {
				lo = rng.IntN(rows)
				n = min(rows-lo, 1+rng.IntN(32))
			} else {
				pos = make([]int32, 1+rng.IntN(40))
				for i := range pos {
					pos[i] = int32(rng.IntN(rows))
				}
				lo = rng.IntN(len(pos))
				n = min(len(pos)-lo, 1+rng.IntN(32))
			}
			if got, want := nonFiniteRows(grads, pos, lo, n, d), nonFiniteRowsGo(grads, pos, lo, n, d); got != want {
				t.Fatalf("dim %d, %d rows, pos %v, lo %d, n %d: mask %b, want %b", d, rows, pos, lo, n, got, want)
			}
		}
	}
	// A long vector (a dense gradient) through the same kernel.
	for _, n := range []int{1, 7, 8, 9, 100, 1001} {
		x := make([]float32, n)
		if !allFiniteLong(x) {
			t.Fatalf("allFiniteLong of %d zeros = false", n)
		}
		for i := range x {
			x[i] = nan32
			if allFiniteLong(x) {
				t.Fatalf("allFiniteLong missed a NaN at %d of %d", i, n)
			}
			x[i] = 0
		}
	}
	// Only the row's own values count, not the next row's.
	grads := []float32{1, 2, 3, nan32}
	if m := nonFiniteRows(grads, nil, 0, 1, 3); m != 0 {
		t.Fatalf("a NaN past the row counted: mask %b", m)
	}
	// A position outside grads panics, as rowAt does.
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a position outside grads")
		}
	}()
	nonFiniteRows(make([]float32, 16), []int32{0, 2}, 0, 2, 8)
}
