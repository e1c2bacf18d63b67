package slide

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// Errors. Config and option problems wrap ErrBadConfig; a label outside
// [0, Dim) wraps ErrBadLabel; calls after Close return ErrClosed.
var (
	ErrBadConfig = errors.New("slide: bad config")
	ErrBadLabel  = errors.New("slide: label out of range")
	ErrClosed    = errors.New("slide: layer closed")
)

// Selection says how an over-full candidate set is cut down to its target
// size.
type Selection int

const (
	// SelectDefault is SelectRandom in training and SelectByCount in
	// inference.
	SelectDefault Selection = iota
	// SelectRandom keeps a uniform random subset of the candidates.
	SelectRandom
	// SelectByCount keeps the candidates found in the most tables (those
	// likeliest to have a large inner product with the input), breaking
	// ties at random.
	SelectByCount
)

// String returns "random", "bycount" or "default".
func (s Selection) String() string {
	switch s {
	case SelectRandom:
		return "random"
	case SelectByCount:
		return "bycount"
	case SelectDefault:
		return "default"
	}
	return fmt.Sprintf("Selection(%d)", int(s))
}

// Config configures a Layer. Zero fields take their defaults in
// EnsureDefaults; Validate reports every problem at once.
type Config struct {
	// Dim is d, the number of output neurons (labels). Required.
	Dim int `yaml:"-"`
	// InputDim is d_prev, the length of an input activation vector.
	// Required.
	InputDim int `yaml:"-"`
	// Sparsity is s, the fraction of the neurons active for a training
	// sample: the active set has round(s*d) neurons (but never fewer than
	// the sample's labels). 1 trains densely (every neuron, with GEMMs and
	// no hashing). 0 < Sparsity <= 1. The default value is 0.005.
	Sparsity float64 `yaml:"sparsity" zero:"refused; 1 is dense training"`
	// InferSparsity is the fraction of the neurons PredictSparse scores
	// per sample (at most round(InferSparsity*d) candidates). 0 <
	// InferSparsity <= 1. The default value is Sparsity. Hash tables are
	// built when Sparsity < 1 or InferSparsity < 1; autotuning uses the
	// smaller of the two.
	InferSparsity float64 `yaml:"infer_sparsity"`
	// Family is the hash family. The default value is KindDWTA.
	Family Kind `yaml:"-"`
	// K, L and R override the autotuned table shape (see Tune) field by
	// field: bits per code, number of tables and bucket capacity. The
	// default value 0 takes Tune's choice; R defaults to Tune's rule for
	// the K in use.
	K int `yaml:"k"`
	L int `yaml:"l"`
	R int `yaml:"r"`
	// Tune are the autotuning constants.
	Tune TuneOptions `yaml:"tune"`
	// InferTune are the constants of TuneInference, which a trainer calls
	// before it evaluates.
	InferTune InferTuneOptions `yaml:"infer_tune"`
	// SimHashDensity is the fraction of the input coordinates each SimHash
	// projection reads. The default value is 1/3 (SLIDE's).
	SimHashDensity float64 `yaml:"simhash_density"`
	// DWTABinSize is the number of coordinates of a DWTA bin, a power of two
	// in [2, 256]. The default value is 8 (SLIDE's and BOLT's).
	DWTABinSize int `yaml:"dwta_bin_size"`
	// NoFill turns off the random filling of training active sets that the
	// hash tables leave below their target size. The default value, false,
	// fills.
	NoFill bool `yaml:"no_fill"`
	// NoCenter hashes the weight rows as they are. By default (false) a row
	// is hashed minus the mean of all rows (computed when the tables are
	// built, by New, Rehash and each redraw; re-insertion sweeps use the
	// mean of their generation of tables): that mean adds the same w̄·x to every neuron's score for an
	// input x, so the ranking of the candidates is unchanged, while the
	// direction trained rows share (every row is pushed away from the
	// common direction of the ReLU inputs they were negatives for) no
	// longer crowds them into the same buckets.
	NoCenter bool `yaml:"no_center"`
	// InsertLabels moves a true label that the lookup missed into the
	// buckets the sample hashed to (BOLT's "adding label neurons"). The
	// default value is false.
	InsertLabels bool `yaml:"insert_labels"`
	// TrainSelection and InferSelection say how over-full candidate sets
	// are cut down in training and in PredictSparse. The default values
	// are SelectRandom and SelectByCount.
	TrainSelection Selection `yaml:"-"`
	InferSelection Selection `yaml:"-"`
	// LearningRate is Adam's step size. The default value is 0.001.
	LearningRate float32 `yaml:"lr" zero:"refused"`
	// Beta1, Beta2 and Epsilon are Adam's constants. The default values
	// are 0.9, 0.999 and 1e-8.
	Beta1   float32 `yaml:"beta1"`
	Beta2   float32 `yaml:"beta2"`
	Epsilon float32 `yaml:"epsilon"`
	// InitStd is the standard deviation of the normal initial weights
	// (biases start at 0). The default value is 0.01.
	InitStd float32 `yaml:"init_std"`
	// Threads is the number of goroutines the layer runs on (its own, one
	// of them the caller's). The default value is runtime.GOMAXPROCS(0).
	Threads int `yaml:"threads"`
	// Seed makes everything deterministic: weights, hash functions,
	// reservoirs and sampling. The default value is 1.
	Seed uint64 `yaml:"-"`
	// FirstRow is, for one owner's share of a sharded layer (ShardForward),
	// the row of the whole layer that is this layer's row 0: row r starts
	// with the weights of row FirstRow+r of a layer of the same Seed, so
	// that owners start where one layer of their total width would, and
	// ShardForward takes the labels in [FirstRow, FirstRow+Dim) as its
	// own. FirstRow >= 0. The default value is 0.
	FirstRow int `yaml:"-"`
	// Schedule is the rehash schedule.
	Schedule Schedule `yaml:",inline"`
}

// Schedule says when Maintain refreshes the hash tables. See "Rehashing" in
// the package documentation.
type Schedule struct {
	// RehashBase is the first re-insertion period in batches: a sweep over
	// all neurons that re-inserts those updated since they were last
	// hashed takes this many calls to Maintain. The default value is 50
	// (SLIDE's).
	RehashBase int `yaml:"rehash_base" zero:"refused"`
	// RehashGrowth multiplies the period after each period, so that
	// re-insertion gets rarer as training settles. RehashGrowth >= 1. The
	// default value is 1.5.
	RehashGrowth float64 `yaml:"rehash_growth"`
	// RehashMax caps the period. The default value is 2000.
	RehashMax int `yaml:"rehash_max"`
	// RedrawPeriod is the number of batches between redraws of the hash
	// functions (new functions, new tables built in the background of
	// training by Maintain's slices, then swapped in). Negative: never.
	// The default value is 20000.
	RedrawPeriod int `yaml:"redraw_period" zero:"refused"`
	// SliceNeurons caps the neurons hashed by one Maintain call. A sweep
	// whose share per call would exceed it takes longer than its period.
	// The default value is 16384.
	SliceNeurons int `yaml:"slice_neurons"`
}

// Default values of Config and Schedule.
const (
	DefaultSparsity       = 0.005
	DefaultSimHashDensity = 1.0 / 3
	DefaultDWTABinSize    = 8
	DefaultLearningRate   = 0.001
	DefaultBeta1          = 0.9
	DefaultBeta2          = 0.999
	DefaultEpsilon        = 1e-8
	DefaultInitStd        = 0.01
	DefaultSeed           = 1
	DefaultRehashBase     = 50
	DefaultRehashGrowth   = 1.5
	DefaultRehashMax      = 2000
	DefaultRedrawPeriod   = 20000
	DefaultSliceNeurons   = 16384
)

// EnsureDefaults fills the zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.Sparsity == 0 {
		c.Sparsity = DefaultSparsity
	}
	if c.InferSparsity == 0 {
		c.InferSparsity = c.Sparsity
	}
	if c.Family == KindDefault {
		c.Family = KindDWTA
	}
	c.Tune.EnsureDefaults()
	c.InferTune.EnsureDefaults()
	if c.SimHashDensity == 0 {
		c.SimHashDensity = DefaultSimHashDensity
	}
	if c.DWTABinSize == 0 {
		c.DWTABinSize = DefaultDWTABinSize
	}
	if c.TrainSelection == SelectDefault {
		c.TrainSelection = SelectRandom
	}
	if c.InferSelection == SelectDefault {
		c.InferSelection = SelectByCount
	}
	if c.LearningRate == 0 {
		c.LearningRate = DefaultLearningRate
	}
	if c.Beta1 == 0 {
		c.Beta1 = DefaultBeta1
	}
	if c.Beta2 == 0 {
		c.Beta2 = DefaultBeta2
	}
	if c.Epsilon == 0 {
		c.Epsilon = DefaultEpsilon
	}
	if c.InitStd == 0 {
		c.InitStd = DefaultInitStd
	}
	if c.Threads == 0 {
		c.Threads = runtime.GOMAXPROCS(0)
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	s := &c.Schedule
	if s.RehashBase == 0 {
		s.RehashBase = DefaultRehashBase
	}
	if s.RehashGrowth == 0 {
		s.RehashGrowth = DefaultRehashGrowth
	}
	if s.RehashMax == 0 {
		s.RehashMax = max(DefaultRehashMax, s.RehashBase)
	}
	if s.RedrawPeriod == 0 {
		s.RedrawPeriod = DefaultRedrawPeriod
	}
	if s.SliceNeurons == 0 {
		s.SliceNeurons = DefaultSliceNeurons
	}
}

// Validate reports every problem of the config (after EnsureDefaults), each
// wrapping ErrBadConfig.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, a...)...))
	}
	if c.Dim < 1 || c.Dim > 1<<31-1 {
		bad("Dim %d not in [1, 2^31)", c.Dim)
	}
	if c.InputDim < 1 {
		bad("InputDim %d < 1", c.InputDim)
	}
	if c.FirstRow < 0 || c.FirstRow > 1<<31-1-c.Dim {
		bad("FirstRow %d: rows past 2^31", c.FirstRow)
	}
	if !(c.Sparsity > 0 && c.Sparsity <= 1) {
		bad("Sparsity %v not in (0, 1]", c.Sparsity)
	}
	if !(c.InferSparsity > 0 && c.InferSparsity <= 1) {
		bad("InferSparsity %v not in (0, 1]", c.InferSparsity)
	}
	if c.Family != KindDWTA && c.Family != KindSimHash {
		bad("unknown Family %v", c.Family)
	}
	if c.K < 0 || c.K > maxK {
		bad("K %d not in [0, %d]", c.K, maxK)
	}
	if c.L < 0 || c.L > maxL {
		bad("L %d not in [0, %d]", c.L, maxL)
	}
	if c.R < 0 || c.R > 1<<16 {
		bad("R %d not in [0, 65536]", c.R)
	}
	if err := c.Tune.Validate(); err != nil {
		bad("Tune: %w", err)
	}
	if err := c.InferTune.Validate(); err != nil {
		bad("InferTune: %w", err)
	}
	if !(c.SimHashDensity > 0 && c.SimHashDensity <= 1) {
		bad("SimHashDensity %v not in (0, 1]", c.SimHashDensity)
	}
	if b := c.DWTABinSize; b < 2 || b > 256 || b&(b-1) != 0 {
		bad("DWTABinSize %d not a power of two in [2, 256]", b)
	}
	for _, s := range []Selection{c.TrainSelection, c.InferSelection} {
		if s != SelectRandom && s != SelectByCount {
			bad("unknown Selection %v", s)
		}
	}
	if !(c.LearningRate > 0) || math.IsInf(float64(c.LearningRate), 0) {
		bad("LearningRate %v not positive and finite", c.LearningRate)
	}
	if !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1) {
		bad("Beta1 %v and Beta2 %v must be in [0, 1)", c.Beta1, c.Beta2)
	}
	if !(c.Epsilon > 0) {
		bad("Epsilon %v not positive", c.Epsilon)
	}
	if !(c.InitStd >= 0) || math.IsInf(float64(c.InitStd), 0) {
		bad("InitStd %v not finite and >= 0", c.InitStd)
	}
	if c.Threads < 1 || c.Threads > 1024 {
		bad("Threads %d not in [1, 1024]", c.Threads)
	}
	s := &c.Schedule
	if s.RehashBase < 1 {
		bad("Schedule.RehashBase %d < 1", s.RehashBase)
	}
	if !(s.RehashGrowth >= 1) || math.IsInf(s.RehashGrowth, 0) {
		bad("Schedule.RehashGrowth %v not finite and >= 1", s.RehashGrowth)
	}
	if s.RehashMax < s.RehashBase {
		bad("Schedule.RehashMax %d < RehashBase %d", s.RehashMax, s.RehashBase)
	}
	if s.SliceNeurons < 1 {
		bad("Schedule.SliceNeurons %d < 1", s.SliceNeurons)
	}
	return errors.Join(errs...)
}

// hasTables reports whether the layer needs hash tables.
func (c *Config) hasTables() bool { return c.Sparsity < 1 || c.InferSparsity < 1 }

// params returns the table shape: Tune's, with the overrides applied.
func (c *Config) params() Params {
	s := min(c.Sparsity, c.InferSparsity)
	p := Tune(c.Dim, s, c.Tune)
	if c.K > 0 && c.K != p.K {
		p.K = c.K
		p.R = max(c.Tune.MinR, int(math.Ceil(c.Tune.RFactor*float64(c.Dim)/float64(int(1)<<p.K))))
	}
	if c.L > 0 {
		p.L = c.L
	}
	if c.R > 0 {
		p.R = c.R
	}
	return p
}
