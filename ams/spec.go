package ams

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/xdlgo/xps/filters"
)

// Optimizer names accepted by OptimizerSpec.Name.
const (
	OptSGD      = "sgd"
	OptAdagrad  = "adagrad"
	OptAdam     = "adam"
	OptFTRL     = "ftrl"
	OptMomentum = "momentum"
)

// MaxDim is the largest row width of a sparse table.
const MaxDim = 1 << 16

// Defaults of OptimizerSpec and InitSpec.
const (
	DefaultOptimizer          = OptAdagrad
	DefaultLR                 = 0.01
	DefaultBeta1              = 0.9
	DefaultBeta2              = 0.999
	DefaultEps                = 1e-8
	DefaultInitialAccumulator = 0.1
	DefaultFTRLBeta           = 1
	DefaultMomentum           = 0.9
	DefaultInitKind           = InitNormal
	DefaultInitScale          = 0.01
)

// OptimizerSpec selects and configures a server-side optimizer. It backs the
// YAML config, command-line flags and the Go API alike.
//
// As in pebble's Options, a zero field means "use the default":
// EnsureDefaults fills zero fields and Validate checks the result, so a
// hyper-parameter whose default is non-zero (Beta1, Momentum, ...) cannot be
// set to exactly 0; use a tiny value instead.
type OptimizerSpec struct {
	// Name is the update rule: sgd, adagrad, adam, ftrl or momentum.
	//
	// The default value is "adagrad".
	Name string `yaml:"name"`
	// LR is the learning rate (FTRL's alpha).
	//
	// The default value is 0.01.
	LR float32 `yaml:"lr" zero:"refused"`
	// Beta1 is Adam's first-moment decay, in [0, 1).
	//
	// The default value is 0.9.
	Beta1 float32 `yaml:"beta1" zero:"refused; a tiny value such as 1e-12 is Adam without momentum"`
	// Beta2 is Adam's second-moment decay, in [0, 1).
	//
	// The default value is 0.999.
	Beta2 float32 `yaml:"beta2" zero:"refused"`
	// Eps is added to the root of the second moment by Adam and Adagrad.
	//
	// The default value is 1e-8.
	Eps float32 `yaml:"eps" zero:"refused"`
	// InitialAccumulator is the starting value of Adagrad's sum of squared
	// gradients (TensorFlow's and XDL's initial_accumulator_value).
	//
	// The default value is 0.1.
	InitialAccumulator float32 `yaml:"initial_accumulator" zero:"refused; a tiny value such as 1e-12 starts the accumulator near zero"`
	// L1 is FTRL's L1 regularisation strength (>= 0).
	//
	// The default value is 0.
	L1 float32 `yaml:"l1"`
	// L2 is FTRL's L2 regularisation strength (>= 0).
	//
	// The default value is 0.
	L2 float32 `yaml:"l2"`
	// Beta is FTRL's beta, the learning-rate smoothing term (>= 0; FTRL
	// needs Beta > 0 or L2 > 0).
	//
	// The default value is 1.
	Beta float32 `yaml:"beta" zero:"refused; a tiny value such as 1e-12"`
	// Momentum is the momentum optimizer's decay, in [0, 1).
	//
	// The default value is 0.9.
	Momentum float32 `yaml:"momentum" zero:"refused; for no momentum use the optimizer sgd"`
}

// EnsureDefaults fills every zero field with its default.
func (s *OptimizerSpec) EnsureDefaults() {
	if s.Name == "" {
		s.Name = DefaultOptimizer
	}
	setDefault(&s.LR, DefaultLR)
	setDefault(&s.Beta1, DefaultBeta1)
	setDefault(&s.Beta2, DefaultBeta2)
	setDefault(&s.Eps, DefaultEps)
	setDefault(&s.InitialAccumulator, DefaultInitialAccumulator)
	setDefault(&s.Beta, DefaultFTRLBeta)
	setDefault(&s.Momentum, DefaultMomentum)
}

func setDefault(p *float32, v float32) {
	if *p == 0 {
		*p = v
	}
}

// Validate reports every problem of the spec at once, each wrapping
// ErrBadSpec, joined with errors.Join; nil when the spec is valid. It
// checks the spec as it is: call EnsureDefaults first.
func (s OptimizerSpec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: optimizer: "+format, append([]any{ErrBadSpec}, args...)...))
	}
	switch s.Name {
	case OptSGD, OptAdagrad, OptAdam, OptFTRL, OptMomentum:
	default:
		bad("name %q is not one of sgd, adagrad, adam, ftrl, momentum", s.Name)
	}
	if !(s.LR > 0) || isInf(s.LR) {
		bad("lr %v must be positive and finite", s.LR)
	}
	if !(s.Beta1 >= 0 && s.Beta1 < 1) {
		bad("beta1 %v must be in [0, 1)", s.Beta1)
	}
	if !(s.Beta2 >= 0 && s.Beta2 < 1) {
		bad("beta2 %v must be in [0, 1)", s.Beta2)
	}
	if !(s.Eps > 0) || isInf(s.Eps) {
		bad("eps %v must be positive and finite", s.Eps)
	}
	if !(s.InitialAccumulator >= 0) || isInf(s.InitialAccumulator) {
		bad("initial_accumulator %v must be non-negative and finite", s.InitialAccumulator)
	}
	if !(s.L1 >= 0) || isInf(s.L1) {
		bad("l1 %v must be non-negative and finite", s.L1)
	}
	if !(s.L2 >= 0) || isInf(s.L2) {
		bad("l2 %v must be non-negative and finite", s.L2)
	}
	if !(s.Beta >= 0) || isInf(s.Beta) {
		bad("beta %v must be non-negative and finite", s.Beta)
	}
	if s.Name == OptFTRL && s.Beta == 0 && s.L2 == 0 {
		bad("ftrl needs beta > 0 or l2 > 0")
	}
	if !(s.Momentum >= 0 && s.Momentum < 1) {
		bad("momentum %v must be in [0, 1)", s.Momentum)
	}
	return errors.Join(errs...)
}

func isInf(x float32) bool { return math.IsInf(float64(x), 0) }

func isFinite(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// New applies the defaults to a copy of s, validates it and returns the
// optimizer it describes.
func (s OptimizerSpec) New() (Optimizer, error) {
	s.EnsureDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch s.Name {
	case OptSGD:
		return SGD{LR: s.LR}, nil
	case OptAdagrad:
		return Adagrad{LR: s.LR, InitialAccumulator: s.InitialAccumulator, Eps: s.Eps}, nil
	case OptAdam:
		return Adam{LR: s.LR, Beta1: s.Beta1, Beta2: s.Beta2, Eps: s.Eps}, nil
	case OptFTRL:
		return FTRL{Alpha: s.LR, Beta: s.Beta, L1: s.L1, L2: s.L2}, nil
	default: // OptMomentum; Validate rejected anything else
		return Momentum{LR: s.LR, Momentum: s.Momentum}, nil
	}
}

// InitSpec says how a new row of a sparse table is initialised. The initial
// row of an ID is a pure function of the spec and the ID (see Fill).
type InitSpec struct {
	// Kind is zeros, constant (every value is Value), uniform (in
	// [-Scale, Scale)) or normal (mean 0, standard deviation Scale).
	//
	// The default value is "normal".
	Kind string `yaml:"kind"`
	// Value is the constant of the constant kind.
	//
	// The default value is 0.
	Value float32 `yaml:"value"`
	// Scale is the half-width of the uniform kind and the standard deviation
	// of the normal kind (>= 0).
	//
	// The default value is 0.01.
	Scale float32 `yaml:"scale" zero:"refused; for rows that start at zero use init.kind zeros"`
	// Seed selects the random stream. Tables with the same seed give an ID
	// the same initial row; give tables distinct seeds to decorrelate them.
	//
	// The default value is 0.
	Seed uint64 `yaml:"seed"`
}

// EnsureDefaults fills every zero field with its default.
func (s *InitSpec) EnsureDefaults() {
	if s.Kind == "" {
		s.Kind = DefaultInitKind
	}
	setDefault(&s.Scale, DefaultInitScale)
}

// Validate reports every problem of the spec at once (see
// OptimizerSpec.Validate).
func (s InitSpec) Validate() error {
	var errs []error
	if _, ok := parseInitKind(s.Kind); !ok {
		errs = append(errs, fmt.Errorf("%w: init: kind %q is not one of zeros, constant, uniform, normal", ErrBadSpec, s.Kind))
	}
	if !isFinite(s.Value) {
		errs = append(errs, fmt.Errorf("%w: init: value %v must be finite", ErrBadSpec, s.Value))
	}
	if !(s.Scale >= 0) || isInf(s.Scale) {
		errs = append(errs, fmt.Errorf("%w: init: scale %v must be non-negative and finite", ErrBadSpec, s.Scale))
	}
	return errors.Join(errs...)
}

// TableSpec describes one sparse embedding table.
type TableSpec struct {
	// Name identifies the table in requests, partitioning and snapshots.
	//
	// Required; there is no default.
	Name string `yaml:"name"`
	// Dim is the width of a row, in (0, MaxDim].
	//
	// Required; there is no default.
	Dim int `yaml:"dim"`
	// Optimizer is the server-side update rule of the table.
	//
	// The default value is the zero OptimizerSpec with its defaults
	// (adagrad, lr 0.01, initial accumulator 0.1).
	Optimizer OptimizerSpec `yaml:"optimizer"`
	// Init initialises rows created by a pull or a push.
	//
	// The default value is the zero InitSpec with its defaults (normal,
	// scale 0.01, seed 0).
	Init InitSpec `yaml:"init"`
	// Admission decides which never-seen IDs earn a row (package
	// filters): an ID not admitted reads as the row it would have had
	// (Init's values for it) and its gradients are dropped.
	//
	// The default value is kind none: every ID gets a row.
	Admission filters.Spec `yaml:"admission"`
	// Expiry decides which rows sweeps remove (package filters): by
	// idle time in samples or wall time, hits, or an expression.
	//
	// The default value is no rule: rows stay (but for the budget).
	Expiry filters.ExpirySpec `yaml:"expiry"`
	// Budget bounds the memory of the table's rows on each shard: past it,
	// the least recently updated rows are evicted (see Budget).
	//
	// The default value is the zero Budget: no bound.
	Budget Budget `yaml:"budget"`
	// Storage is where the table's rows live: "memory" (every row in
	// DRAM; the budget drops the rows it evicts) or "tiered" (the budget
	// bounds the rows in DRAM, and the rows it evicts go to the shard's
	// cold tier on local disk, a Pebble DB, and come back when pulled or
	// pushed: nothing is dropped). A tiered table needs a Budget.
	//
	// The default value is empty, which is "memory".
	Storage string `yaml:"storage"`
	// TierDir is the directory under which each shard keeps the cold
	// tier of a tiered table (one Pebble DB per shard and directory, in a
	// subdirectory named by the shard's ID). It must lie under one of the
	// tier directories the shard was started with (cmd/ams -tier-dir,
	// shard.Options.TierDirs); empty: the first of those.
	//
	// The default value is empty.
	TierDir string `yaml:"tier_dir"`
	// NonFinite is what the table does with a gradient row a push
	// carries, or a row of values a warm start loads (shard.LoadRows),
	// that holds a NaN or ±Inf: "refuse" (a pushed row is not applied:
	// the row keeps its values, optimizer state and statistics, and a
	// missing row is not created; a load is refused whole) or "clip"
	// (each NaN becomes 0 and each ±Inf ±NonFiniteBound, and the row is
	// applied or loaded). Either way the rows are counted
	// (Counters.NonFiniteRefused, NonFiniteClipped). See the package
	// doc, "Non-finite gradients and values".
	//
	// The default value is "refuse".
	NonFinite string `yaml:"nonfinite"`
	// NonFiniteBound is the magnitude clip gives ±Inf, in (0,
	// MaxNonFiniteBound]: small enough that a clipped gradient's square
	// stays finite in the optimizers' accumulators.
	//
	// The default value is 1.
	NonFiniteBound float32 `yaml:"nonfinite_bound" zero:"refused; a tiny value such as 1e-12 clips an Inf to nearly 0"`
}

// Storage kinds of TableSpec.Storage.
const (
	StorageMemory = "memory"
	StorageTiered = "tiered"
)

// Tiered reports whether the table keeps cold rows on disk.
func (s TableSpec) Tiered() bool { return s.Storage == StorageTiered }

// Budget bounds the rows a shard holds of one table, in rows, in bytes
// (each row costs Table.RowBytes: its values, optimizer state and
// statistics, and its index entry), or both: a shard that holds more
// evicts the rows updated least recently (an approximate LRU: CLOCK over
// the rows' last-update steps) until it is within. Each stripe holds the
// budget's share of its stripes. A table of several shards may hold up
// to their count times the budget. Zero fields set no bound.
type Budget struct {
	// Rows is the most rows of the table one shard holds.
	Rows int64 `yaml:"rows"`
	// Bytes is the most bytes of the table's rows one shard holds.
	Bytes int64 `yaml:"bytes"`
}

// IsZero reports whether b sets no bound.
func (b Budget) IsZero() bool { return b.Rows == 0 && b.Bytes == 0 }

// RowsFor returns the rows a stripe of n holds within the budget, for
// rows of rowBytes bytes: the smaller bound, at least one row; 0 when
// there is no bound.
func (b Budget) RowsFor(n, rowBytes int) int64 {
	limit := int64(0)
	if b.Rows > 0 {
		limit = (b.Rows + int64(n) - 1) / int64(n)
	}
	if b.Bytes > 0 {
		byBytes := max(1, b.Bytes/int64(rowBytes)/int64(n))
		if limit == 0 || byBytes < limit {
			limit = byBytes
		}
	}
	return limit
}

// EnsureDefaults fills every zero field with its default.
func (s *TableSpec) EnsureDefaults() {
	s.Optimizer.EnsureDefaults()
	s.Init.EnsureDefaults()
	s.Admission.EnsureDefaults()
	s.Expiry.EnsureDefaults()
	if s.NonFinite == "" {
		s.NonFinite = DefaultNonFinite
	}
	setDefault(&s.NonFiniteBound, DefaultNonFiniteBound)
}

// Validate reports every problem of the spec at once (see
// OptimizerSpec.Validate); problems of the nested specs are prefixed with
// the table's name.
func (s TableSpec) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, fmt.Errorf("%w: table: name is empty", ErrBadSpec))
	}
	if s.Dim <= 0 || s.Dim > MaxDim {
		errs = append(errs, fmt.Errorf("%w: table %q: dim %d must be in [1, %d]", ErrBadSpec, s.Name, s.Dim, MaxDim))
	}
	errs = appendPrefixed(errs, fmt.Sprintf("table %q", s.Name), s.Optimizer.Validate())
	errs = appendPrefixed(errs, fmt.Sprintf("table %q", s.Name), s.Init.Validate())
	adm := s.Admission
	adm.EnsureDefaults()
	if s.Budget.Rows < 0 || s.Budget.Bytes < 0 {
		errs = append(errs, fmt.Errorf("%w: table %q: budget: rows %d and bytes %d must not be negative (0: no bound)", ErrBadSpec, s.Name, s.Budget.Rows, s.Budget.Bytes))
	}
	errs = append(errs, s.validateStorage()...)
	errs = append(errs, s.validateNonFinite()...)
	exp := s.Expiry
	exp.EnsureDefaults()
	for _, e := range slices.Concat(appendPrefixed(nil, "admission", adm.Validate()), appendPrefixed(nil, "expiry", exp.Validate())) {
		errs = append(errs, fmt.Errorf("%w: table %q: %w", ErrBadSpec, s.Name, e))
	}
	return errors.Join(errs...)
}

// validateStorage checks Storage and TierDir.
func (s TableSpec) validateStorage() []error {
	switch s.Storage {
	case "", StorageMemory:
		if s.TierDir != "" {
			return []error{fmt.Errorf("%w: table %q: tier_dir %q is set but storage is %q (tier_dir is for storage: tiered)", ErrBadSpec, s.Name, s.TierDir, StorageMemory)}
		}
	case StorageTiered:
		if s.Budget.IsZero() {
			return []error{fmt.Errorf("%w: table %q: storage tiered needs a budget (rows or bytes): the rows DRAM holds, the rest go to disk", ErrBadSpec, s.Name)}
		}
	default:
		return []error{fmt.Errorf("%w: table %q: storage %q is not one of memory, tiered", ErrBadSpec, s.Name, s.Storage)}
	}
	return nil
}

// DenseSpec describes a flat dense parameter vector (the DenseNet's
// weights), split across shards by DenseRange. Its initial values come from
// a worker (DenseVar.Set), not from an initializer.
type DenseSpec struct {
	// Name identifies the variable.
	//
	// Required; there is no default.
	Name string `yaml:"name"`
	// Size is the length of the whole vector (all shards together), > 0.
	//
	// Required; there is no default.
	Size int `yaml:"size"`
	// Optimizer is the server-side update rule of the variable.
	//
	// The default value is the zero OptimizerSpec with its defaults.
	Optimizer OptimizerSpec `yaml:"optimizer"`
	// Schedule scales Optimizer's learning rate by the variable's step.
	//
	// The default value scales nothing.
	Schedule LRSchedule `yaml:"schedule"`
}

// EnsureDefaults fills every zero field with its default.
func (s *DenseSpec) EnsureDefaults() {
	s.Optimizer.EnsureDefaults()
	s.Schedule.EnsureDefaults()
}

// Validate reports every problem of the spec at once (see
// OptimizerSpec.Validate).
func (s DenseSpec) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, fmt.Errorf("%w: dense: name is empty", ErrBadSpec))
	}
	if s.Size <= 0 {
		errs = append(errs, fmt.Errorf("%w: dense %q: size %d must be positive", ErrBadSpec, s.Name, s.Size))
	}
	errs = appendPrefixed(errs, fmt.Sprintf("dense %q", s.Name), s.Optimizer.Validate())
	errs = appendPrefixed(errs, fmt.Sprintf("dense %q", s.Name), s.Schedule.Validate())
	return errors.Join(errs...)
}

// appendPrefixed appends each error joined in err to errs, with prefix
// added to its message, keeping it matchable with errors.Is.
func appendPrefixed(errs []error, prefix string, err error) []error {
	if err == nil {
		return errs
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			errs = append(errs, fmt.Errorf("%s: %w", prefix, e))
		}
		return errs
	}
	return append(errs, fmt.Errorf("%s: %w", prefix, err))
}
