package seqgen

import (
	"errors"
	"fmt"
)

// ErrBadConfig is wrapped by Config.Validate's errors.
var ErrBadConfig = errors.New("seqgen: bad config")

// Config shapes the generated sequences and the teacher. Zero fields take
// their defaults in EnsureDefaults (Drift has no default: false is off).
// A float knob that may be 0 (ItemSpread, Noise, DriftMix, InterestShare,
// CurrentShare, Scale, Beta, Gamma, UserStd) is set to 0 by giving it a negative
// value; EnsureDefaults turns it into 0.
type Config struct {
	// Items is the number of items; item i has category i mod Categories.
	// Categories <= Items <= 1<<22. The default value is 10000.
	Items int `yaml:"items"`
	// Categories is the number of item categories. 2*MaxInterests <=
	// Categories <= Items. The default value is 100.
	Categories int `yaml:"categories"`
	// Dim is the dimension K of the items' hidden vectors. 1 <= Dim <= 256.
	// The default value is 16.
	Dim int `yaml:"dim"`
	// ItemSpread is tau, how far an item's vector lies from its category's
	// centre (see the package documentation). 0 <= ItemSpread <= 10. The
	// default value is 0.5.
	ItemSpread float64 `yaml:"item_spread"`
	// Users is the number of users; a group picks one uniformly. A user's
	// segment, interests and term are a function of the user and WorldSeed.
	// The default value is 100000.
	Users int `yaml:"users"`
	// Segments is the number of user segments (field 1). The default value
	// is 20.
	Segments int `yaml:"segments"`
	// MaxInterests is the largest number of interests (categories) of a
	// user; a user has 2..MaxInterests of them, uniformly. 2 <= MaxInterests
	// <= 16. The default value is 4.
	MaxInterests int `yaml:"max_interests"`
	// MaxLen is the longest history; a group's history has a length drawn
	// uniformly in [MinLen(), MaxLen]. 1 <= MaxLen <= 10000. The default
	// value is 50.
	MaxLen int `yaml:"max_len"`
	// Noise is the share of history items drawn uniformly from all items
	// instead of from an interest. 0 <= Noise <= 1. The default value is
	// 0.1.
	Noise float64 `yaml:"noise"`
	// Drift makes the interests move along the history: with m interests,
	// the history's t-th item (of L) comes from interest floor(m*t/L), the
	// last one being the current interest. The default value is false:
	// every item's interest is drawn from the user's fixed weights.
	Drift bool `yaml:"drift"`
	// DriftMix is, with Drift, the share of history items whose interest
	// is drawn from the user's weights instead of the position's interest.
	// 0 <= DriftMix <= 1. The default value is 0.2.
	DriftMix float64 `yaml:"drift_mix"`
	// MeanCandidates is the mean number of candidates of a group
	// (geometric, at least 1). 1 <= MeanCandidates <= 1e6. The default
	// value is 5.
	MeanCandidates float64 `yaml:"mean_candidates"`
	// InterestShare is the share of candidates drawn from one of the
	// user's interests (the others are uniform over all items). 0 <=
	// InterestShare <= 1. The default value is 0.5.
	InterestShare float64 `yaml:"interest_share"`
	// CurrentShare is, with Drift, the share of interest candidates drawn
	// from the current (last) interest; the others come from an earlier
	// one, uniformly. 0 <= CurrentShare <= 1. The default value is 0.5.
	CurrentShare float64 `yaml:"current_share"`
	// CTR is the target mean click probability; the teacher's bias is
	// calibrated to it. 0 < CTR < 1. The default value is 0.25.
	CTR float64 `yaml:"ctr"`
	// Scale is s, the weight of the attention term in the logit. 0 <=
	// Scale <= 100. The default value is 3.
	Scale float64 `yaml:"scale"`
	// Beta is the target-aware part of the attention scores (a candidate's
	// similarity to a history item). 0 <= Beta <= 100. The default value
	// is 3.
	Beta float64 `yaml:"beta"`
	// Gamma is the recency part of the attention scores. 0 <= Gamma <=
	// 100. The default value is 8.
	Gamma float64 `yaml:"gamma"`
	// UserStd is the standard deviation of the user term (half from the
	// segment, half from the user). 0 <= UserStd <= 10. The default value
	// is 0.5.
	UserStd float64 `yaml:"user_std"`
	// Seed selects the stream: users, histories, candidates and labels.
	// The default value is 1.
	Seed uint64 `yaml:"seed"`
	// WorldSeed selects the hidden world: items, users, the teacher. The
	// default value is 1.
	WorldSeed uint64 `yaml:"world_seed"`
}

// Default values of Config.
const (
	DefaultItems          = 10000
	DefaultCategories     = 100
	DefaultDim            = 16
	DefaultItemSpread     = 0.5
	DefaultUsers          = 100000
	DefaultSegments       = 20
	DefaultMaxInterests   = 4
	DefaultMaxLen         = 50
	DefaultNoise          = 0.1
	DefaultDriftMix       = 0.2
	DefaultMeanCandidates = 5
	DefaultInterestShare  = 0.5
	DefaultCurrentShare   = 0.5
	DefaultCTR            = 0.25
	DefaultScale          = 3
	DefaultBeta           = 3
	DefaultGamma          = 8
	DefaultUserStd        = 0.5
)

// MaxItems bounds Config.Items (the item vectors are one table).
const MaxItems = 1 << 22

// EnsureDefaults fills zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setFloat := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	setFloat0 := func(p *float64, v float64) { // a knob that may be 0 is set negative for 0
		setFloat(p, v)
		*p = max(*p, 0)
	}
	setInt(&c.Items, DefaultItems)
	setInt(&c.Categories, DefaultCategories)
	setInt(&c.Dim, DefaultDim)
	setFloat0(&c.ItemSpread, DefaultItemSpread)
	setInt(&c.Users, DefaultUsers)
	setInt(&c.Segments, DefaultSegments)
	setInt(&c.MaxInterests, DefaultMaxInterests)
	setInt(&c.MaxLen, DefaultMaxLen)
	setFloat0(&c.Noise, DefaultNoise)
	setFloat0(&c.DriftMix, DefaultDriftMix)
	setFloat(&c.MeanCandidates, DefaultMeanCandidates)
	setFloat0(&c.InterestShare, DefaultInterestShare)
	setFloat0(&c.CurrentShare, DefaultCurrentShare)
	setFloat(&c.CTR, DefaultCTR)
	setFloat0(&c.Scale, DefaultScale)
	setFloat0(&c.Beta, DefaultBeta)
	setFloat0(&c.Gamma, DefaultGamma)
	setFloat0(&c.UserStd, DefaultUserStd)
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.WorldSeed == 0 {
		c.WorldSeed = 1
	}
}

// MinLen is the shortest history: MaxLen/5, at least 1.
func (c *Config) MinLen() int { return max(1, c.MaxLen/5) }

// Validate reports every problem of c at once; call EnsureDefaults first.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...))
	}
	in := func(name string, v, lo, hi float64) {
		if !(v >= lo && v <= hi) {
			bad("%s %v not in [%v, %v]", name, v, lo, hi)
		}
	}
	if c.MaxInterests < 2 || c.MaxInterests > 16 {
		bad("max interests %d not in [2, 16]", c.MaxInterests)
	}
	if c.Categories < 2*c.MaxInterests || c.Categories > c.Items {
		bad("categories %d not in [2*max interests, items %d]", c.Categories, c.Items)
	}
	if c.Items < 1 || c.Items > MaxItems {
		bad("items %d not in [1, %d]", c.Items, MaxItems)
	}
	if c.Users < 1 || c.Segments < 1 {
		bad("users %d and segments %d must be >= 1", c.Users, c.Segments)
	}
	in("dim", float64(c.Dim), 1, 256)
	in("max len", float64(c.MaxLen), 1, 10000)
	in("item spread", c.ItemSpread, 0, 10)
	in("noise", c.Noise, 0, 1)
	in("drift mix", c.DriftMix, 0, 1)
	in("mean candidates", c.MeanCandidates, 1, 1e6)
	in("interest share", c.InterestShare, 0, 1)
	in("current share", c.CurrentShare, 0, 1)
	if !(c.CTR > 0 && c.CTR < 1) {
		bad("ctr %v not in (0, 1)", c.CTR)
	}
	in("scale", c.Scale, 0, 100)
	in("beta", c.Beta, 0, 100)
	in("gamma", c.Gamma, 0, 100)
	in("user std", c.UserStd, 0, 10)
	return errors.Join(errs...)
}
