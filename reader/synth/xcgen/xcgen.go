package xcgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/xdlgo/xps/model/hashmix"
)

// ErrBadConfig is wrapped by Config.Validate's errors.
var ErrBadConfig = errors.New("xcgen: bad config")

// Config shapes the generated data. Zero fields take their defaults in
// EnsureDefaults, which are Amazon-670K's shape.
type Config struct {
	// Features is the number of features F. The default value is 135909.
	Features int
	// Labels is the number of labels L. The default value is 670091.
	Labels int
	// NNZ is the mean number of non-zero features per sample, at most
	// Features. The default value is 75.
	NNZ int
	// MinLabels and MaxLabels bound the labels per sample:
	// 1 <= MinLabels <= MaxLabels <= Labels. The default values are 1 and 5.
	MinLabels, MaxLabels int
	// LabelDecay is the ratio P(c+1)/P(c) of the label count distribution,
	// in (0, 1]. The default value is 0.7.
	LabelDecay float64
	// LabelZipf is the exponent s of the label popularity law
	// (r+1)^-s, s > 0. The default value is 0.8.
	LabelZipf float64
	// ClusterSize is the number of labels (consecutive popularity ranks)
	// per topic cluster. The default value is 16.
	ClusterSize int
	// Related is the probability that a sample's second and later labels
	// come from its first label's cluster. A negative value means 0. The
	// default value is 0.5.
	Related float64
	// PrototypeSize is the number of feature draws of a label's prototype.
	// The default value is 40.
	PrototypeSize int
	// ClusterShare is the share of a prototype's draws taken from its
	// cluster's shared prototype, in [0, 1]. A negative value means 0. The
	// default value is 0.25.
	ClusterShare float64
	// PrototypeZipf is the exponent of the popularity law of prototype
	// features, > 0. The default value is 0.5.
	PrototypeZipf float64
	// Noise is the share of a sample's features drawn from the noise law
	// instead of its labels' prototypes, in [0, 1]. A negative value means 0
	// (no noise). The default value is 0.2.
	Noise float64
	// NoiseZipf is the exponent of the noise features' popularity law
	// (frequent "stop words"), > 0; it also sets the idf. The default value
	// is 1.
	NoiseZipf float64
	// Seed selects the world: popularity orders, clusters, prototypes.
	// Streams of one Seed are splits of one distribution. The default value
	// is 1.
	Seed uint64
}

// Default values of Config.
const (
	DefaultFeatures      = 135909
	DefaultLabels        = 670091
	DefaultNNZ           = 75
	DefaultMinLabels     = 1
	DefaultMaxLabels     = 5
	DefaultLabelDecay    = 0.7
	DefaultLabelZipf     = 0.8
	DefaultClusterSize   = 16
	DefaultRelated       = 0.5
	DefaultPrototypeSize = 40
	DefaultClusterShare  = 0.25
	DefaultPrototypeZipf = 0.5
	DefaultNoise         = 0.2
	DefaultNoiseZipf     = 1.0
	DefaultSeed          = 1
)

// EnsureDefaults fills the zero fields with their defaults and turns the
// negative "none" values into 0.
func (c *Config) EnsureDefaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	deff := func(p *float64, v float64) {
		switch {
		case *p == 0:
			*p = v
		case *p < 0:
			*p = 0
		}
	}
	def(&c.Features, DefaultFeatures)
	def(&c.Labels, DefaultLabels)
	def(&c.NNZ, DefaultNNZ)
	def(&c.MinLabels, DefaultMinLabels)
	def(&c.MaxLabels, max(DefaultMaxLabels, c.MinLabels))
	def(&c.ClusterSize, DefaultClusterSize)
	def(&c.PrototypeSize, DefaultPrototypeSize)
	if c.LabelDecay == 0 {
		c.LabelDecay = DefaultLabelDecay
	}
	if c.LabelZipf == 0 {
		c.LabelZipf = DefaultLabelZipf
	}
	if c.PrototypeZipf == 0 {
		c.PrototypeZipf = DefaultPrototypeZipf
	}
	if c.NoiseZipf == 0 {
		c.NoiseZipf = DefaultNoiseZipf
	}
	deff(&c.Related, DefaultRelated)
	deff(&c.ClusterShare, DefaultClusterShare)
	deff(&c.Noise, DefaultNoise)
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
}

// Validate reports every problem of the config (after EnsureDefaults).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, a...)...))
	}
	if c.Features < 1 || c.Features > 1<<31-1 {
		bad("Features %d not in [1, 2^31)", c.Features)
	}
	if c.Labels < 1 || c.Labels > 1<<24 {
		bad("Labels %d not in [1, 2^24]", c.Labels)
	}
	if c.NNZ < 1 || c.NNZ > c.Features {
		bad("NNZ %d not in [1, Features]", c.NNZ)
	}
	if c.MinLabels < 1 || c.MaxLabels < c.MinLabels || c.MaxLabels > c.Labels || c.MaxLabels > 1000 {
		bad("MinLabels %d, MaxLabels %d: want 1 <= MinLabels <= MaxLabels <= min(Labels, 1000)", c.MinLabels, c.MaxLabels)
	}
	if !(c.LabelDecay > 0 && c.LabelDecay <= 1) {
		bad("LabelDecay %v not in (0, 1]", c.LabelDecay)
	}
	for _, z := range []struct {
		name string
		v    float64
	}{{"LabelZipf", c.LabelZipf}, {"PrototypeZipf", c.PrototypeZipf}, {"NoiseZipf", c.NoiseZipf}} {
		if !(z.v > 0 && z.v <= 10) {
			bad("%s %v not in (0, 10]", z.name, z.v)
		}
	}
	if c.ClusterSize < 1 {
		bad("ClusterSize %d < 1", c.ClusterSize)
	}
	if c.PrototypeSize < 1 {
		bad("PrototypeSize %d < 1", c.PrototypeSize)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"Related", c.Related}, {"ClusterShare", c.ClusterShare}, {"Noise", c.Noise}} {
		if !(p.v >= 0 && p.v <= 1) {
			bad("%s %v not in [0, 1]", p.name, p.v)
		}
	}
	return errors.Join(errs...)
}

// Generator draws samples of one world. It is immutable.
type Generator struct {
	cfg                Config
	labelMap, featMap  affine
	labelLaw, protoLaw zipf
	noiseLaw           zipf
	countCDF           []float64 // label count c = MinLabels+i with P <= countCDF[i]
	clusterDraws       int       // prototype draws from the cluster
	lo, hi             int       // feature count range
}

// New returns the generator of cfg (defaults filled in).
func New(cfg Config) (*Generator, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg,
		labelMap: newAffine(cfg.Labels, cfg.Seed, 0x1abe1),
		featMap:  newAffine(cfg.Features, cfg.Seed, 0xfea7),
		labelLaw: newZipf(cfg.Labels, cfg.LabelZipf),
		protoLaw: newZipf(cfg.Features, cfg.PrototypeZipf),
		noiseLaw: newZipf(cfg.Features, cfg.NoiseZipf),
		lo:       max(1, (cfg.NNZ+1)/2),
		hi:       min(cfg.Features, 3*cfg.NNZ/2),
	}
	g.hi = max(g.hi, g.lo)
	g.clusterDraws = int(math.Round(cfg.ClusterShare * float64(cfg.PrototypeSize)))
	var sum, p float64 = 0, 1
	for c := cfg.MinLabels; c <= cfg.MaxLabels; c++ {
		sum += p
		g.countCDF = append(g.countCDF, sum)
		p *= cfg.LabelDecay
	}
	for i := range g.countCDF {
		g.countCDF[i] /= sum
	}
	return g, nil
}

// Config returns the generator's config, defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Sample is one generated sample: labels ascending, features ascending with
// their values. It also holds scratch space; reuse one per goroutine.
type Sample struct {
	Labels   []int32
	Features []int32
	Values   []float32

	ranks []int32  // label popularity ranks, parallel to the drawn labels
	draws []uint64 // feature id<<32 | feature rank, with repeats
	set   idSet
}

// Sample fills s with sample i of stream.
func (g *Generator) Sample(stream, i uint64, s *Sample) {
	c := &g.cfg
	r := newRNG(c.Seed, stream, i)
	// Labels.
	n := c.MinLabels
	for u := r.Float64(); n < c.MaxLabels && u > g.countCDF[n-c.MinLabels]; n++ {
	}
	s.Labels, s.ranks = s.Labels[:0], s.ranks[:0]
	first := g.labelLaw.rank(r.Float64())
	s.addLabel(g, first)
	for tries := 0; len(s.Labels) < n && tries < 100*n; tries++ {
		var rank int
		if r.Float64() < c.Related {
			base := first - first%c.ClusterSize
			rank = base + r.IntN(min(c.ClusterSize, c.Labels-base))
		} else {
			rank = g.labelLaw.rank(r.Float64())
		}
		s.addLabel(g, rank)
	}
	// Features.
	t := g.lo + r.IntN(g.hi-g.lo+1)
	signal := int(math.Round(float64(t) * (1 - c.Noise)))
	s.set.reset(4 * t)
	s.draws = s.draws[:0]
	distinct := 0
	for tries := 0; distinct < signal && tries < 4*signal+16; tries++ {
		k := r.IntN(len(s.ranks))
		u := r.Float64()
		j := int(float64(c.PrototypeSize) * u * u)
		rank := g.protoFeature(int(s.ranks[k]), j)
		if s.addDraw(g, rank) {
			distinct++
		}
	}
	for tries := 0; distinct < t && tries < 8*t+16; tries++ {
		if s.addDraw(g, g.noiseLaw.rank(r.Float64())) {
			distinct++
		}
	}
	slices.Sort(s.draws)
	s.Features, s.Values = s.Features[:0], s.Values[:0]
	var norm float64
	for a := 0; a < len(s.draws); {
		b := a + 1
		for b < len(s.draws) && s.draws[b] == s.draws[a] {
			b++
		}
		id, rank := int32(s.draws[a]>>32), int32(uint32(s.draws[a]))
		v := (1 + math.Log(float64(b-a))) * (1 + c.NoiseZipf*math.Log1p(float64(rank)))
		s.Features = append(s.Features, id)
		s.Values = append(s.Values, float32(v))
		norm += v * v
		a = b
	}
	inv := 1 / math.Sqrt(norm)
	for k, v := range s.Values {
		s.Values[k] = float32(float64(v) * inv)
	}
}

func (s *Sample) addLabel(g *Generator, rank int) {
	id := int32(g.labelMap.apply(rank))
	if slices.Contains(s.Labels, id) {
		return
	}
	// Keep labels sorted and ranks parallel.
	k, _ := slices.BinarySearch(s.Labels, id)
	s.Labels = slices.Insert(s.Labels, k, id)
	s.ranks = slices.Insert(s.ranks, k, int32(rank))
}

// addDraw records a draw of the feature of popularity rank and reports
// whether the feature is new to the sample.
func (s *Sample) addDraw(g *Generator, rank int) bool {
	id := g.featMap.apply(rank)
	s.draws = append(s.draws, uint64(id)<<32|uint64(rank))
	return s.set.add(int32(id))
}

// protoFeature returns the feature rank of draw j of the prototype of the
// label of popularity rank lr.
func (g *Generator) protoFeature(lr, j int) int {
	var h uint64
	if j < g.clusterDraws {
		h = hash3(g.cfg.Seed^0xc1, uint64(lr/g.cfg.ClusterSize), uint64(j))
	} else {
		h = hash3(g.cfg.Seed^0x9e, uint64(lr), uint64(j))
	}
	return g.protoLaw.rank(float64(h>>11) / (1 << 53))
}

// Prototype appends to dst[:0] the feature ids of the prototype of label
// (PrototypeSize draws, repeats possible), for tests and diagnostics.
func (g *Generator) Prototype(label int32, dst []int32) []int32 {
	lr := g.labelMap.invert(int(label))
	dst = dst[:0]
	for j := 0; j < g.cfg.PrototypeSize; j++ {
		dst = append(dst, int32(g.featMap.apply(g.protoFeature(lr, j))))
	}
	return dst
}

// AppendXML appends s as an XMLRepository line ("l1,l2 f:v f:v\n").
func (s *Sample) AppendXML(b []byte) []byte {
	for k, l := range s.Labels {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(l), 10)
	}
	for k, f := range s.Features {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(f), 10)
		b = append(b, ':')
		b = strconv.AppendFloat(b, float64(s.Values[k]), 'g', 5, 32)
	}
	return append(b, '\n')
}

// progressEvery is how many samples WriteXML writes between progress calls.
const progressEvery = 1 << 16

// WriteXML writes the header "n Features Labels" and samples 0..n-1 of
// stream to w, through a buffer it flushes before returning. progress, if
// not nil, is called with the number of samples written every 65536
// samples and at the end. It stops with ctx's error when ctx is done, and
// returns the first write error, wrapped.
func (g *Generator) WriteXML(ctx context.Context, w io.Writer, stream uint64, n int, progress func(done int)) error {
	if n < 0 {
		return fmt.Errorf("%w: %d samples", ErrBadConfig, n)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := fmt.Fprintf(bw, "%d %d %d\n", n, g.cfg.Features, g.cfg.Labels); err != nil {
		return fmt.Errorf("xcgen: write header: %w", err)
	}
	var s Sample
	buf := make([]byte, 0, 4096)
	for i := 0; i < n; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("xcgen: stopped after %d samples: %w", i, err)
			}
		}
		g.Sample(stream, uint64(i), &s)
		buf = s.AppendXML(buf[:0])
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("xcgen: write sample %d: %w", i, err)
		}
		if progress != nil && (i+1)%progressEvery == 0 {
			progress(i + 1)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("xcgen: flush: %w", err)
	}
	if progress != nil {
		progress(n)
	}
	return nil
}

// zipf samples ranks in [0, n) with density proportional to (x+1)^-s by
// inverting the continuous CDF F(x) = ((x+1)^(1-s) - 1) / ((n+1)^(1-s) - 1)
// (ln(x+1)/ln(n+1) when s = 1).
type zipf struct {
	n    int
	s    float64
	span float64 // (n+1)^(1-s) - 1, or ln(n+1)
}

func newZipf(n int, s float64) zipf {
	z := zipf{n: n, s: s}
	if s == 1 {
		z.span = math.Log(float64(n) + 1)
	} else {
		z.span = math.Pow(float64(n)+1, 1-s) - 1
	}
	return z
}

func (z zipf) rank(u float64) int {
	var x float64
	if z.s == 1 {
		x = math.Exp(u*z.span) - 1
	} else {
		x = math.Pow(1+u*z.span, 1/(1-z.s)) - 1
	}
	return min(z.n-1, max(0, int(x)))
}

// affine is the bijection r -> (a*r + c) mod n of [0, n), gcd(a, n) = 1.
type affine struct {
	n, a, c, ainv uint64
}

func newAffine(n int, seed, tag uint64) affine {
	m := uint64(n)
	f := affine{n: m, a: 1}
	if m > 2 {
		for k := uint64(0); ; k++ {
			a := 2 + hash3(seed, tag, k)%(m-2)
			if gcd(a, m) == 1 {
				f.a = a
				break
			}
		}
	}
	f.c = hash3(seed, tag, 1<<40) % m
	f.ainv = modInverse(f.a, m)
	return f
}

func (f affine) apply(r int) int {
	hi, lo := bits.Mul64(f.a, uint64(r))
	_, rem := bits.Div64(hi%f.n, lo, f.n)
	return int((rem + f.c) % f.n)
}

func (f affine) invert(id int) int {
	x := (uint64(id) + f.n - f.c) % f.n
	hi, lo := bits.Mul64(f.ainv, x)
	_, rem := bits.Div64(hi%f.n, lo, f.n)
	return int(rem)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// modInverse returns a^-1 mod m for gcd(a, m) = 1 (extended Euclid).
func modInverse(a, m uint64) uint64 {
	if m == 1 {
		return 0
	}
	t, nt := int64(0), int64(1)
	r, nr := int64(m), int64(a%m)
	for nr != 0 {
		q := r / nr
		t, nt = nt, t-q*nt
		r, nr = nr, r-q*nr
	}
	if t < 0 {
		t += int64(m)
	}
	return uint64(t)
}

// idSet is a small open-addressing set of ids, cleared by a generation
// stamp.
type idSet struct {
	keys  []int32
	stamp []uint32
	gen   uint32
	mask  int
}

func (s *idSet) reset(capacity int) {
	size := 16
	for size < 2*capacity {
		size *= 2
	}
	if len(s.keys) < size || s.gen == ^uint32(0) {
		s.keys, s.stamp, s.gen = make([]int32, size), make([]uint32, size), 0
	}
	s.mask = len(s.keys) - 1
	s.gen++
}

// add inserts id and reports whether it was new. The set must not fill up
// (reset's capacity bounds the number of ids).
func (s *idSet) add(id int32) bool {
	h := int(uint32(id)*0x9e3779b1) & s.mask
	for {
		if s.stamp[h] != s.gen {
			s.stamp[h], s.keys[h] = s.gen, id
			return true
		}
		if s.keys[h] == id {
			return false
		}
		h = (h + 1) & s.mask
	}
}

// rng is a splitmix64 stream.
type rng = hashmix.Stream

func newRNG(seed, a, b uint64) rng { return hashmix.NewStream(seed, a, b) }

func hash3(a, b, c uint64) uint64 { return hashmix.Hash3(a, b, c) }
