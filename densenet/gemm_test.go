package densenet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"testing"
)

// refGemm is the reference loop of Gemm, summed in float64. It also
// returns, per element, |alpha|·Σ|a||b| + |beta·c|, the scale of the
// rounding error to expect from a float32 evaluation.
func refGemm(tA, tB Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, scale []float64) {
	// opA is m x k and opBT is n x k, both dense, so that the inner loop
	// runs over contiguous memory.
	opA := make([]float64, m*k)
	opBT := make([]float64, n*k)
	for p := 0; p < k; p++ {
		for i := 0; i < m; i++ {
			if tA == Trans {
				opA[i*k+p] = float64(a[p*lda+i])
			} else {
				opA[i*k+p] = float64(a[i*lda+p])
			}
		}
		for j := 0; j < n; j++ {
			if tB == Trans {
				opBT[j*k+p] = float64(b[j*ldb+p])
			} else {
				opBT[j*k+p] = float64(b[p*ldb+j])
			}
		}
	}
	want = make([]float64, len(c))
	scale = make([]float64, len(c))
	for i := range c {
		want[i] = float64(c[i]) // elements between rows stay as they are
	}
	for i := 0; i < m; i++ {
		ai := opA[i*k : i*k+k]
		for j := 0; j < n; j++ {
			bj := opBT[j*k : j*k+k]
			var s, abs float64
			for p, x := range ai {
				s += x * bj[p]
				abs += math.Abs(x * bj[p])
			}
			w := float64(alpha) * s
			sc := math.Abs(float64(alpha)) * abs
			if beta != 0 {
				old := float64(c[i*ldc+j])
				w += float64(beta) * old
				sc += math.Abs(float64(beta) * old)
			}
			want[i*ldc+j] = w
			scale[i*ldc+j] = sc
		}
	}
	return want, scale
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

func TestGemmAgainstReference(t *testing.T) {
	for _, kn := range gemmKernels {
		t.Run(kn.name, func(t *testing.T) { testGemmKernel(t, kn) })
	}
}

// testGemmKernel checks gemmWith(kn, ...) against refGemm on shapes chosen
// around kn's tile and block sizes.
func testGemmKernel(t *testing.T, kn *gemmKernel) {
	mr, nr, mc, nc, kc := kn.mr, kn.nr, kn.mc, kn.nc, kn.kc
	type shape struct{ m, n, k int }
	shapes := []shape{
		{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {4, 2, 1}, {1, 7, 3}, {9, 1, 5},
		{5, 3, 0}, {0, 3, 4}, {3, 0, 4}, {2, 2, 4}, {5, 3, 13},
		{mr + 1, nr + 1, 4*1 + 3},  // edge tiles and the unroll remainder
		{mr, nr, 8 + 3},            // exactly one full tile
		{2*mr - 1, 2*nr - 1, 1},    // one full tile, edges on both sides
		{3 * mr, 3 * nr, 2},        // full tiles only
		{mc + 3, 7, 5},             // two row blocks of A
		{6, nc + 3, 5},             // two column blocks of B
		{5, 6, kc + 9},             // two inner panels
		{mc + 3, nc + 3, kc + 3},   // every block boundary at once
		{70, 80, 100},              // parallel, split by rows
		{8, 300, 300},              // parallel, split by columns
		{1, 80, 256}, {256, 1, 80}, // the model's last layer
		{mc + 2*mr + 1, 40, kc + 5},        // A in place (gemmKernel.direct): row blocks, panels, edges
		{3 * mr, directMaxTiles*nr + 1, 3}, // one column past A in place
	}
	type coef struct{ alpha, beta float32 }
	coefs := []coef{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0.5}, {2, -1}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range shapes {
		for _, tA := range []Transpose{NoTrans, Trans} {
			for _, tB := range []Transpose{NoTrans, Trans} {
				for ci, cf := range coefs {
					for _, threads := range []int{1, 2, 3} {
						// Large shapes get fewer combinations to keep -race fast.
						work := sh.m * sh.n * sh.k
						if work > 1<<16 && (ci > 2 || threads != 1+ci) || work > 1<<22 && ci != 2 {
							continue
						}
						name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/alpha=%v/beta=%v/threads=%d",
							sh.m, sh.n, sh.k, tA, tB, cf.alpha, cf.beta, threads)
						t.Run(name, func(t *testing.T) {
							runGemmCase(t, rng, kn, threads, tA, tB, sh.m, sh.n, sh.k, cf.alpha, cf.beta)
						})
					}
				}
			}
		}
	}
}

// runGemmCase runs gemm on random operands with padded leading dimensions
// and compares with refGemm.
func runGemmCase(t *testing.T, rng *rand.Rand, kn *gemmKernel, threads int, tA, tB Transpose, m, n, k int, alpha, beta float32) {
	t.Helper()
	ar, ac := m, k
	if tA == Trans {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB == Trans {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+rng.IntN(3), bc+rng.IntN(3), n+rng.IntN(3)
	lda, ldb, ldc = max(lda, 1), max(ldb, 1), max(ldc, 1)
	a := randSlice(rng, max(0, (ar-1)*lda+ac))
	b := randSlice(rng, max(0, (br-1)*ldb+bc))
	c := randSlice(rng, max(0, (m-1)*ldc+n))
	if beta == 0 {
		for i := range c {
			c[i] = float32(math.NaN()) // must not be read
		}
	}
	a0, b0 := slices.Clone(a), slices.Clone(b)
	want, scale := refGemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

	gemmWith(kn, threads, nil, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

	if !slices.Equal(a, a0) || !slices.Equal(b, b0) {
		t.Fatal("gemm modified an input")
	}
	const eps = 1.0 / (1 << 23)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			idx := i*ldc + j
			tol := 2*float64(k+2)*eps*scale[idx] + 1e-30
			if got := float64(c[idx]); !(math.Abs(got-want[idx]) <= tol) {
				t.Fatalf("C[%d,%d] = %v, want %v (tol %g)", i, j, got, want[idx], tol)
			}
		}
	}
	// Elements between rows (padding of ldc) are not touched.
	for i := 0; i+1 < m; i++ {
		for j := n; j < ldc; j++ {
			idx := i*ldc + j
			if float64(c[idx]) != want[idx] && !(math.IsNaN(float64(c[idx])) && math.IsNaN(want[idx])) {
				t.Fatalf("padding C[%d] changed to %v", idx, c[idx])
			}
		}
	}
}

// TestGemmThreadsBitwiseEqual checks that results do not depend on the
// number of goroutines, on parts of columns and on parts of rows (whose
// op(B) is packed once for all of them: several panels of depth, several
// blocks of columns, op(B) transposed or not).
func TestGemmThreadsBitwiseEqual(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{150, 210, 300}, {600, 530, 300}, {420, 64, 700}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b := randSlice(rng, m*k), randSlice(rng, k*n)
		c0 := randSlice(rng, m*n)
		for _, kn := range gemmKernels {
			for _, tB := range []Transpose{NoTrans, Trans} {
				ldb := n
				if tB == Trans {
					ldb = k
				}
				for _, beta := range []float32{0, 0.5} {
					c1, c2 := slices.Clone(c0), slices.Clone(c0)
					gemmWith(kn, 1, nil, NoTrans, tB, m, n, k, 1.5, a, k, b, ldb, beta, c1, n)
					gemmWith(kn, 2, nil, NoTrans, tB, m, n, k, 1.5, a, k, b, ldb, beta, c2, n)
					if !slices.Equal(c1, c2) {
						t.Fatalf("%s %v tB=%v beta=%v: results depend on the number of goroutines", kn.name, sh, tB, beta)
					}
				}
			}
		}
	}
}

// TestPackBRangeSplits checks that op(B) packed in ranges of micro-panels
// (as a parallel Gemm's team packs it) is op(B) packed whole, float for
// float, whatever the cut: several blocks of columns, several panels, a
// partial last micro-panel, op(B) transposed or not.
func TestPackBRangeSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, kn := range gemmKernels {
		for _, sh := range [][2]int{{600, 530}, {200, 414}, {80, 200}, {7, 3}} {
			n, k := sh[0], sh[1]
			for _, tB := range []Transpose{NoTrans, Trans} {
				ldb := n
				if tB == Trans {
					ldb = k
				}
				b := randSlice(rng, k*n)
				want := make([]float32, kn.packedBSize(n, k))
				kn.packAllB(want, tB, b, ldb, n, k)
				units := kn.microPanelsB(n, k)
				for _, cuts := range [][]int{{units}, {1, units}, {units / 3, units / 2, units}, {0, units - 1, units}} {
					got := make([]float32, len(want))
					for i := range got {
						got[i] = float32(math.NaN())
					}
					lo := 0
					for _, hi := range cuts {
						kn.packBRange(got, tB, b, ldb, n, k, lo, hi)
						lo = hi
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%s n=%d k=%d tB=%v cuts %v: ranges differ from the whole", kn.name, n, k, tB, cuts)
					}
				}
			}
		}
	}
}

// TestGemmConcurrentCalls runs parallel products from several goroutines
// at once, so that the team (team.go) is taken, refused (the others run
// alone) and handed from call to call, with helpers joining calls late:
// every result must equal the same product on one goroutine, bit for bit,
// and a call must never see another's parts.
func TestGemmConcurrentCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	type product struct {
		m, n, k int
		a, b    []float32
		want    []float32
	}
	var ps []product
	for _, sh := range [][3]int{{256, 200, 414}, {256, 80, 200}, {97, 300, 61}, {600, 64, 130}} {
		p := product{m: sh[0], n: sh[1], k: sh[2]}
		p.a, p.b, p.want = randSlice(rng, p.m*p.k), randSlice(rng, p.k*p.n), make([]float32, p.m*p.n)
		gemmWith(defaultKernel, 1, nil, NoTrans, NoTrans, p.m, p.n, p.k, 1, p.a, p.k, p.b, p.n, 0, p.want, p.n)
		ps = append(ps, p)
	}
	calls := 60
	if testing.Short() || raceEnabled {
		calls = 15
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(ps))
	for g := range len(ps) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				p := ps[(g+i)%len(ps)]
				c := make([]float32, p.m*p.n)
				gemmWith(defaultKernel, 2, nil, NoTrans, NoTrans, p.m, p.n, p.k, 1, p.a, p.k, p.b, p.n, 0, c, p.n)
				if !slices.Equal(c, p.want) {
					errs <- fmt.Sprintf("goroutine %d, call %d (%dx%dx%d): result differs from one goroutine's", g, i, p.m, p.k, p.n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestGemmKernelsAgree checks that every kernel's result is within
// rounding of the generic one's on a product that uses full and edge
// tiles, several panels and both splits.
func TestGemmKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, kn := range gemmKernels {
		if kn == genericKernel {
			continue
		}
		for _, sh := range [][3]int{{256, 200, 414}, {200, 414, 256}, {97, 61, 530}} {
			m, n, k := sh[0], sh[1], sh[2]
			a, b := randSlice(rng, m*k), randSlice(rng, k*n)
			want, got := make([]float32, m*n), make([]float32, m*n)
			gemmWith(genericKernel, 1, nil, NoTrans, NoTrans, m, n, k, 1, a, k, b, n, 0, want, n)
			gemmWith(kn, 1, nil, NoTrans, NoTrans, m, n, k, 1, a, k, b, n, 0, got, n)
			for i := range want {
				if d := math.Abs(float64(want[i] - got[i])); d > 1e-3*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("%s %v: C[%d] = %v, generic %v", kn.name, sh, i, got[i], want[i])
				}
			}
		}
	}
}

func TestGemmPanics(t *testing.T) {
	s := make([]float32, 12)
	tests := []struct {
		name string
		f    func()
	}{
		{"negative", func() { Gemm(NoTrans, NoTrans, -1, 2, 2, 1, s, 2, s, 2, 0, s, 2) }},
		{"short lda", func() { Gemm(NoTrans, NoTrans, 2, 2, 3, 1, s, 2, s, 2, 0, s, 2) }},
		{"short ldc", func() { Gemm(NoTrans, NoTrans, 2, 3, 2, 1, s, 2, s, 3, 0, s, 2) }},
		{"short A", func() { Gemm(NoTrans, NoTrans, 4, 2, 4, 1, s, 4, s, 2, 0, s, 2) }},
		{"short B trans", func() { Gemm(NoTrans, Trans, 2, 4, 4, 1, s, 4, s, 4, 0, s, 4) }},
		{"short C", func() { Gemm(NoTrans, NoTrans, 3, 4, 1, 1, s, 1, s, 4, 0, s[:11], 4) }},
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

func TestGemmNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	m, n, k := 64, 64, 64
	a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	for _, kn := range gemmKernels {
		allocs := testing.AllocsPerRun(20, func() {
			gemmWith(kn, 1, nil, NoTrans, Trans, m, n, k, 1, a, k, b, k, 0, c, n)
		})
		if allocs > 0 {
			t.Fatalf("%s: single-goroutine Gemm allocates %v times per call", kn.name, allocs)
		}
	}
	// A parallel product (2 goroutines: the caller and a helper, which
	// stays while calls keep coming) allocates nothing either.
	m, n, k = 256, 256, 128
	a, b, c = randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	for _, kn := range gemmKernels {
		allocs := testing.AllocsPerRun(50, func() {
			gemmWith(kn, 2, nil, NoTrans, Trans, m, n, k, 1, a, k, b, k, 0, c, n)
		})
		if allocs > 0 {
			t.Fatalf("%s: parallel Gemm allocates %v times per call", kn.name, allocs)
		}
	}
}

// TestKernelNameFollowsGODEBUG runs this test binary again with a CPU
// feature taken away through GODEBUG (golang.org/x/sys/cpu's options) and
// checks that the process then chooses the kernel below it: the switch
// the package doc gives for testing and benchmarking the AVX2 path on an
// AVX-512 machine.
func TestKernelNameFollowsGODEBUG(t *testing.T) {
	if name := os.Getenv("XPS_PRINT_KERNEL"); name != "" {
		fmt.Fprintf(os.Stderr, "kernel=%s\n", KernelName())
		return
	}
	want := map[string]string{"avx512f12x32": "cpu.avx512f=off", "avx2fma6x16": "cpu.avx2=off"}
	off, ok := want[KernelName()]
	if !ok {
		t.Skipf("this process runs %s: no feature to take away", KernelName())
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKernelNameFollowsGODEBUG$")
	cmd.Env = append(os.Environ(), "XPS_PRINT_KERNEL=1", "GODEBUG="+off)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := regexp.MustCompile(`kernel=(\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no kernel line in %s", out)
	}
	if got := string(m[1]); got == KernelName() {
		t.Errorf("with GODEBUG=%s the process still runs %s", off, got)
	} else {
		t.Logf("%s: %s, with GODEBUG=%s: %s", "default", KernelName(), off, got)
	}
}
