package slide

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/xdlgo/xps/densenet"
)

// Family is a locality-sensitive hash family drawn for vectors of one
// dimension: Hash maps a vector to L codes of K bits, one per hash table,
// such that vectors at a small angle (SimHash) or with similar coordinate
// rankings (DWTA) share codes more often than dissimilar ones.
//
// Implementations are immutable after construction, deterministic functions
// of their seed, and safe for concurrent use.
type Family interface {
	// Dim is the length of the vectors Hash accepts.
	Dim() int
	// K is the number of bits of a code: codes are in [0, 2^K).
	K() int
	// L is the number of codes (one per table).
	L() int
	// Hash writes the L codes of v to out. It panics unless len(v) == Dim()
	// and len(out) == L(). v is not modified.
	Hash(v []float32, out []uint32)
}

// Kind names a hash family.
type Kind int

const (
	// KindDefault selects the default family, DWTA.
	KindDefault Kind = iota
	// KindDWTA is densified winner-take-all hashing (see DWTA).
	KindDWTA
	// KindSimHash is sparse signed random projections (see SimHash).
	KindSimHash
)

// String returns "dwta", "simhash" or "default".
func (k Kind) String() string {
	switch k {
	case KindDWTA:
		return "dwta"
	case KindSimHash:
		return "simhash"
	case KindDefault:
		return "default"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// maxK bounds the bits of a code (a table has 2^K buckets).
const maxK = 24

// maxL bounds the number of tables of a family (the active-set selector
// counts table hits in a uint16).
const maxL = 4096

func checkFamilyShape(dim, k, l int) error {
	var errs []error
	if dim < 1 {
		errs = append(errs, fmt.Errorf("dim %d < 1", dim))
	}
	if k < 1 || k > maxK {
		errs = append(errs, fmt.Errorf("K %d not in [1, %d]", k, maxK))
	}
	if l < 1 || l > maxL {
		errs = append(errs, fmt.Errorf("L %d not in [1, %d]", l, maxL))
	}
	return errors.Join(errs...)
}

// SimHash is signed random projections with sparse projections, as in SLIDE:
// each of the K*L hash bits is the sign of sum_j s_j * v[i_j] over a random
// sample of S distinct coordinates i_j with random signs s_j = ±1 (S = about a
// third of the coordinates by default). Bit b of table t's code is hash
// t*K+b; a sum of exactly 0 gives bit 1. Two vectors at angle θ agree on a
// bit with probability about 1 - θ/π (exactly so for dense Gaussian
// projections; the sparse ±1 ones approximate it).
//
// Hash gathers the sampled coordinates. When the K*L x dim projection
// matrix has at most 2^24 entries it is also kept dense (zeros off the
// sample) and HashBatch runs the projections of many vectors as GEMMs
// (densenet.Gemm), several times faster per vector; its sums are rounded in
// another order, so a bit can differ from Hash's when a projection is within
// float32 rounding of 0 (in the tests: never). A Layer hashes everything
// with HashBatch, so its codes are consistent.
type SimHash struct {
	dim, k, l, sam int
	idx            []int32   // (K*L)*sam coordinates, hash-major
	sgn            []float32 // the matching signs, ±1
	proj           []float32 // (K*L) x dim dense projections, or nil
	bufPool        sync.Pool // *[]float32 projection outputs
}

// BatchHasher is implemented by families that hash many vectors at once
// faster than one at a time. HashBatch writes the L codes of each of the n
// rows of x (n x Dim, row-major) to out (n x L): the codes Hash gives,
// except that rounding may differ (see SimHash). A row's codes do not
// depend on the other rows. It may use several goroutines (through
// densenet.Gemm) and returns when they are done.
type BatchHasher interface {
	HashBatch(x []float32, n int, out []uint32)
}

// maxDenseProj bounds the entries of SimHash's dense projection matrix.
const maxDenseProj = 1 << 24

// simChunk is the number of vectors HashBatch projects per GEMM; up to
// simDotRows vectors are projected by dot products instead.
const (
	simChunk   = 256
	simDotRows = 2
)

// NewSimHash draws a SimHash family for vectors of length dim with l codes
// of k bits, each bit projecting onto ceil(density*dim) coordinates
// (at least 1, at most dim). It is a deterministic function of its
// arguments.
func NewSimHash(dim, k, l int, density float64, seed uint64) (*SimHash, error) {
	err := checkFamilyShape(dim, k, l)
	if !(density > 0 && density <= 1) {
		err = errors.Join(err, fmt.Errorf("density %v not in (0, 1]", density))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: simhash: %w", ErrBadConfig, err)
	}
	sam := min(dim, max(1, int(math.Ceil(density*float64(dim)))))
	nh := k * l
	s := &SimHash{dim: dim, k: k, l: l, sam: sam,
		idx: make([]int32, nh*sam), sgn: make([]float32, nh*sam)}
	perm := make([]int32, dim)
	for i := range perm {
		perm[i] = int32(i)
	}
	r := newRNG(seed, 0x51, 0)
	for h := 0; h < nh; h++ {
		// Partial Fisher-Yates: the first sam entries of perm become a
		// uniform sample without replacement.
		for j := 0; j < sam; j++ {
			i := j + r.IntN(dim-j)
			perm[j], perm[i] = perm[i], perm[j]
		}
		copy(s.idx[h*sam:(h+1)*sam], perm[:sam])
		for j := h * sam; j < (h+1)*sam; j++ {
			s.sgn[j] = float32(int(r.Next()>>63)*2 - 1)
		}
	}
	if nh*dim <= maxDenseProj {
		s.proj = make([]float32, nh*dim)
		for h := 0; h < nh; h++ {
			for j := h * sam; j < (h+1)*sam; j++ {
				s.proj[h*dim+int(s.idx[j])] = s.sgn[j]
			}
		}
	}
	return s, nil
}

// Dim implements Family.
func (s *SimHash) Dim() int { return s.dim }

// K implements Family.
func (s *SimHash) K() int { return s.k }

// L implements Family.
func (s *SimHash) L() int { return s.l }

// Sample is the number of coordinates each projection reads.
func (s *SimHash) Sample() int { return s.sam }

// Hash implements Family.
func (s *SimHash) Hash(v []float32, out []uint32) {
	if len(v) != s.dim || len(out) != s.l {
		panic(fmt.Sprintf("slide: SimHash.Hash: len(v) %d, len(out) %d, want %d, %d", len(v), len(out), s.dim, s.l))
	}
	m := s.sam
	off := 0
	for t := range out {
		var code uint32
		for b := 0; b < s.k; b++ {
			idx := s.idx[off : off+m]
			sgn := s.sgn[off : off+m]
			sgn = sgn[:len(idx)]
			var a0, a1 float32
			j := 0
			for ; j+1 < len(idx); j += 2 {
				a0 += sgn[j] * v[idx[j]]
				a1 += sgn[j+1] * v[idx[j+1]]
			}
			if j < len(idx) {
				a0 += sgn[j] * v[idx[j]]
			}
			code |= nonNegative(a0+a1) << b
			off += m
		}
		out[t] = code
	}
}

// nonNegative is 1 when v >= 0 and 0 otherwise (NaN included). Written as
// a function of its own, it compiles without a branch: the signs of
// projections are coin flips, and a branch on them mispredicted half the
// time (6x slower in the code loop of HashBatch).
func nonNegative(v float32) uint32 {
	if v >= 0 {
		return 1
	}
	return 0
}

// HashBatch implements BatchHasher. It panics unless len(x) == n*Dim and
// len(out) == n*L.
func (s *SimHash) HashBatch(x []float32, n int, out []uint32) {
	if n < 0 || len(x) != n*s.dim || len(out) != n*s.l {
		panic(fmt.Sprintf("slide: SimHash.HashBatch: n %d, len(x) %d, len(out) %d for dim %d, L %d", n, len(x), len(out), s.dim, s.l))
	}
	if s.proj == nil || n == 0 {
		for i := 0; i < n; i++ {
			s.Hash(x[i*s.dim:(i+1)*s.dim], out[i*s.l:(i+1)*s.l])
		}
		return
	}
	nh := s.k * s.l
	bp, _ := s.bufPool.Get().(*[]float32)
	if bp == nil {
		bp = new([]float32)
	}
	if cap(*bp) < min(n, simChunk)*nh {
		*bp = make([]float32, min(n, simChunk)*nh)
	}
	for lo := 0; lo < n; lo += simChunk {
		m := min(simChunk, n-lo)
		p := (*bp)[:m*nh]
		if m <= simDotRows {
			// A GEMM would pack all of proj for these few rows.
			for i := 0; i < m; i++ {
				xi := x[(lo+i)*s.dim : (lo+i+1)*s.dim]
				for h := range nh {
					p[i*nh+h] = densenet.Dot(s.proj[h*s.dim:(h+1)*s.dim], xi)
				}
			}
		} else {
			densenet.Gemm(densenet.NoTrans, densenet.Trans, m, nh, s.dim, 1, x[lo*s.dim:(lo+m)*s.dim], s.dim, s.proj, s.dim, 0, p, nh)
		}
		for i := 0; i < m; i++ {
			row := p[i*nh : (i+1)*nh]
			codes := out[(lo+i)*s.l : (lo+i+1)*s.l]
			for t := range codes {
				var code uint32
				for b, v := range row[t*s.k : (t+1)*s.k] {
					code |= nonNegative(v) << b
				}
				codes[t] = code
			}
		}
	}
	s.bufPool.Put(bp)
}

// DWTA is densified winner-take-all hashing (Chen and Shrivastava, "Densified
// Winner Take All (WTA) Hashing for Sparse Datasets", UAI 2018), as in SLIDE
// and BOLT. NumHashes = ceil(K/log2(BinSize))*L WTA hashes each look at a bin
// of BinSize coordinates: the bins are consecutive runs of a stream made of
// random permutations of the coordinates laid end to end, so that every
// coordinate falls into about NumHashes*BinSize/dim bins. A hash is the
// position (0..BinSize-1) in its bin of the bin's largest non-zero
// coordinate (values compared on their top 32-log2(BinSize) bits, ties to
// the later position); zeros are absent values, so a bin of zeros is empty.
// An empty bin borrows the hash of the first non-empty bin among bins
// h(bin, 1), h(bin, 2), ... (h a seeded universal hash onto the bins, at most
// 100 probes; 0 when every probe is empty), which keeps collisions
// locality-sensitive for sparse vectors such as ReLU activations. Table t's
// code is the concatenation of its hashes' log2(BinSize)-bit positions, the
// first hash in the high bits, cut to the low K bits. A Hash costs
// O(dim + NumHashes*BinSize).
type DWTA struct {
	dim, k, l    int
	bin, logBin  int
	per          int // WTA hashes per table
	nh           int // per*l
	seed         uint64
	stream       []uint32 // nh*bin coordinates: bin b is stream[b*bin:(b+1)*bin]
	scratchPool  sync.Pool
	maxDensProbe int
}

type dwtaScratch struct {
	keys []uint32 // per coordinate
	hash []int32  // raw and densified hashes
}

// NewDWTA draws a DWTA family for vectors of length dim with l codes of k
// bits and bins of binSize coordinates (a power of two in [2, 256]). It is a
// deterministic function of its arguments.
func NewDWTA(dim, k, l, binSize int, seed uint64) (*DWTA, error) {
	err := checkFamilyShape(dim, k, l)
	if binSize < 2 || binSize > 256 || binSize&(binSize-1) != 0 {
		err = errors.Join(err, fmt.Errorf("bin size %d not a power of two in [2, 256]", binSize))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: dwta: %w", ErrBadConfig, err)
	}
	logBin := bits.TrailingZeros(uint(binSize))
	per := (k + logBin - 1) / logBin
	nh := per * l
	f := &DWTA{dim: dim, k: k, l: l, bin: binSize, logBin: logBin, per: per, nh: nh,
		seed: seed, maxDensProbe: 100, stream: make([]uint32, nh*binSize)}
	perm := make([]int32, dim)
	r := newRNG(seed, 0xd7, 0)
	for pos := 0; pos < len(f.stream); pos += dim {
		for i := range perm {
			perm[i] = int32(i)
		}
		r.shuffle(perm)
		for j := 0; j < dim && pos+j < len(f.stream); j++ {
			f.stream[pos+j] = uint32(perm[j])
		}
	}
	f.scratchPool.New = func() any {
		return &dwtaScratch{keys: make([]uint32, dim), hash: make([]int32, 2*nh)}
	}
	return f, nil
}

// Dim implements Family.
func (f *DWTA) Dim() int { return f.dim }

// K implements Family.
func (f *DWTA) K() int { return f.k }

// L implements Family.
func (f *DWTA) L() int { return f.l }

// NumHashes is the number of WTA hashes (bins) behind the L codes.
func (f *DWTA) NumHashes() int { return f.nh }

// Hash implements Family.
func (f *DWTA) Hash(v []float32, out []uint32) {
	if len(v) != f.dim || len(out) != f.l {
		panic(fmt.Sprintf("slide: DWTA.Hash: len(v) %d, len(out) %d, want %d, %d", len(v), len(out), f.dim, f.l))
	}
	sc := f.scratchPool.Get().(*dwtaScratch)
	keys, raw, hash := sc.keys[:len(v)], sc.hash[:f.nh], sc.hash[f.nh:]
	// A coordinate's key is its value's order-preserving bits with the low
	// log2(BinSize) bits cleared, 0 for a zero; in a bin, key|position
	// orders the coordinates by value then position, and every non-zero
	// value's key is above the mask, so a bin's hash is the position of its
	// largest key|position (a branch-free max) and "empty" is a max <= mask.
	mask := uint32(f.bin - 1)
	for i, x := range v {
		u := math.Float32bits(x)
		if u&(1<<31) != 0 {
			u = ^u
		} else {
			u |= 1 << 31
		}
		if x == 0 {
			u = 0
		}
		keys[i] = u &^ mask
	}
	bin := f.bin
	for b := range raw {
		var m uint32
		for j, c := range f.stream[b*bin : (b+1)*bin] {
			m = max(m, keys[c]|uint32(j))
		}
		raw[b] = -1
		if m > mask {
			raw[b] = int32(m & mask)
		}
	}
	// Densification: empty bins borrow from bins chosen by a universal
	// hash, probing the original (undensified) hashes only.
	for b, h := range raw {
		if h < 0 {
			h = 0
			for a := 1; a <= f.maxDensProbe; a++ {
				j := hash3(f.seed, uint64(b), uint64(a)) % uint64(f.nh)
				if raw[j] >= 0 {
					h = raw[j]
					break
				}
			}
		}
		hash[b] = h
	}
	kmask := uint32(1)<<f.k - 1
	for t := range out {
		var code uint32
		for _, h := range hash[t*f.per : (t+1)*f.per] {
			code = code<<f.logBin | uint32(h)
		}
		out[t] = code & kmask
	}
	f.scratchPool.Put(sc)
}

// newFamily draws the family of kind for a layer's config and generation.
func newFamily(kind Kind, dim, k, l int, density float64, binSize int, seed uint64) (Family, error) {
	switch kind {
	case KindSimHash:
		return NewSimHash(dim, k, l, density, seed)
	case KindDWTA, KindDefault:
		return NewDWTA(dim, k, l, binSize, seed)
	}
	return nil, fmt.Errorf("%w: unknown hash family %v", ErrBadConfig, kind)
}
