package filters

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/expr-lang/expr/vm"
)

// ErrBadExpiry: an invalid ExpirySpec. It wraps ErrBadPolicy, so
// errors.Is(err, ErrBadPolicy) holds for it too; ExpirySpec.Validate joins
// one wrapped ErrBadExpiry per problem.
var ErrBadExpiry error = badExpiry{}

type badExpiry struct{}

func (badExpiry) Error() string { return "filters: bad expiry policy" }
func (badExpiry) Unwrap() error { return ErrBadPolicy }

// Defaults and limits of an ExpirySpec.
const (
	// DefaultMaxExpireFraction is the default ExpirySpec.MaxExpireFraction:
	// a lap expires at most 10% of the rows its table had when it began.
	DefaultMaxExpireFraction = 0.1
	// MinExpirePerLap is the floor of the cap of a lap, whatever the
	// fraction: a table of fewer than 1/MaxExpireFraction rows (10 at the
	// default) may still lose one row per lap, so that tiny tables expire
	// too, one row a lap.
	MinExpirePerLap = 1
)

// ExpirySpec is the expiry policy of one sparse table: which rows a sweep
// removes. It backs the YAML config, command-line flags and the Go API
// alike, and is comparable with == (it holds only strings and numbers).
//
// A row expires when any rule says so (see the package doc, "Expiry").
// A zero rule field turns its rule off; a spec with no rule expires
// nothing (but for the embedder's ExpireFunc). As in Spec, EnsureDefaults
// fills zero fields that have defaults, and Validate checks the result.
//
// Durations (TTL, MinHitsTTL) are in Go's syntax, as "72h", "90m" or
// "1h30m", and may begin with a number of days, as "7d", "1.5d" or
// "1d12h"; a day is 24 hours.
type ExpirySpec struct {
	// TTLSamples expires a row idle (not pushed to) for more than this
	// many trained samples, on the shard's sample clock. Zero turns the
	// rule off; negative is a problem.
	TTLSamples int64 `yaml:"ttl_samples"`
	// TTL expires a row idle for longer than this duration of wall time
	// since its last update. Empty turns the rule off; a duration that
	// does not parse, or is not positive, is a problem.
	TTL string `yaml:"ttl"`
	// MinHits, with MinHitsTTLSamples or MinHitsTTL (one or both), is a
	// second, shorter TTL for rows seen rarely: a row with fewer than
	// MinHits hits expires when idle for more than MinHitsTTLSamples
	// samples, or for longer than MinHitsTTL. Zero turns the rule off;
	// negative is a problem, and so is MinHits without either TTL, or
	// either TTL without MinHits.
	MinHits int `yaml:"min_hits"`
	// MinHitsTTLSamples is the min-hits rule's TTL on the sample clock.
	// When TTLSamples is set too, it must be shorter: the rule would
	// never expire a row that TTLSamples keeps.
	MinHitsTTLSamples int64 `yaml:"min_hits_ttl_samples"`
	// MinHitsTTL is the min-hits rule's TTL in wall time. When TTL is set
	// too, it must be shorter.
	MinHitsTTL string `yaml:"min_hits_ttl"`
	// Expr is an expression (github.com/expr-lang/expr) over the row's
	// statistics that returns a bool; true expires the row. Its
	// variables: hits (int), age (a duration: the wall time since the
	// row's last update), idle_samples (int: trained samples since its
	// last update) and norm (float: the L2 norm of the row's values). A
	// string literal compared with age is a duration:
	//
	//	hits < 3 && age > "72h"
	//	age > duration("7d") || norm < 1e-4
	//
	// An expression that does not compile, is not of type bool, names an
	// unknown variable or holds a malformed duration is a problem. The
	// clock builtins (now, date, timezone) are disabled. Empty turns the
	// rule off.
	Expr string `yaml:"expr"`
	// MaxExpireFraction caps the rows one lap of the table's sweep may
	// expire, as a fraction of the rows the table had when the lap began,
	// in (0, 1]; the cap is at least MinExpirePerLap rows. So one bad
	// setting (a TTL in seconds meant in hours, an expression that is
	// always true) removes at most 10% of a table per lap at the
	// default, not the whole table at once. The cap counts every
	// eviction of the lap, the ExpireFunc's too; it may be set on a spec
	// without rules, for a table that only the ExpireFunc expires.
	//
	// The default value is 0.1.
	MaxExpireFraction float64 `yaml:"max_expire_fraction" zero:"refused"`
}

// EnsureDefaults fills every zero field that has a default.
func (s *ExpirySpec) EnsureDefaults() {
	if s.MaxExpireFraction == 0 {
		s.MaxExpireFraction = DefaultMaxExpireFraction
	}
}

// Enabled tells whether a rule is set: TTLSamples, TTL, MinHits or Expr.
func (s ExpirySpec) Enabled() bool {
	return s.TTLSamples != 0 || s.TTL != "" || s.MinHits != 0 || s.Expr != ""
}

// Validate reports every problem of the spec at once, each wrapping
// ErrBadExpiry (and so ErrBadPolicy), joined with errors.Join; nil when
// the spec is valid. It compiles Expr, so a compile error's text is in
// the problem. It checks the spec as it is: call EnsureDefaults first.
func (s ExpirySpec) Validate() error {
	_, err := s.compile()
	return err
}

// RowStats are the statistics of one row that the rules read.
type RowStats struct {
	// Hits is the row's hit count as the shard keeps it.
	Hits uint32
	// Age is the wall time since the row's last update: the sweep's now
	// minus the row's last-update second. It may be negative after the
	// clock went back; the rules take such a row as just updated.
	Age time.Duration
	// IdleSamples is the trained samples since the row's last update:
	// the shard's sample clock now minus its value at the update.
	IdleSamples int64
	// Norm is the L2 norm of the row's values. The caller computes it
	// only when Expiry.NeedsNorm; otherwise it is ignored.
	Norm float32
}

// ExpireFunc is the embedder's expiry hook, a Go function the shard takes
// in its options: true expires the row. A row expires when any rule of
// the table's ExpirySpec or the hook says so; the shard calls the hook
// only for rows that Expiry.Expired keeps, so it is not called for rows
// the rules expire. It is called by the stripe owners, concurrently for
// different stripes: it must be safe for concurrent use and must not
// block. Its evictions count against the lap's cap (Lap).
type ExpireFunc func(table string, r RowStats) bool

// Expiry is a compiled ExpirySpec: Expired decides on one row.
//
// An Expiry is owned by one goroutine, the stripe owner, which makes every
// call; it has no lock and is not safe for concurrent use (it reuses one
// expression machine and environment). Each stripe owner compiles its own.
type Expiry struct {
	spec ExpirySpec

	// The rules' thresholds: a rule that is off has the largest value,
	// which no row exceeds.
	idleMax, minIdleMax int64
	ageMax, minAgeMax   time.Duration
	minHits             uint64 // 0: the min-hits rule is off

	prog    *vm.Program // nil without Expr
	norm    bool
	machine vm.VM
	env     exprEnv

	evalErrs uint64
	lastErr  error
}

// NewExpiry compiles spec. It applies the defaults to a copy of spec and
// fails with the problems of Validate when it is invalid.
func NewExpiry(spec ExpirySpec) (*Expiry, error) {
	spec.EnsureDefaults()
	return spec.compile()
}

// Spec returns the expiry's spec, defaults applied.
func (e *Expiry) Spec() ExpirySpec { return e.spec }

// Enabled tells whether the spec sets a rule: without one, Expired is
// always false.
func (e *Expiry) Enabled() bool { return e.spec.Enabled() }

// NeedsNorm tells whether the expression reads norm: only then must the
// caller compute RowStats.Norm.
func (e *Expiry) NeedsNorm() bool { return e.norm }

// Expired tells whether the rules expire a row of statistics r. It checks
// the TTLs first (no allocation), the expression last and only when it is
// set. An expression that fails at run time (an integer division by zero,
// say) keeps the row; EvalErrors counts such failures.
func (e *Expiry) Expired(r RowStats) bool {
	if r.IdleSamples > e.idleMax || r.Age > e.ageMax {
		return true
	}
	if uint64(r.Hits) < e.minHits && (r.IdleSamples > e.minIdleMax || r.Age > e.minAgeMax) {
		return true
	}
	if e.prog == nil {
		return false
	}
	return e.eval(r)
}

// eval runs the expression on r.
func (e *Expiry) eval(r RowStats) bool {
	e.env = exprEnv{Hits: int(r.Hits), Age: r.Age, IdleSamples: int(r.IdleSamples), Norm: float64(r.Norm)}
	out, err := e.machine.Run(e.prog, &e.env)
	if err != nil {
		e.evalErrs++
		e.lastErr = err
		return false
	}
	b, _ := out.(bool) // AsBool: the compiler checked the type
	return b
}

// EvalErrors returns how many times the expression failed at run time
// (each time, the row was kept) and the last failure.
func (e *Expiry) EvalErrors() (n uint64, last error) { return e.evalErrs, e.lastErr }

// MaxPerLap returns the cap of a lap over a table that had rowsAtLapStart
// rows when the lap began: floor(MaxExpireFraction x rows), at least
// MinExpirePerLap, at most rows (0 for an empty table).
func (e *Expiry) MaxPerLap(rowsAtLapStart int) int {
	return maxPerLap(e.spec.MaxExpireFraction, rowsAtLapStart)
}

func maxPerLap(frac float64, rows int) int {
	if rows <= 0 || !(frac > 0) {
		return 0
	}
	n := int(math.Floor(min(frac, 1) * float64(rows)))
	return min(rows, max(n, MinExpirePerLap))
}

// compile checks the spec as it is and compiles it.
func (s ExpirySpec) compile() (*Expiry, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadExpiry}, args...)...))
	}
	e := &Expiry{spec: s, idleMax: math.MaxInt64, minIdleMax: math.MaxInt64,
		ageMax: math.MaxInt64, minAgeMax: math.MaxInt64}
	s.compileTTLs(e, bad)
	if s.Expr != "" {
		p, err := compileExpr(s.Expr)
		if err != nil {
			bad("expr %q: %v", s.Expr, err)
		}
		e.prog, e.norm = p.prog, p.norm
	}
	if !(s.MaxExpireFraction > 0 && s.MaxExpireFraction <= 1) {
		bad("max_expire_fraction %v must be in (0, 1]", s.MaxExpireFraction)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return e, nil
}

// compileTTLs checks the TTL and min-hits fields, reporting problems
// through bad, and sets e's thresholds.
func (s ExpirySpec) compileTTLs(e *Expiry, bad func(string, ...any)) {
	if s.TTLSamples < 0 {
		bad("ttl_samples %d is negative (0 turns the rule off)", s.TTLSamples)
	} else if s.TTLSamples > 0 {
		e.idleMax = s.TTLSamples
	}
	ttl, ttlOK := parseTTL("ttl", s.TTL, bad)
	if ttlOK && ttl > 0 {
		e.ageMax = ttl
	}
	if s.MinHits < 0 {
		bad("min_hits %d is negative (0 turns the rule off)", s.MinHits)
	}
	if s.MinHitsTTLSamples < 0 {
		bad("min_hits_ttl_samples %d is negative", s.MinHitsTTLSamples)
	}
	minTTL, minTTLOK := parseTTL("min_hits_ttl", s.MinHitsTTL, bad)
	switch minSet := s.MinHitsTTLSamples != 0 || s.MinHitsTTL != ""; {
	case s.MinHits > 0 && !minSet:
		bad("min_hits %d is set without min_hits_ttl_samples or min_hits_ttl: set the TTL of rows with fewer hits", s.MinHits)
	case s.MinHits == 0 && minSet:
		bad("min_hits_ttl_samples or min_hits_ttl is set, but min_hits is not")
	}
	if s.TTLSamples > 0 && s.MinHitsTTLSamples >= s.TTLSamples {
		bad("min_hits_ttl_samples %d is not shorter than ttl_samples %d: the min-hits rule would expire no row that ttl_samples keeps",
			s.MinHitsTTLSamples, s.TTLSamples)
	}
	if ttlOK && minTTLOK && ttl > 0 && minTTL >= ttl {
		bad("min_hits_ttl %q is not shorter than ttl %q: the min-hits rule would expire no row that ttl keeps", s.MinHitsTTL, s.TTL)
	}
	if s.MinHits > 0 {
		e.minHits = uint64(s.MinHits)
		if s.MinHitsTTLSamples > 0 {
			e.minIdleMax = s.MinHitsTTLSamples
		}
		if minTTLOK && minTTL > 0 {
			e.minAgeMax = minTTL
		}
	}
}

// parseTTL parses the duration field name: 0 and true when it is empty
// (off), the duration and true when it is positive; otherwise it reports
// the problem through bad and returns false.
func parseTTL(name, value string, bad func(string, ...any)) (time.Duration, bool) {
	if value == "" {
		return 0, true
	}
	d, err := parseAge(value)
	switch {
	case err != nil:
		bad("%s: %v", name, err)
		return 0, false
	case d <= 0:
		bad("%s %q must be positive (leave it empty to turn the rule off)", name, value)
		return 0, false
	}
	return d, true
}

// Lap counts the evictions of one lap of a table's sweep (one pass over
// its rows, made a slice at a time) against the lap's cap. Like the
// Expiry it comes from, it is owned by the stripe owner.
//
// The sweep calls Begin(rows) when a lap begins, with the table's rows at
// that moment; then, for each row that a rule or the hook expires,
// Allow, and evicts the row only on true; End when the lap is over. The
// zero Lap allows no eviction.
type Lap struct {
	frac    float64
	budget  int
	evicted int
	capped  int
}

// LapStats are the counts of a lap that End returns.
type LapStats struct {
	// Budget is the lap's cap: MaxPerLap of the rows at its start.
	Budget int
	// Evicted is the evictions Allow allowed, at most Budget.
	Evicted int
	// Capped is the evictions Allow refused: rows that expired once the
	// cap was reached, kept until a later lap. Not zero means the cap
	// bit; lasting high counts point at a bad setting.
	Capped int
}

// NewLap returns a Lap under the expiry's cap, before its first Begin.
func (e *Expiry) NewLap() Lap { return Lap{frac: e.spec.MaxExpireFraction} }

// Begin starts a lap over a table of rowsAtLapStart rows: its cap is
// MaxPerLap(rowsAtLapStart), and its counts start at zero. A lap not
// ended is abandoned.
func (l *Lap) Begin(rowsAtLapStart int) {
	l.budget, l.evicted, l.capped = maxPerLap(l.frac, rowsAtLapStart), 0, 0
}

// Allow tells whether one more row may be evicted in this lap, and counts
// it: true while the lap's evictions are under its cap, false once the
// cap is reached (and outside a lap).
func (l *Lap) Allow() bool {
	if l.evicted < l.budget {
		l.evicted++
		return true
	}
	l.capped++
	return false
}

// End closes the lap and returns its counts. Until the next Begin, Allow
// is false.
func (l *Lap) End() LapStats {
	st := LapStats{Budget: l.budget, Evicted: l.evicted, Capped: l.capped}
	l.budget, l.evicted, l.capped = 0, 0, 0
	return st
}
