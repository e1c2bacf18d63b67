package filters

import (
	"errors"
	"fmt"
	"math"
)

// The errors of the package. They are returned wrapped with context; match
// them with errors.Is.
var (
	// ErrBadPolicy: an invalid Spec, or an invalid argument of New.
	// Validate joins one wrapped ErrBadPolicy per problem. The problems of
	// an ExpirySpec wrap ErrBadExpiry, which wraps it.
	ErrBadPolicy = errors.New("filters: bad admission policy")
	// ErrCorrupt: a partition state that does not decode: truncated,
	// extended, of an unknown format version, failing its checksum, of
	// another partition, or breaking an invariant of the state.
	ErrCorrupt = errors.New("filters: corrupt state")
	// ErrMismatch: an intact partition state written by a filter of another
	// policy or sizing (kind, n, generations, Bloom geometry) than the one
	// it is loaded into, as after a change of the table's filter config.
	// The caller decides: refuse the restore, or start the partition empty.
	ErrMismatch = errors.New("filters: state of another policy")
)

// Policy kinds accepted by Spec.Kind.
const (
	// KindNone admits every ID at its first sighting (no filter).
	KindNone = "none"
	// KindProbability admits an ID iff a hash of the table's salt and the
	// ID falls below P: a fixed subset of the IDs, the same on every
	// worker, retry, shard and restore.
	KindProbability = "probability"
	// KindCount admits an ID at its N-th sighting, counted with Bloom
	// filters in rotating generations.
	KindCount = "count"
)

// Defaults and limits of a Spec.
const (
	DefaultKind              = KindNone
	DefaultFalsePositiveRate = 0.01
	DefaultGenerations       = 2
	DefaultMaxPartitionBytes = 16 << 10

	// MaxN bounds Spec.N: a sighting costs up to N-1 Bloom probes per
	// generation, and an ID seen more than 64 times before it earns a row
	// is better left to expiry.
	MaxN = 64
	// MaxGenerations bounds Spec.Generations.
	MaxGenerations = 16
	// MaxPartitionBytesLimit bounds Spec.MaxPartitionBytes (1 GiB).
	MaxPartitionBytesLimit = 1 << 30
	// MinCapacity is the fewest IDs each Bloom filter of a count policy
	// must hold at its false-positive rate. A generation that fills after
	// fewer rotates so often that sightings fade long before they add up;
	// the floor catches a max_partition_bytes meant for a whole table, or
	// given in the wrong unit.
	MinCapacity = 64
	// MaxPartitions bounds the partitions argument of New (the same limit
	// as the shard map's).
	MaxPartitions = 1 << 16
)

// maxHashes bounds the number of hash functions Sizing considers.
const maxHashes = 32

// sizingMargin is the share of FilterRate that Sizing sizes a Bloom filter
// for. The standard estimate (1 - e^(-kc/m))^k is the expectation of a
// filter's rate with ideal hashes; a real filter's rate scatters around it
// (bloom/v3 measured at capacity: 0.98 to 1.03 times the estimate for m
// from 640 bits to 1 Mbit), so sizing for 0.9 of the rate keeps a filter
// below it at the cost of about 2% more bits per ID.
const sizingMargin = 0.9

// Spec is the admission policy of one sparse table. It backs the YAML
// config, command-line flags and the Go API alike.
//
// As in pebble's Options, a zero field means "use the default":
// EnsureDefaults fills zero fields and Validate checks the result. The
// fields of the count kind get their defaults only when Kind is count; a
// field set for a kind that does not use it is a problem Validate reports.
type Spec struct {
	// Kind is none, probability or count.
	//
	// The default value is "none".
	Kind string `yaml:"kind"`
	// P is the probability policy's admission rate, in (0, 1]: the share
	// of all IDs that the policy admits at their first sighting.
	//
	// Required for kind probability; there is no default.
	P float64 `yaml:"p"`
	// N is the count policy's threshold, in [1, MaxN]: an ID is admitted
	// at its N-th sighting (N = 1 admits at the first, as none does).
	//
	// Required for kind count; there is no default.
	N int `yaml:"n"`
	// FalsePositiveRate bounds, for the count policy, the probability
	// that a sighting is credited with an earlier sighting that never
	// happened (a phantom), in (0, 1). Each of the Generations Bloom
	// filters an ID is probed in gets FalsePositiveRate/Generations at
	// full load, so that their union stays within FalsePositiveRate. An ID
	// that lacks r sightings is admitted early with probability at most
	// FalsePositiveRate for r = 1, and about FalsePositiveRate^r beyond.
	//
	// The default value is 0.01.
	FalsePositiveRate float64 `yaml:"false_positive_rate" zero:"refused"`
	// MaxPartitionBytes bounds the Bloom bits of the count policy in one
	// virtual partition, in bytes, all generations and levels together
	// (the counters add 4 bytes per level and generation). A table's
	// filter takes up to P times this over the cluster (P virtual
	// partitions), a shard its share of the partitions. With the rate it
	// sets how many IDs a generation holds (Sizing().Capacity): see
	// MinCapacity.
	//
	// The default value is 16384 (16 KiB: 64 MiB per table over 4096
	// partitions).
	MaxPartitionBytes int `yaml:"max_partition_bytes" zero:"refused"`
	// Generations is how many generations of Bloom filters a partition of
	// the count policy keeps, in [1, MaxGenerations]. Sightings are
	// recorded in the newest; when one of its filters is full, the oldest
	// generation is dropped and a new one begun, so old sightings fade:
	// a sighting is kept for at least (Generations-1) x Capacity later
	// recorded sightings of its partition, and at most Generations x
	// (N-1) x Capacity.
	//
	// The default value is 2.
	Generations int `yaml:"generations" zero:"refused"`
}

// EnsureDefaults fills every zero field with its default.
func (s *Spec) EnsureDefaults() {
	if s.Kind == "" {
		s.Kind = DefaultKind
	}
	if s.Kind != KindCount {
		return
	}
	if s.FalsePositiveRate == 0 {
		s.FalsePositiveRate = DefaultFalsePositiveRate
	}
	if s.Generations == 0 {
		s.Generations = DefaultGenerations
	}
	if s.MaxPartitionBytes == 0 {
		s.MaxPartitionBytes = DefaultMaxPartitionBytes
	}
}

// Validate reports every problem of the spec at once, each wrapping
// ErrBadPolicy, joined with errors.Join; nil when the spec is valid. It
// checks the spec as it is: call EnsureDefaults first.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadPolicy}, args...)...))
	}
	switch s.Kind {
	case KindNone, KindProbability, KindCount:
	default:
		bad("kind %q is not one of none, probability, count", s.Kind)
	}
	if s.Kind == KindProbability {
		if !(s.P > 0 && s.P <= 1) {
			bad("p %v must be in (0, 1]", s.P)
		}
	} else if s.P != 0 {
		bad("p %v is set, but only kind probability uses it (kind %q)", s.P, s.Kind)
	}
	if s.Kind == KindCount {
		s.validateCount(bad)
		return errors.Join(errs...)
	}
	if s.N != 0 {
		bad("n %d is set, but only kind count uses it (kind %q)", s.N, s.Kind)
	}
	if s.FalsePositiveRate != 0 || s.MaxPartitionBytes != 0 || s.Generations != 0 {
		bad("false_positive_rate, max_partition_bytes or generations is set, but only kind count uses them (kind %q)", s.Kind)
	}
	return errors.Join(errs...)
}

// validateCount reports the problems of a count spec through bad.
func (s Spec) validateCount(bad func(string, ...any)) {
	ok := true
	check := func(cond bool, format string, args ...any) {
		if !cond {
			bad(format, args...)
			ok = false
		}
	}
	check(s.N >= 1 && s.N <= MaxN, "n %d must be in [1, %d]", s.N, MaxN)
	check(s.FalsePositiveRate > 0 && s.FalsePositiveRate < 1,
		"false_positive_rate %v must be in (0, 1)", s.FalsePositiveRate)
	check(s.Generations >= 1 && s.Generations <= MaxGenerations,
		"generations %d must be in [1, %d]", s.Generations, MaxGenerations)
	check(s.MaxPartitionBytes > 0 && s.MaxPartitionBytes <= MaxPartitionBytesLimit,
		"max_partition_bytes %d must be in [1, %d]", s.MaxPartitionBytes, MaxPartitionBytesLimit)
	if !ok || s.N == 1 {
		return // the sizing needs valid fields; N = 1 keeps no state
	}
	if z := s.Sizing(); z.Capacity < MinCapacity {
		bad("max_partition_bytes %d is too small for false_positive_rate %v: it gives each of the %d Bloom filters "+
			"(%d generations x %d levels) %d bits, which hold %d IDs at rate %.3g, fewer than %d; "+
			"at least %d bytes are needed",
			s.MaxPartitionBytes, s.FalsePositiveRate, z.Generations*z.Levels, z.Generations, z.Levels,
			z.FilterBits, z.Capacity, z.FilterRate, MinCapacity, s.minPartitionBytes())
	}
}

// Sizing is the geometry a count spec gives one partition's state.
type Sizing struct {
	// Levels is the number of Bloom filters per generation: N-1, the
	// cascade of an ID's first N-1 sightings.
	Levels int
	// Generations is Spec.Generations.
	Generations int
	// FilterBits is the size m of each Bloom filter, a multiple of 64:
	// the largest that fits Generations x Levels filters in
	// MaxPartitionBytes.
	FilterBits int
	// Hashes is the number k of hash functions of each Bloom filter.
	Hashes int
	// Capacity is the number of IDs a Bloom filter holds within its
	// false-positive rate: the largest c whose standard estimate
	// (1 - e^(-kc/m))^k is at most 0.9 x FilterRate (a margin for the
	// scatter of real filters around the estimate). A generation rotates as
	// soon as one of its filters has had Capacity insertions.
	Capacity int
	// FilterRate is FalsePositiveRate / Generations, the bound on the
	// false-positive rate of each Bloom filter, reached at Capacity.
	FilterRate float64
	// PartitionBytes is Generations x Levels x FilterBits / 8, the Bloom
	// bits of a partition whose generations all exist: at most
	// MaxPartitionBytes.
	PartitionBytes int
}

// Sizing returns the geometry of a valid count spec with N >= 2, and the
// zero Sizing for any other valid spec (no state).
func (s Spec) Sizing() Sizing {
	if s.Kind != KindCount || s.N < 2 {
		return Sizing{}
	}
	z := Sizing{Levels: s.N - 1, Generations: s.Generations,
		FilterRate: s.FalsePositiveRate / float64(s.Generations)}
	words := s.MaxPartitionBytes / (8 * z.Levels * z.Generations)
	z.FilterBits = 64 * words
	z.Hashes, z.Capacity = bestHashes(z.FilterBits, sizingMargin*z.FilterRate)
	z.PartitionBytes = z.Generations * z.Levels * z.FilterBits / 8
	return z
}

// bestHashes returns the number of hash functions k in [1, maxHashes] that
// lets a Bloom filter of m bits hold the most IDs at false-positive rate
// eps, and that number: the largest c with (1 - e^(-kc/m))^k <= eps, that
// is c = floor(-(m/k) ln(1 - eps^(1/k))). Ties go to the smaller k.
func bestHashes(m int, eps float64) (k, capacity int) {
	if m == 0 {
		return 1, 0
	}
	for h := 1; h <= maxHashes; h++ {
		c := math.Floor(-float64(m) / float64(h) * math.Log1p(-math.Pow(eps, 1/float64(h))))
		c = min(c, math.MaxUint32-1)
		if int(c) > capacity {
			k, capacity = h, int(c)
		}
	}
	if k == 0 {
		k = 1
	}
	return k, capacity
}

// minPartitionBytes returns the smallest MaxPartitionBytes that gives a
// count spec's filters MinCapacity.
func (s Spec) minPartitionBytes() int {
	filters := (s.N - 1) * s.Generations
	eps := sizingMargin * s.FalsePositiveRate / float64(s.Generations)
	// The optimum holds c IDs in c ln(1/eps) / ln(2)^2 bits; integral k
	// needs a little more, found by stepping up a word at a time.
	bits := float64(MinCapacity) * -math.Log(eps) / (math.Ln2 * math.Ln2)
	words := max(1, int(bits/64))
	for {
		if _, c := bestHashes(64*words, eps); c >= MinCapacity {
			return 8 * words * filters
		}
		words++
	}
}
