package densenet

import (
	"math/bits"
	"runtime"
	"sync"
)

// Transpose says whether a Gemm operand is used as stored (NoTrans) or
// transposed (Trans).
type Transpose bool

const (
	// NoTrans uses the operand as stored.
	NoTrans Transpose = false
	// Trans uses the transpose of the stored operand.
	Trans Transpose = true
)

// The packed GEMM is the GotoBLAS loop nest (see gemmSerial) around a
// micro-kernel that computes an mr x nr tile of C in registers. The tile
// shape and the block sizes belong to the micro-kernel; a gemmKernel holds
// them. defaultKernel is the fastest one this CPU runs, chosen once at
// package initialisation from the CPU's features (see gemm_amd64.go and
// gemm_generic.go); it never changes afterwards.
const (
	// parallelMinWork is the smallest m*n*k for which Gemm starts goroutines.
	// Below it (about 0.1 ms of work) the start-up cost is not repaid.
	parallelMinWork = 1 << 19
	// partsPerThread is how many parts of C a parallel Gemm makes per
	// goroutine, and minTilesPerPart the fewest micro-tile rows (or
	// columns) of C in a part.
	partsPerThread  = 3
	minTilesPerPart = 8
)

// gemmKernel is a micro-kernel and the blocking it is tuned for.
type gemmKernel struct {
	name string
	// mr x nr is the tile of C one call of tile computes.
	mr, nr int
	// kc is the largest depth of one packed panel, mc the rows of C per
	// packed block of A (a multiple of mr) and nc the columns of C per
	// packed block of B (a multiple of nr).
	mc, kc, nc int
	// tile sets the mr x nr block of C at c (row stride ldc) to
	//
	//	alpha * Aₚ·Bₚ + beta * C
	//
	// where pa holds depth steps of mr values of a packed A micro-panel
	// and pb depth steps of nr values of a packed B micro-panel (depth >=
	// 1). With beta = 0 it does not read C. It panics if a slice is too
	// short.
	tile func(depth int, pa, pb, c []float32, ldc int, alpha, beta float32)
	// direct, if not nil, is tile with A read in place: mr rows of
	// op(A) = A (not transposed) at a, row stride lda, depth values each.
	// gemmSerial uses it instead of packing A when C has at most
	// directMaxTiles column tiles: each A row is then read that many times
	// at most, which costs less than copying it into a packed panel.
	direct func(depth int, a []float32, lda int, pb, c []float32, ldc int, alpha, beta float32)
}

// genericKernel is the pure-Go micro-kernel, used where no SIMD kernel is
// available (other architectures, the purego build tag, old CPUs) and by
// the tests on every machine.
var genericKernel = &gemmKernel{
	name: "generic4x2",
	mr:   4, nr: 2,
	mc: 128, kc: 256, nc: 512,
	tile: tile4x2,
}

// Gemm computes
//
//	C = alpha * op(A) * op(B) + beta * C
//
// where op(X) is X or Xᵀ as tA and tB say, op(A) is m x k, op(B) is k x n
// and C is m x n. All matrices are row-major with leading dimensions (row
// strides) lda, ldb and ldc: A is stored m x k (lda >= k) when tA is
// NoTrans and k x m (lda >= m) when tA is Trans; likewise B is stored k x n
// or n x k. The argument order is BLAS Sgemm's (as in gonum's blas32).
//
// It is the following loop, done faster (packed panels, a register-blocked
// micro-kernel, and goroutines for large products):
//
//	for i := 0; i < m; i++ {
//		for j := 0; j < n; j++ {
//			var s float32
//			for p := 0; p < k; p++ {
//				s += opA(i, p) * opB(p, j)
//			}
//			c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
//		}
//	}
//
// except that when beta is 0, C is not read (NaNs in it do not propagate),
// and the order of the additions differs (results may differ from the loop
// in the last bits, but do not depend on the number of goroutines).
// beta = 1 accumulates into C, beta = 0 overwrites it.
//
// A and B are not modified. C must not overlap A or B. Gemm panics on
// negative sizes, short leading dimensions or slices too short for the
// shapes. Products of at least 2^19 multiply-adds (m*n*k) are split by
// rows or columns of C over up to runtime.GOMAXPROCS(0) goroutines: the
// caller's and helpers that the package starts when needed and that exit
// after 100 ms without work; smaller ones run on the calling goroutine.
// The packing scratch and the call's state come from pools, so in steady
// state (helpers running) Gemm allocates nothing.
func Gemm(tA, tB Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(runtime.GOMAXPROCS(0), nil, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// KernelName is the name of the micro-kernel Gemm uses in this process:
// avx512f12x32, avx2fma6x16 or generic4x2 (see the package doc's
// Performance section, and GODEBUG's cpu options there).
func KernelName() string { return defaultKernel.name }

// gemm is Gemm with at most threads goroutines (threads <= 0 means one).
// With scratch non-nil, the calling goroutine packs into *scratch, which
// gemm grows as needed (a Workspace keeps it; helpers take theirs from
// the pools); with scratch nil its buffer comes from the pools too.
func gemm(threads int, scratch *[]float32, tA, tB Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemmWith(defaultKernel, threads, scratch, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmWith is gemm with the micro-kernel kn (the tests run every kernel
// the machine has).
func gemmWith(kn *gemmKernel, threads int, scratch *[]float32, tA, tB Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(tA, tB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleMatrix(m, n, beta, c, ldc)
		return
	}

	// C is cut into parts along its longer side (in micro-tiles), a few
	// per goroutine, which the goroutines take in turn, so that one
	// goroutine delayed by other work on its core does not hold up the
	// call. Parts of rows share op(B), packed once before they start
	// when it is small enough (sharedBMax); otherwise every part packs
	// its own copy of the shared operand.
	mr, nr := kn.mr, kn.nr
	rowTiles := (m + mr - 1) / mr
	colTiles := (n + nr - 1) / nr
	splitRows := rowTiles*mr >= colTiles*nr
	tiles, tile, limit := colTiles, nr, n
	if splitRows {
		tiles, tile, limit = rowTiles, mr, m
	}
	t, parts := 1, 1
	if m*n*k >= parallelMinWork && threads > 1 {
		parts = max(1, min(threads*partsPerThread, tiles/minTilesPerPart))
		t = min(threads, parts)
		parts = parts / t * t // as many parts for each goroutine
	}
	per := (tiles + parts - 1) / parts * tile // rows or columns of C per part
	parts = (limit + per - 1) / per
	t = min(t, parts)

	pm, pn := m, min(n, per) // the largest part's shape
	if splitRows {
		pm, pn = min(m, per), n
	}
	need := kn.packSize(pm, pn, k)
	var buf []float32
	var pooled [2]*[]float32
	if scratch != nil {
		if len(*scratch) < need {
			*scratch = make([]float32, need)
		}
		buf = *scratch
	} else {
		pooled[0] = getScratch(need)
		buf = *pooled[0]
	}

	job := gemmJob{kn, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, splitRows, per, limit, nil, false}
	if size := kn.packedBSize(n, k); t > 1 && splitRows && size <= sharedBMax {
		pooled[1] = getScratch(size)
		job.pb = (*pooled[1])[:size]
		// The panels are packed by the team too, a share of the
		// micro-panels each, before the parts of rows start.
		units := kn.microPanelsB(n, k)
		pack := gemmJob{kn: kn, tB: tB, n: n, k: k, b: b, ldb: ldb, pb: job.pb, packing: true, limit: units}
		pack.per = (units + t*partsPerThread - 1) / (t * partsPerThread)
		pack.runParallel(buf, (units+pack.per-1)/pack.per, 0)
	}
	if t == 1 {
		for lo := 0; lo < limit; lo += per {
			job.run(lo, buf)
		}
	} else {
		job.runParallel(buf, parts, need)
	}
	for _, p := range pooled {
		if p != nil {
			putScratch(p)
		}
	}
}

// gemmJob is one Gemm call, split into parts of per rows (splitRows) or
// per columns of C, up to limit.
type gemmJob struct {
	kn        *gemmKernel
	tA, tB    Transpose
	m, n, k   int
	alpha     float32
	a         []float32
	lda       int
	b         []float32
	ldb       int
	beta      float32
	c         []float32
	ldc       int
	splitRows bool
	per       int
	limit     int
	// pb, when not nil, is op(B) packed whole (packAllB), which every
	// part of rows reads instead of packing its own.
	pb []float32
	// packing makes the job the packing of pb: its parts are ranges of
	// per micro-panels of op(B) (packBRange), up to limit.
	packing bool
}

// run computes the rows (or columns) [lo, lo+per) of C, packing into buf.
func (j *gemmJob) run(lo int, buf []float32) {
	hi := min(lo+j.per, j.limit)
	if j.packing {
		j.kn.packBRange(j.pb, j.tB, j.b, j.ldb, j.n, j.k, lo, hi)
		return
	}
	if j.splitRows {
		aoff := lo * j.lda // rows of op(A) are rows of A
		if j.tA == Trans {
			aoff = lo // rows of op(A) are columns of A
		}
		j.kn.gemmSerial(j.tA, j.tB, hi-lo, j.n, j.k, j.alpha, j.a[aoff:], j.lda, j.b, j.ldb, j.beta, j.c[lo*j.ldc:], j.ldc, buf, j.pb)
		return
	}
	boff := lo // columns of op(B) are columns of B
	if j.tB == Trans {
		boff = lo * j.ldb // columns of op(B) are rows of B
	}
	j.kn.gemmSerial(j.tA, j.tB, j.m, hi-lo, j.k, j.alpha, j.a, j.lda, j.b[boff:], j.ldb, j.beta, j.c[lo:], j.ldc, buf, nil)
}

// packSize returns the scratch floats gemmSerial needs for an m x n x k
// product: a packed block of op(A), one of op(B), and an mr x nr tile for
// macroKernel's edge tiles (kept in the scratch: a local array passed to
// the tile function value would escape to the heap).
func (kn *gemmKernel) packSize(m, n, k int) int {
	kb := kn.panelDepth(k)
	rows := min(kn.mc, (m+kn.mr-1)/kn.mr*kn.mr)
	cols := min(kn.nc, kn.padCols(n))
	return rows*kb + kb*cols + kn.mr*kn.nr
}

// sharedBMax is the most floats of op(B) that a parallel Gemm split by
// rows packs once for all its parts (16 MiB): above it, every part packs
// the panels it uses as it goes, which keeps them in cache.
const sharedBMax = 1 << 22

// packedBSize returns the floats all the panels of an op(B) of k x n take
// when packed in gemmSerial's order (packAllB).
func (kn *gemmKernel) packedBSize(n, k int) int {
	size := 0
	for jc := 0; jc < n; jc += kn.nc {
		size += kn.padCols(min(kn.nc, n-jc)) * k
	}
	return size
}

// padCols is n columns rounded up to whole micro-panels of nr, the
// width a packed panel of them takes.
func (kn *gemmKernel) padCols(n int) int { return (n + kn.nr - 1) / kn.nr * kn.nr }

// packAllB packs every panel of op(B) (k x n) into dst, in the order
// gemmSerial uses them: blocks of nc columns, each cut into panels of
// panelDepth(k) inner indices, each panel as packB lays it out.
func (kn *gemmKernel) packAllB(dst []float32, tB Transpose, b []float32, ldb, n, k int) {
	kn.packBRange(dst, tB, b, ldb, n, k, 0, kn.microPanelsB(n, k))
}

// microPanelsB returns the number of micro-panels (nr columns of one
// panel's depth) in op(B) packed whole: the units of packBRange.
func (kn *gemmKernel) microPanelsB(n, k int) int {
	panels := (k + kn.panelDepth(k) - 1) / kn.panelDepth(k)
	return panels * kn.padCols(n) / kn.nr
}

// packBRange packs the micro-panels [u0, u1) of op(B), counted in
// packAllB's order, into their places in dst: disjoint ranges write
// disjoint floats, so that goroutines may pack ranges of one dst at once.
func (kn *gemmKernel) packBRange(dst []float32, tB Transpose, b []float32, ldb, n, k, u0, u1 int) {
	kb, off, base := kn.panelDepth(k), 0, 0
	for jc := 0; jc < n && base < u1; jc += kn.nc {
		ncc := min(kn.nc, n-jc)
		w := kn.padCols(ncc)
		for pc := 0; pc < k && base < u1; pc += kb {
			kcc := min(kb, k-pc)
			if lo, hi := max(u0, base), min(u1, base+w/kn.nr); lo < hi {
				c0, c1 := (lo-base)*kn.nr, min((hi-base)*kn.nr, ncc)
				packB(dst[off+c0*kcc:off+w*kcc], kn.nr, tB, b, ldb, pc, kcc, jc+c0, c1-c0)
			}
			off += kcc * w
			base += w / kn.nr
		}
	}
}

// panelDepth returns the depth of gemmSerial's panels for inner dimension
// k: k split into equal parts of at most kc, so the last is not a sliver.
func (kn *gemmKernel) panelDepth(k int) int {
	panels := (k + kn.kc - 1) / kn.kc
	return (k + panels - 1) / panels
}

// scratchPools[i] holds packing buffers of exactly 1<<i floats.
var scratchPools [40]sync.Pool

// getScratch returns a buffer of at least n floats from the pools.
func getScratch(n int) *[]float32 {
	i := bits.Len(uint(n - 1)) // the smallest i with 1<<i >= n
	if p, ok := scratchPools[i].Get().(*[]float32); ok {
		return p
	}
	buf := make([]float32, 1<<i)
	return &buf
}

// putScratch returns a buffer from getScratch to its pool.
func putScratch(p *[]float32) {
	scratchPools[bits.Len(uint(len(*p)))-1].Put(p)
}

// checkGemm panics unless the sizes, leading dimensions and slice lengths
// are consistent.
func checkGemm(tA, tB Transpose, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic("densenet: negative matrix dimension")
	}
	ar, ac := m, k // stored shape of A
	if tA == Trans {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB == Trans {
		br, bc = n, k
	}
	checkMatrix("A", ar, ac, a, lda)
	checkMatrix("B", br, bc, b, ldb)
	checkMatrix("C", m, n, c, ldc)
}

// checkMatrix panics unless x can hold a rows x cols row-major matrix with
// row stride ld.
func checkMatrix(name string, rows, cols int, x []float32, ld int) {
	if ld < max(1, cols) {
		panic("densenet: bad leading dimension of " + name)
	}
	if rows > 0 && cols > 0 && len(x) < (rows-1)*ld+cols {
		panic("densenet: " + name + " too short")
	}
}

// scaleMatrix sets C = beta*C, writing zeros without reading C when beta is 0.
func scaleMatrix(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// gemmSerial is the single-goroutine blocked GEMM (the GotoBLAS loop
// nest): for each block of nc columns of C and each panel of kc of the
// inner dimension, op(B) is packed into pb; for each block of mc rows
// of C, op(A) is packed into pa and the macro-kernel updates the mc x nc
// block of C tile by tile. beta applies on the first panel only; later
// panels accumulate. pre, when not nil, holds every panel of op(B)
// packed already (packAllB), read in place of packing them into pb.
func (kn *gemmKernel) gemmSerial(tA, tB Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, buf, pre []float32) {
	kb := kn.panelDepth(k)
	rows := min(kn.mc, (m+kn.mr-1)/kn.mr*kn.mr)
	cols := min(kn.nc, kn.padCols(n))
	pa, pb := buf[:rows*kb], buf[rows*kb:rows*kb+kb*cols]
	t := buf[rows*kb+kb*cols:][:kn.mr*kn.nr]
	direct := kn.direct != nil && tA == NoTrans && n <= directMaxTiles*kn.nr
	off := 0 // of the next panel in pre
	for jc := 0; jc < n; jc += kn.nc {
		ncc := min(kn.nc, n-jc)
		for pc := 0; pc < k; pc += kb {
			kcc := min(kb, k-pc)
			panel := pb
			if pre != nil {
				w := kn.padCols(ncc) * kcc
				panel, off = pre[off:off+w], off+w
			} else {
				packB(pb, kn.nr, tB, b, ldb, pc, kcc, jc, ncc)
			}
			bt := beta
			if pc > 0 {
				bt = 1
			}
			for ic := 0; ic < m; ic += kn.mc {
				mcc := min(kn.mc, m-ic)
				if direct {
					kn.macroKernelDirect(mcc, ncc, kcc, a[ic*lda+pc:], lda, pa, panel, t, c[ic*ldc+jc:], ldc, alpha, bt)
					continue
				}
				packA(pa, kn.mr, tA, a, lda, ic, mcc, pc, kcc)
				kn.macroKernel(mcc, ncc, kcc, pa, panel, t, c[ic*ldc+jc:], ldc, alpha, bt)
			}
		}
	}
}

// packA copies the rows [i0, i0+rows) and inner indices [p0, p0+depth) of
// op(A) into dst as consecutive micro-panels of mr rows; within a panel,
// the mr values of one inner index are adjacent. Rows past the end are
// zero.
func packA(dst []float32, mr int, tA Transpose, a []float32, lda, i0, rows, p0, depth int) {
	// op(A)(i, p) is a[p*lda+i] when transposed, a[i*lda+p] otherwise.
	packPanels(dst, mr, tA == Trans, a, lda, i0, rows, p0, depth)
}

// packPanels packs the outer indices [x0, x0+n) and inner indices
// [p0, p0+depth) of a matrix X into micro-panels of w outer indices, the w
// values of one inner index adjacent, outer indices past the end zero. With
// byInner, X(x, p) = src[p*ld+x] (the w values of one p are contiguous);
// otherwise X(x, p) = src[x*ld+p] (each x is a contiguous row). It serves
// both packA (outer = rows of op(A)) and packB (outer = columns of op(B)).
func packPanels(dst []float32, w int, byInner bool, src []float32, ld, x0, n, p0, depth int) {
	for c0 := 0; c0 < n; c0 += w {
		panel := dst[c0*depth : (c0+w)*depth]
		cc := min(w, n-c0)
		if cc < w {
			clear(panel)
		}
		if byInner {
			for p := 0; p < depth; p++ {
				copy(panel[p*w:p*w+cc], src[(p0+p)*ld+x0+c0:])
			}
			continue
		}
		interleave(panel, w, src, (x0+c0)*ld+p0, ld, cc, depth)
	}
}

// interleave sets w[p*width+r] = src[base+r*ld+p] for r < rows and p <
// depth: it transposes rows of src into the columns of a packed panel.
// Rows are taken four (then two, then one) at a time, so that the reads
// stream from a few rows and the writes of one p land together.
func interleave(w []float32, width int, src []float32, base, ld, rows, depth int) {
	r := 0
	for ; r+4 <= rows; r += 4 {
		s0 := src[base+r*ld:][:depth]
		s1 := src[base+(r+1)*ld:][:len(s0)]
		s2 := src[base+(r+2)*ld:][:len(s0)]
		s3 := src[base+(r+3)*ld:][:len(s0)]
		for p := range s0 {
			d := w[p*width+r : p*width+r+4 : p*width+r+4]
			d[0], d[1], d[2], d[3] = s0[p], s1[p], s2[p], s3[p]
		}
	}
	if r+2 <= rows {
		s0 := src[base+r*ld:][:depth]
		s1 := src[base+(r+1)*ld:][:len(s0)]
		for p := range s0 {
			d := w[p*width+r : p*width+r+2 : p*width+r+2]
			d[0], d[1] = s0[p], s1[p]
		}
		r += 2
	}
	if r < rows {
		s := src[base+r*ld:][:depth]
		for p, v := range s {
			w[p*width+r] = v
		}
	}
}

// packB copies the inner indices [p0, p0+depth) and columns [j0, j0+cols)
// of op(B) into dst as consecutive micro-panels of nr columns; within a
// panel, the nr values of one inner index are adjacent. Columns past the
// end are zero.
func packB(dst []float32, nr int, tB Transpose, b []float32, ldb, p0, depth, j0, cols int) {
	// op(B)(p, j) is b[p*ldb+j] when not transposed, b[j*ldb+p] otherwise.
	packPanels(dst, nr, tB == NoTrans, b, ldb, j0, cols, p0, depth)
}

// macroKernel updates the rows x cols block C (row stride ldc) with
// alpha * packedA * packedB + beta * C, one mr x nr tile at a time. The
// packed B micro-panel stays in L1 while the A micro-panels stream past.
// Tiles that stick out of C are computed into t (mr x nr) and the part
// inside C is stored by storeTile.
func (kn *gemmKernel) macroKernel(rows, cols, depth int, pa, pb, t []float32, c []float32, ldc int, alpha, beta float32) {
	mr, nr := kn.mr, kn.nr
	for jr := 0; jr < cols; jr += nr {
		nn := min(nr, cols-jr)
		bp := pb[jr*depth : (jr+nr)*depth]
		for ir := 0; ir < rows; ir += mr {
			mm := min(mr, rows-ir)
			ap := pa[ir*depth : (ir+mr)*depth]
			if mm == mr && nn == nr {
				kn.tile(depth, ap, bp, c[ir*ldc+jr:], ldc, alpha, beta)
				continue
			}
			kn.tile(depth, ap, bp, t, nr, 1, 0)
			storeTile(c[ir*ldc+jr:], ldc, t, nr, mm, nn, alpha, beta)
		}
	}
}

// directMaxTiles is the most column tiles of C for which gemmSerial
// reads A in place (gemmKernel.direct) instead of packing it.
const directMaxTiles = 3

// macroKernelDirect is macroKernel with A (rows x depth, row stride lda,
// not transposed) read in place by kn.direct; a last tile of fewer than
// mr rows is packed into pa first, as it would be without direct.
func (kn *gemmKernel) macroKernelDirect(rows, cols, depth int, a []float32, lda int, pa, pb, t []float32, c []float32, ldc int, alpha, beta float32) {
	mr, nr := kn.mr, kn.nr
	full := rows / mr * mr
	for jr := 0; jr < cols; jr += nr {
		nn := min(nr, cols-jr)
		bp := pb[jr*depth : (jr+nr)*depth]
		for ir := 0; ir < full; ir += mr {
			if nn == nr {
				kn.direct(depth, a[ir*lda:], lda, bp, c[ir*ldc+jr:], ldc, alpha, beta)
				continue
			}
			kn.direct(depth, a[ir*lda:], lda, bp, t, nr, 1, 0)
			storeTile(c[ir*ldc+jr:], ldc, t, nr, mr, nn, alpha, beta)
		}
		if full < rows {
			packA(pa, mr, NoTrans, a, lda, full, rows-full, 0, depth)
			kn.tile(depth, pa[:mr*depth], bp, t, nr, 1, 0)
			storeTile(c[full*ldc+jr:], ldc, t, nr, rows-full, nn, alpha, beta)
		}
	}
}

// storeTile writes the top-left mm x nn corner of the tile t (row stride
// tw) into C: C = alpha*t + beta*C, not reading C when beta is 0.
func storeTile(c []float32, ldc int, t []float32, tw, mm, nn int, alpha, beta float32) {
	for i := 0; i < mm; i++ {
		row := c[i*ldc : i*ldc+nn]
		tr := t[i*tw : i*tw+nn]
		switch beta {
		case 0:
			for j, v := range tr {
				row[j] = alpha * v
			}
		case 1:
			for j, v := range tr {
				row[j] += alpha * v
			}
		default:
			for j, v := range tr {
				row[j] = alpha*v + beta*row[j]
			}
		}
	}
}

// tile4x2 is genericKernel's tile function: kernel4x2, then storeTile.
func tile4x2(depth int, pa, pb, c []float32, ldc int, alpha, beta float32) {
	var t [4 * 2]float32
	kernel4x2(depth, pa, pb, &t)
	storeTile(c, ldc, t[:], 2, 4, 2, alpha, beta)
}

// kernel4x2 computes the 4x2 tile t = Aₚ·Bₚ of a packed A micro-panel
// (depth steps of 4 values) and a packed B micro-panel (depth steps of 2
// values), holding the 8 sums in registers.
//
// The inner loop is unrolled eight times: the Go compiler schedules the
// additions that feed a loop-carried variable at the end of the loop body,
// so without unrolling all products are live at once and spill; with it
// only the last step's do. (4x2 with 8 steps measured best among tiles
// from 1x7 to 4x4 and 1 to 8 steps: about 8 GFLOP/s on one core. Larger
// tiles need more than the 15 XMM registers Go allocates.)
func kernel4x2(depth int, pa, pb []float32, t *[4 * 2]float32) {
	const mr, nr = 4, 2
	var c00, c01, c10, c11, c20, c21, c30, c31 float32
	pa = pa[:mr*depth]
	pb = pb[:nr*depth]
	for len(pa) >= 8*mr && len(pb) >= 8*nr {
		a := pa[0]
		c00 += a * pb[0]
		c01 += a * pb[1]
		a = pa[1]
		c10 += a * pb[0]
		c11 += a * pb[1]
		a = pa[2]
		c20 += a * pb[0]
		c21 += a * pb[1]
		a = pa[3]
		c30 += a * pb[0]
		c31 += a * pb[1]

		a = pa[4]
		c00 += a * pb[2]
		c01 += a * pb[3]
		a = pa[5]
		c10 += a * pb[2]
		c11 += a * pb[3]
		a = pa[6]
		c20 += a * pb[2]
		c21 += a * pb[3]
		a = pa[7]
		c30 += a * pb[2]
		c31 += a * pb[3]

		a = pa[8]
		c00 += a * pb[4]
		c01 += a * pb[5]
		a = pa[9]
		c10 += a * pb[4]
		c11 += a * pb[5]
		a = pa[10]
		c20 += a * pb[4]
		c21 += a * pb[5]
		a = pa[11]
		c30 += a * pb[4]
		c31 += a * pb[5]

		a = pa[12]
		c00 += a * pb[6]
		c01 += a * pb[7]
		a = pa[13]
		c10 += a * pb[6]
		c11 += a * pb[7]
		a = pa[14]
		c20 += a * pb[6]
		c21 += a * pb[7]
		a = pa[15]
		c30 += a * pb[6]
		c31 += a * pb[7]

		a = pa[16]
		c00 += a * pb[8]
		c01 += a * pb[9]
		a = pa[17]
		c10 += a * pb[8]
		c11 += a * pb[9]
		a = pa[18]
		c20 += a * pb[8]
		c21 += a * pb[9]
		a = pa[19]
		c30 += a * pb[8]
		c31 += a * pb[9]

		a = pa[20]
		c00 += a * pb[10]
		c01 += a * pb[11]
		a = pa[21]
		c10 += a * pb[10]
		c11 += a * pb[11]
		a = pa[22]
		c20 += a * pb[10]
		c21 += a * pb[11]
		a = pa[23]
		c30 += a * pb[10]
		c31 += a * pb[11]

		a = pa[24]
		c00 += a * pb[12]
		c01 += a * pb[13]
		a = pa[25]
		c10 += a * pb[12]
		c11 += a * pb[13]
		a = pa[26]
		c20 += a * pb[12]
		c21 += a * pb[13]
		a = pa[27]
		c30 += a * pb[12]
		c31 += a * pb[13]

		a = pa[28]
		c00 += a * pb[14]
		c01 += a * pb[15]
		a = pa[29]
		c10 += a * pb[14]
		c11 += a * pb[15]
		a = pa[30]
		c20 += a * pb[14]
		c21 += a * pb[15]
		a = pa[31]
		c30 += a * pb[14]
		c31 += a * pb[15]

		pa = pa[8*mr:]
		pb = pb[8*nr:]
	}
	for len(pa) >= mr && len(pb) >= nr {
		b0, b1 := pb[0], pb[1]
		c00 += pa[0] * b0
		c01 += pa[0] * b1
		c10 += pa[1] * b0
		c11 += pa[1] * b1
		c20 += pa[2] * b0
		c21 += pa[2] * b1
		c30 += pa[3] * b0
		c31 += pa[3] * b1
		pa = pa[mr:]
		pb = pb[nr:]
	}
	t[0], t[1] = c00, c01
	t[2], t[3] = c10, c11
	t[4], t[5] = c20, c21
	t[6], t[7] = c30, c31
}
