package datagen

import (
	"errors"
	"fmt"

	"github.com/xdlgo/xps/reader"
)

// ErrBadConfig is wrapped by Config.Validate's errors.
var ErrBadConfig = errors.New("datagen: bad config")

// Config shapes the generated data and the teacher. Zero fields take their
// defaults in EnsureDefaults.
type Config struct {
	// Fields is the number of fields of a sample. The default value is 23.
	Fields int `yaml:"fields" zero:"refused"`
	// UserFields is the number of user fields: fields 0..UserFields-1
	// describe the user and repeat, id for id, across the consecutive samples
	// of one user; the other fields describe the item and change per sample.
	// 1 <= UserFields < Fields. The default value is 10.
	UserFields int `yaml:"user_fields" zero:"refused"`
	// MeanBag is the mean number of ids in a field's bag: a bag holds
	// 1 + Poisson(MeanBag-1) distinct ids. 1 <= MeanBag <= 64. The default
	// value is 3.
	MeanBag float64 `yaml:"mean_bag" zero:"refused"`
	// Vocab is the number of distinct ids (Zipf ranks) per field.
	// The default value is 100000.
	Vocab int `yaml:"vocab" zero:"refused"`
	// ZipfS is the Zipf exponent of the ids: rank k is drawn with
	// probability proportional to (1+k)^-ZipfS. ZipfS > 1. The default value
	// is 1.1.
	ZipfS float64 `yaml:"zipf_s" zero:"refused"`
	// SamplesPerUser is the mean length of a user's run of consecutive
	// samples (geometrically distributed, at least 1). The default value
	// is 20.
	SamplesPerUser float64 `yaml:"samples_per_user" zero:"refused"`
	// Users is the number of distinct users; each run picks one uniformly.
	// A user's fields are a function of the user and WorldSeed, so a user
	// who comes back has the same profile. The default value is 100000.
	Users int `yaml:"users" zero:"refused"`
	// Seed selects the sample stream: which users, items and labels are
	// drawn. The default value is 1.
	Seed uint64 `yaml:"seed" zero:"refused"`
	// WorldSeed selects the hidden world: the teacher's weights and the
	// users' profiles. Generators with different Seeds and the same
	// WorldSeed draw different samples from the same distribution (use them
	// for train and test files). The default value is 1.
	WorldSeed uint64 `yaml:"world_seed" zero:"refused"`
	// CTR is the target mean click probability; the teacher's bias is
	// calibrated to it. 0 < CTR < 1. The default value is 0.2.
	CTR float64 `yaml:"ctr" zero:"refused"`
	// LogitStd is the standard deviation of the teacher's logit around its
	// bias: the strength of the signal, which sets the Bayes AUC.
	// 0 < LogitStd <= 10. The default value is 1.5.
	LogitStd float64 `yaml:"logit_std" zero:"refused"`
	// RankScale sets how fast the teacher's hidden weights shrink with an
	// id's Zipf rank k: by 1/sqrt(1 + k/RankScale). Popular ids carry the
	// signal and rare ones are nearly neutral, as in real logs, so that a
	// model can learn most of the teacher from ids it has seen often.
	// The default value is 10.
	RankScale float64 `yaml:"rank_scale" zero:"refused"`
	// InteractionShare is the share of the logit's variance that comes
	// from the user x item interaction term; the rest comes from the
	// per-field weights. A negative value disables the interaction.
	// InteractionShare < 1. The default value is 0.15.
	InteractionShare float64 `yaml:"interaction_share" zero:"refused"`
	// DriftLifetime turns on vocabulary drift (see the package
	// documentation): the id of each Zipf rank of each field is drawn for
	// DriftLifetime samples and then replaced by a new id of the same rank,
	// the ranks' replacements being staggered. The active vocabulary of a
	// field is a window of Vocab ids over an unbounded id space that
	// advances by Vocab ids every DriftLifetime samples (Vocab/DriftLifetime
	// new ids per sample): new ids keep appearing, old ones stop being
	// drawn, and most new ids are rare ones of the long tail. 0 <=
	// DriftLifetime <= 2^40. The default value is 0: no drift, every id is
	// drawn for the whole stream.
	DriftLifetime int64 `yaml:"drift_lifetime"`
}

// Default values of Config.
const (
	DefaultFields           = 23
	DefaultUserFields       = 10
	DefaultMeanBag          = 3.0
	DefaultVocab            = 100000
	DefaultZipfS            = 1.1
	DefaultSamplesPerUser   = 20.0
	DefaultUsers            = 100000
	DefaultCTR              = 0.2
	DefaultLogitStd         = 1.5
	DefaultInteractionShare = 0.15
	DefaultRankScale        = 10.0
)

// MaxDriftLifetime bounds Config.DriftLifetime (2^40 samples).
const MaxDriftLifetime = 1 << 40

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
	setInt(&c.Fields, DefaultFields)
	setInt(&c.UserFields, DefaultUserFields)
	setFloat(&c.MeanBag, DefaultMeanBag)
	setInt(&c.Vocab, DefaultVocab)
	setFloat(&c.ZipfS, DefaultZipfS)
	setFloat(&c.SamplesPerUser, DefaultSamplesPerUser)
	setInt(&c.Users, DefaultUsers)
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.WorldSeed == 0 {
		c.WorldSeed = 1
	}
	setFloat(&c.CTR, DefaultCTR)
	setFloat(&c.LogitStd, DefaultLogitStd)
	setFloat(&c.InteractionShare, DefaultInteractionShare)
	setFloat(&c.RankScale, DefaultRankScale)
}

// Validate reports every problem of c at once; call EnsureDefaults first.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...))
	}
	if c.Fields < 2 || c.Fields > reader.MaxField {
		bad("fields %d not in [2, %d]", c.Fields, reader.MaxField)
	}
	if c.UserFields < 1 || c.UserFields >= c.Fields {
		bad("user fields %d not in [1, fields %d)", c.UserFields, c.Fields)
	}
	if !(c.MeanBag >= 1 && c.MeanBag <= 64) {
		bad("mean bag %v not in [1, 64]", c.MeanBag)
	}
	if c.Vocab < 1 || int64(c.Vocab) > 1<<32 {
		bad("vocab %d not in [1, 2^32]", c.Vocab)
	}
	if !(c.ZipfS > 1 && c.ZipfS <= 100) {
		bad("zipf exponent %v not in (1, 100]", c.ZipfS)
	}
	if !(c.SamplesPerUser >= 1 && c.SamplesPerUser <= 1e9) {
		bad("samples per user %v not in [1, 1e9]", c.SamplesPerUser)
	}
	if c.Users < 1 {
		bad("users %d < 1", c.Users)
	}
	if !(c.CTR > 0 && c.CTR < 1) {
		bad("ctr %v not in (0, 1)", c.CTR)
	}
	if !(c.LogitStd > 0 && c.LogitStd <= 10) {
		bad("logit std %v not in (0, 10]", c.LogitStd)
	}
	if !(c.RankScale > 0 && c.RankScale <= 1e12) {
		bad("rank scale %v not in (0, 1e12]", c.RankScale)
	}
	if !(c.InteractionShare < 1) {
		bad("interaction share %v not < 1", c.InteractionShare)
	}
	if c.DriftLifetime < 0 || c.DriftLifetime > MaxDriftLifetime {
		bad("drift lifetime %d not in [0, 2^40]", c.DriftLifetime)
	}
	return errors.Join(errs...)
}
