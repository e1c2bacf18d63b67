package filters

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"
	"testing/quick"
	"time"
)

const day = 24 * time.Hour

func mustExpiry(t testing.TB, spec ExpirySpec) *Expiry {
	t.Helper()
	e, err := NewExpiry(spec)
	if err != nil {
		t.Fatalf("NewExpiry(%+v): %v", spec, err)
	}
	return e
}

func TestExpiryEnsureDefaults(t *testing.T) {
	var s ExpirySpec
	if s.Enabled() {
		t.Error("the zero spec is enabled")
	}
	s.EnsureDefaults()
	if s != (ExpirySpec{MaxExpireFraction: 0.1}) {
		t.Errorf("zero spec with defaults = %+v, want max_expire_fraction 0.1 and nothing else", s)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	e := mustExpiry(t, ExpirySpec{})
	if e.Enabled() || e.NeedsNorm() || e.Spec() != s {
		t.Errorf("expiry of the zero spec: enabled %v, needs norm %v, spec %+v", e.Enabled(), e.NeedsNorm(), e.Spec())
	}
	old := RowStats{Age: math.MaxInt64, IdleSamples: math.MaxInt64}
	if e.Expired(old) {
		t.Error("a spec without rules expired a row")
	}
	for _, on := range []ExpirySpec{{TTLSamples: 1}, {TTL: "1h"}, {MinHits: 1}, {Expr: "true"}} {
		if !on.Enabled() {
			t.Errorf("%+v is not enabled", on)
		}
	}
}

// TestExpiryRules checks each rule at its boundaries, and their
// combinations: a row expires when any rule says so.
func TestExpiryRules(t *testing.T) {
	type row struct {
		r    RowStats
		want bool
	}
	for _, tc := range []struct {
		spec ExpirySpec
		rows []row
	}{
		{ExpirySpec{TTLSamples: 100}, []row{
			{RowStats{IdleSamples: 100, Age: 1000 * day}, false},
			{RowStats{IdleSamples: 101}, true},
			{RowStats{IdleSamples: -5, Hits: 0}, false},
		}},
		{ExpirySpec{TTL: "72h"}, []row{
			{RowStats{Age: 72 * time.Hour, IdleSamples: math.MaxInt64}, false},
			{RowStats{Age: 72*time.Hour + 1}, true},
			{RowStats{Age: -1000 * day}, false},
		}},
		{ExpirySpec{TTL: "7d"}, []row{{RowStats{Age: 7 * day}, false}, {RowStats{Age: 7*day + time.Second}, true}}},
		{ExpirySpec{TTLSamples: 100, MinHits: 3, MinHitsTTLSamples: 10}, []row{
			{RowStats{Hits: 2, IdleSamples: 10}, false},
			{RowStats{Hits: 2, IdleSamples: 11}, true},
			{RowStats{Hits: 3, IdleSamples: 11}, false},
			{RowStats{Hits: 3, IdleSamples: 101}, true},
			{RowStats{Hits: 0, IdleSamples: 11}, true},
		}},
		{ExpirySpec{MinHits: 5, MinHitsTTL: "1h", MinHitsTTLSamples: 1000}, []row{
			{RowStats{Hits: 4, Age: time.Hour}, false},
			{RowStats{Hits: 4, Age: time.Hour + 1}, true},
			{RowStats{Hits: 4, IdleSamples: 1001}, true},
			{RowStats{Hits: 5, Age: 1000 * day, IdleSamples: 1 << 40}, false},
		}},
		{ExpirySpec{Expr: `hits < 3 && age > "72h"`}, []row{
			{RowStats{Hits: 2, Age: 73 * time.Hour}, true},
			{RowStats{Hits: 3, Age: 73 * time.Hour}, false},
			{RowStats{Hits: 2, Age: 72 * time.Hour}, false},
			{RowStats{Hits: 0, Age: 72*time.Hour + 1}, true},
		}},
		{ExpirySpec{Expr: `age >= duration("1d12h") || idle_samples > 1e6`}, []row{
			{RowStats{Age: 36 * time.Hour}, true},
			{RowStats{Age: 35 * time.Hour, IdleSamples: 1e6}, false},
			{RowStats{IdleSamples: 1e6 + 1}, true},
		}},
		{ExpirySpec{Expr: `"90m" > duration("1h") && age * 2 > "3h"`}, []row{
			{RowStats{Age: 90*time.Minute + 1}, true},
			{RowStats{Age: 90 * time.Minute}, false},
		}},
		{ExpirySpec{Expr: `norm < 0.01`}, []row{
			{RowStats{Norm: 0.009}, true},
			{RowStats{Norm: 0.011}, false},
			{RowStats{Norm: float32(math.NaN())}, false},
		}},
		// Any rule expires: the TTL, the short TTL of rare rows, or the
		// expression.
		{ExpirySpec{TTLSamples: 1000, TTL: "30d", MinHits: 2, MinHitsTTL: "2d", Expr: "norm == 0 && hits > 10"}, []row{
			{RowStats{Hits: 50, Norm: 1, IdleSamples: 999, Age: 29 * day}, false},
			{RowStats{Hits: 50, Norm: 1, IdleSamples: 1001}, true},
			{RowStats{Hits: 50, Norm: 1, Age: 31 * day}, true},
			{RowStats{Hits: 1, Norm: 1, Age: 3 * day}, true},
			{RowStats{Hits: 2, Norm: 1, Age: 3 * day}, false},
			{RowStats{Hits: 11, Norm: 0}, true},
			{RowStats{Hits: 10, Norm: 0}, false},
		}},
	} {
		e := mustExpiry(t, tc.spec)
		for _, r := range tc.rows {
			if got := e.Expired(r.r); got != r.want {
				t.Errorf("%+v: Expired(%+v) = %v, want %v", tc.spec, r.r, got, r.want)
			}
		}
		if n, err := e.EvalErrors(); n != 0 {
			t.Errorf("%+v: %d errors at run time, the last %v", tc.spec, n, err)
		}
	}
}

func TestExpiryNeedsNorm(t *testing.T) {
	for expr, want := range map[string]bool{
		"":                            false,
		`hits < 3 && age > "72h"`:     false,
		`norm < 1e-3`:                 true,
		`hits > 2 || norm*norm < 0.5`: true,
		`let n = norm; n < 1`:         true,
	} {
		if got := mustExpiry(t, ExpirySpec{Expr: expr}).NeedsNorm(); got != want {
			t.Errorf("%q: NeedsNorm = %v, want %v", expr, got, want)
		}
	}
}

// refExpired is the reference loop of the package doc, for specs without
// an expression.
func refExpired(s ExpirySpec, r RowStats) bool {
	ttl, _ := parseAge(s.TTL)
	minTTL, _ := parseAge(s.MinHitsTTL)
	return s.TTLSamples > 0 && r.IdleSamples > s.TTLSamples ||
		s.TTL != "" && r.Age > ttl ||
		int64(r.Hits) < int64(s.MinHits) &&
			(s.MinHitsTTLSamples > 0 && r.IdleSamples > s.MinHitsTTLSamples || s.MinHitsTTL != "" && r.Age > minTTL)
}

// TestExpiryReference checks Expired against refExpired on random valid
// specs and rows near their thresholds.
func TestExpiryReference(t *testing.T) {
	ttls := []string{"", "1h", "90m", "2d", "36h"}
	check := func(seed int64) bool {
		rng := rand.New(rand.NewSource(seed))
		s := ExpirySpec{TTLSamples: rng.Int63n(3) * 500, TTL: ttls[rng.Intn(len(ttls))]}
		if rng.Intn(2) == 0 {
			s.MinHits = 1 + rng.Intn(5)
			s.MinHitsTTLSamples = rng.Int63n(2) * (1 + rng.Int63n(400))
			if s.MinHitsTTLSamples == 0 || rng.Intn(2) == 0 {
				s.MinHitsTTL = []string{"30m", "45m"}[rng.Intn(2)]
			}
		}
		e, err := NewExpiry(s)
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		for range 200 {
			r := RowStats{Hits: uint32(rng.Intn(8)), IdleSamples: rng.Int63n(1200) - 100,
				Age: time.Duration(rng.Int63n(int64(3*day))) - time.Hour}
			if e.Expired(r) != refExpired(s, r) {
				t.Errorf("%+v: Expired(%+v) = %v, the reference says otherwise", s, r, e.Expired(r))
				return false
			}
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 500}); err != nil {
		t.Error(err)
	}
}

// TestExpiryValidate checks that each bad spec gets exactly the problems
// listed, each wrapping ErrBadExpiry and ErrBadPolicy, and good specs none.
func TestExpiryValidate(t *testing.T) {
	for _, tc := range []struct {
		spec ExpirySpec
		want []string // one substring per problem
	}{
		{ExpirySpec{}, nil},
		{ExpirySpec{MaxExpireFraction: 1}, nil}, // a cap for a table expired by the hook alone
		{ExpirySpec{TTLSamples: 1, TTL: "1.5d", MinHits: 1, MinHitsTTL: "1d", Expr: "age > \"1d\" && norm > 0"}, nil},
		{ExpirySpec{TTLSamples: -1}, []string{"ttl_samples -1 is negative"}},
		{ExpirySpec{TTL: "72"}, []string{`ttl: "72" is not a duration`}},
		{ExpirySpec{TTL: "3 days"}, []string{`ttl: "3 days" is not a duration`}},
		{ExpirySpec{TTL: "-1h"}, []string{`ttl "-1h" must be positive`}},
		{ExpirySpec{TTL: "0s"}, []string{`ttl "0s" must be positive (leave it empty`}},
		{ExpirySpec{MinHits: 3}, []string{"min_hits 3 is set without min_hits_ttl_samples or min_hits_ttl"}},
		{ExpirySpec{MinHitsTTL: "1h"}, []string{"min_hits_ttl_samples or min_hits_ttl is set, but min_hits is not"}},
		{ExpirySpec{MinHits: -2, MinHitsTTLSamples: 5},
			[]string{"min_hits -2 is negative"}},
		{ExpirySpec{TTLSamples: 100, MinHits: 2, MinHitsTTLSamples: 100},
			[]string{"min_hits_ttl_samples 100 is not shorter than ttl_samples 100"}},
		{ExpirySpec{TTL: "1d", MinHits: 2, MinHitsTTL: "48h"}, []string{`min_hits_ttl "48h" is not shorter than ttl "1d"`}},
		{ExpirySpec{MaxExpireFraction: 1.5}, []string{"max_expire_fraction 1.5 must be in (0, 1]"}},
		{ExpirySpec{MaxExpireFraction: -0.1}, []string{"max_expire_fraction -0.1 must be in"}},
		{ExpirySpec{MaxExpireFraction: math.NaN()}, []string{"max_expire_fraction NaN must be in"}},
		{ExpirySpec{Expr: "hits <"}, []string{`expr "hits <": unexpected token EOF`}},
		// Four problems at once, as Declare lists them.
		{ExpirySpec{TTLSamples: -5, TTL: "soon", Expr: "hits", MaxExpireFraction: 2},
			[]string{"ttl_samples -5 is negative", `ttl: "soon" is not a duration`,
				`expr "hits": expected bool, but got int`, "max_expire_fraction 2 must be in"}},
		{ExpirySpec{TTLSamples: -1, TTL: "x", MinHits: -1, MinHitsTTLSamples: -1, MinHitsTTL: "-3d", Expr: "age > \"3q\"", MaxExpireFraction: 7},
			[]string{"ttl_samples -1", `ttl: "x"`, "min_hits -1", "min_hits_ttl_samples -1", `min_hits_ttl "-3d" must be positive`,
				`"3q" is not a duration`, "max_expire_fraction 7"}},
	} {
		s := tc.spec
		s.EnsureDefaults()
		err := s.Validate()
		checkProblems(t, err, tc.want)
		for _, e := range joined(err) {
			if !errors.Is(e, ErrBadExpiry) || !strings.HasPrefix(e.Error(), "filters: bad expiry policy: ") {
				t.Errorf("problem %q does not wrap ErrBadExpiry", e)
			}
		}
		if _, nerr := NewExpiry(tc.spec); (nerr == nil) != (err == nil) {
			t.Errorf("%+v: NewExpiry = %v, Validate = %v", tc.spec, nerr, err)
		}
	}
}

func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return nil
}

// TestExpiryExprRefused checks that expressions that could not run, or
// could fail at run time on a duration, are refused when compiled.
func TestExpiryExprRefused(t *testing.T) {
	for expr, want := range map[string]string{
		`hits < 3 &&`:                      "unexpected token EOF",
		`hits + 1`:                         "expected bool, but got int",
		`age`:                              "expected bool, but got time.Duration",
		`"yes"`:                            "expected bool, but got string",
		`clicks > 3`:                       "unknown name clicks",
		`age > "72"`:                       `"72" is not a duration`,
		`"3x" < age`:                       `"3x" is not a duration`,
		`age > duration("1dd")`:            `"1dd" is not a duration`,
		`age > duration(string(hits))`:     "duration takes one string literal",
		`age > 3600`:                       "mismatched types time.Duration and int",
		`now() - age > date("2024-01-01")`: "unknown name now",
		`age > "1h" + "1m"`:                "mismatched types time.Duration and string",
	} {
		_, err := NewExpiry(ExpirySpec{Expr: expr})
		if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: NewExpiry = %v, want a bad policy containing %q", expr, err, want)
		}
	}
}

// TestExpiryEvalError checks that an expression failing at run time keeps
// the row and is counted.
func TestExpiryEvalError(t *testing.T) {
	e := mustExpiry(t, ExpirySpec{Expr: "idle_samples % hits == 0"})
	if e.Expired(RowStats{Hits: 0, IdleSamples: 10}) {
		t.Error("a failed expression expired the row")
	}
	if !e.Expired(RowStats{Hits: 5, IdleSamples: 10}) {
		t.Error("the expression did not expire a row after a failure")
	}
	if n, err := e.EvalErrors(); n != 1 || err == nil || !strings.Contains(err.Error(), "divide by zero") {
		t.Errorf("EvalErrors = %d, %v; want 1, a division by zero", n, err)
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"72h": 72 * time.Hour, "90m": 90 * time.Minute, "1h30m": 90 * time.Minute, "0": 0, "-2h": -2 * time.Hour,
		"7d": 7 * day, "1.5d": 36 * time.Hour, "1d12h": 36 * time.Hour, "0d": 0, "+1d": day, "-1d1h": -25 * time.Hour,
		"106751d": 106751 * day, "1d1.5h": day + 90*time.Minute,
	} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "1", "72", "7 d", "d7", "1e3d", "infd", "1d-1h", "1d+1h", "1dd", "1d2d", "1d3",
		"106752d", "106751d24h", "--1d", ".d", "1..5d", "7days"} {
		if got, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q) = %v, want an error", in, got)
		}
	}
}

func TestMaxPerLap(t *testing.T) {
	for _, tc := range []struct {
		frac       float64
		rows, want int
	}{
		{0.1, 0, 0}, {0.1, -3, 0}, {0.1, 1, 1}, {0.1, 9, 1}, {0.1, 10, 1}, {0.1, 19, 1}, {0.1, 20, 2},
		{0.1, 1_000_000, 100_000}, {1, 7, 7}, {0.5, 3, 1}, {0.5, 1, 1}, {1e-9, 1 << 40, 1099},
	} {
		e := mustExpiry(t, ExpirySpec{MaxExpireFraction: tc.frac})
		if got := e.MaxPerLap(tc.rows); got != tc.want {
			t.Errorf("fraction %v: MaxPerLap(%d) = %d, want %d", tc.frac, tc.rows, got, tc.want)
		}
	}
}

// TestLap runs a sweep of three laps over a table whose rows all expire:
// each lap evicts its cap, counts the rest as capped, and the table
// shrinks by at most the fraction per lap.
func TestLap(t *testing.T) {
	e := mustExpiry(t, ExpirySpec{Expr: "true", MaxExpireFraction: 0.25})
	lap := e.NewLap()
	if lap.Allow() {
		t.Error("Allow before Begin")
	}
	rows := 100
	for _, want := range []LapStats{{25, 25, 75}, {18, 18, 57}, {14, 14, 43}} {
		lap.Begin(rows)
		for range rows {
			if e.Expired(RowStats{}) && lap.Allow() {
				rows--
			}
		}
		if got := lap.End(); got != want {
			t.Errorf("lap = %+v, want %+v", got, want)
		}
		if lap.Allow() {
			t.Error("Allow after End")
		}
	}
	var zero Lap
	zero.Begin(100)
	if zero.Allow() {
		t.Error("the zero Lap allowed an eviction")
	}
	tiny := e.NewLap()
	tiny.Begin(2)
	if !tiny.Allow() || tiny.Allow() || tiny.End() != (LapStats{Budget: 1, Evicted: 1, Capped: 1}) {
		t.Error("a lap over 2 rows does not allow exactly MinExpirePerLap")
	}
}

// TestExpiredAllocs checks that the TTL and min-hits rules allocate
// nothing, and reports the expression's allocations.
func TestExpiredAllocs(t *testing.T) {
	e := mustExpiry(t, ExpirySpec{TTLSamples: 1000, TTL: "7d", MinHits: 3, MinHitsTTL: "1d"})
	r := RowStats{Hits: 5, Age: time.Hour, IdleSamples: 10}
	if n := testing.AllocsPerRun(1000, func() { e.Expired(r) }); n != 0 {
		t.Errorf("TTL rules: %v allocations per call, want 0", n)
	}
	x := mustExpiry(t, ExpirySpec{Expr: `hits < 3 && age > "72h"`})
	r.Age = 100 * time.Hour
	t.Logf("expression: %v allocations per call", testing.AllocsPerRun(1000, func() { x.Expired(r) }))
}

// FuzzExpired checks that no spec and no row make NewExpiry or Expired
// panic, and that a spec NewExpiry takes is valid.
func FuzzExpired(f *testing.F) {
	f.Add(int64(100), "72h", 3, int64(10), "1h", `hits < 3 && age > "72h"`, uint32(2), int64(1e12), int64(50), float32(0.5))
	f.Add(int64(0), "7d", 0, int64(0), "", `norm < 0.01 || idle_samples / hits > 2`, uint32(0), int64(-1), int64(0), float32(0))
	f.Add(int64(-1), "1d1d", -1, int64(-1), "x", `age > duration(string(hits))`, uint32(math.MaxUint32),
		int64(math.MinInt64), int64(math.MaxInt64), float32(math.Inf(1)))
	f.Add(int64(0), "", 0, int64(0), "", `idle_samples % (hits - 1) == 0 && 1..hits | all(# > 0)`, uint32(1), int64(0), int64(5), float32(1))
	f.Fuzz(func(t *testing.T, ttlSamples int64, ttl string, minHits int, minSamples int64, minTTL, expr string,
		hits uint32, age, idle int64, norm float32) {
		s := ExpirySpec{TTLSamples: ttlSamples, TTL: ttl, MinHits: minHits, MinHitsTTLSamples: minSamples,
			MinHitsTTL: minTTL, Expr: expr}
		e, err := NewExpiry(s)
		if err != nil {
			if !errors.Is(err, ErrBadExpiry) {
				t.Fatalf("NewExpiry(%+v) = %v, not ErrBadExpiry", s, err)
			}
			return
		}
		s.EnsureDefaults()
		if err := s.Validate(); err != nil {
			t.Fatalf("NewExpiry took %+v, which Validate refuses: %v", s, err)
		}
		r := RowStats{Hits: hits, Age: time.Duration(age), IdleSamples: idle, Norm: norm}
		if e.Expired(r) != e.Expired(r) {
			t.Fatalf("%+v: Expired(%+v) changed its mind", s, r)
		}
	})
}
