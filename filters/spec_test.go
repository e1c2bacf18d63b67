package filters

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestEnsureDefaults(t *testing.T) {
	var none Spec
	none.EnsureDefaults()
	if none != (Spec{Kind: KindNone}) {
		t.Errorf("zero spec with defaults = %+v, want kind none and nothing else", none)
	}
	prob := Spec{Kind: KindProbability, P: 0.5}
	prob.EnsureDefaults()
	if prob != (Spec{Kind: KindProbability, P: 0.5}) {
		t.Errorf("probability spec with defaults = %+v: count fields were filled", prob)
	}
	count := Spec{Kind: KindCount, N: 3}
	count.EnsureDefaults()
	want := Spec{Kind: KindCount, N: 3, FalsePositiveRate: 0.01, Generations: 2, MaxPartitionBytes: 16384}
	if count != want {
		t.Errorf("count spec with defaults = %+v, want %+v", count, want)
	}
	for _, s := range []Spec{none, prob, count} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

// TestValidateReportsEveryProblem checks that each bad spec gets exactly
// the problems listed, each wrapping ErrBadPolicy, and good specs none.
func TestValidateReportsEveryProblem(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		spec Spec
		want []string // one substring per problem
	}{
		{Spec{}, nil},
		{Spec{Kind: "cnt"}, []string{`kind "cnt" is not one of`}},
		{Spec{Kind: KindProbability}, []string{"p 0 must be in (0, 1]"}},
		{Spec{Kind: KindProbability, P: 1.5}, []string{"p 1.5 must be in"}},
		{Spec{Kind: KindProbability, P: -0.1}, []string{"p -0.1 must be in"}},
		{Spec{Kind: KindProbability, P: nan}, []string{"p NaN must be in"}},
		{Spec{Kind: KindProbability, P: 1}, nil},
		{Spec{Kind: KindProbability, P: 1e-9}, nil},
		{Spec{Kind: KindProbability, P: 0.5, N: 2}, []string{"n 2 is set, but only kind count"}},
		{Spec{Kind: KindNone, P: 0.2, N: 3, Generations: 2},
			[]string{"p 0.2 is set", "n 3 is set", "generations is set, but only kind count"}},
		{Spec{Kind: KindCount, N: 1}, nil},
		{Spec{Kind: KindCount, N: 1, MaxPartitionBytes: 1}, nil}, // N = 1 keeps no state
		{Spec{Kind: KindCount, N: MaxN}, nil},
		{Spec{Kind: KindCount}, []string{"n 0 must be in [1, 64]"}},
		{Spec{Kind: KindCount, N: MaxN + 1}, []string{"n 65 must be in"}},
		{Spec{Kind: KindCount, N: 2, FalsePositiveRate: 1}, []string{"false_positive_rate 1 must be in (0, 1)"}},
		{Spec{Kind: KindCount, N: 2, FalsePositiveRate: nan}, []string{"false_positive_rate NaN"}},
		{Spec{Kind: KindCount, N: 2, FalsePositiveRate: -0.5}, []string{"false_positive_rate -0.5"}},
		{Spec{Kind: KindCount, N: 2, Generations: MaxGenerations + 1}, []string{"generations 17 must be in [1, 16]"}},
		{Spec{Kind: KindCount, N: 2, MaxPartitionBytes: MaxPartitionBytesLimit + 1}, []string{"max_partition_bytes 1073741825 must be in"}},
		{Spec{Kind: KindCount, N: 3, MaxPartitionBytes: 100},
			[]string{"max_partition_bytes 100 is too small for false_positive_rate 0.01"}},
		{Spec{Kind: KindCount, P: 0.5, N: -1, FalsePositiveRate: 1.5, Generations: -1, MaxPartitionBytes: -5},
			[]string{"p 0.5 is set", "n -1 must be", "false_positive_rate 1.5", "generations -1", "max_partition_bytes -5"}},
	} {
		t.Run(fmt.Sprintf("%+v", tc.spec), func(t *testing.T) {
			s := tc.spec
			s.EnsureDefaults()
			checkProblems(t, s.Validate(), tc.want)
		})
	}
}

// checkProblems checks that err joins exactly one error per entry of want,
// each containing it and wrapping ErrBadPolicy.
func checkProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate = %v, want nil", err)
		}
		return
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate = %v, want %d joined problems", err, len(want))
	}
	got := j.Unwrap()
	if len(got) != len(want) {
		t.Fatalf("Validate gave %d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i, e := range got {
		if !errors.Is(e, ErrBadPolicy) {
			t.Errorf("problem %d does not wrap ErrBadPolicy: %v", i, e)
		}
		if !strings.Contains(e.Error(), want[i]) {
			t.Errorf("problem %d = %q, want it to contain %q", i, e, want[i])
		}
	}
}

// estimate is the standard estimate of a Bloom filter's false-positive
// rate with m bits and k hashes holding c IDs.
func estimate(m, k, c int) float64 {
	return math.Pow(1-math.Exp(-float64(k)*float64(c)/float64(m)), float64(k))
}

// TestSizing checks the geometry against the budget and against a plain
// search: no k in [1, maxHashes] holds one ID more within the rate.
func TestSizing(t *testing.T) {
	for _, s := range []Spec{
		{Kind: KindCount, N: 2},
		{Kind: KindCount, N: 3, Generations: 3, FalsePositiveRate: 0.001},
		{Kind: KindCount, N: 5, MaxPartitionBytes: 1000, FalsePositiveRate: 0.2},
		{Kind: KindCount, N: 2, Generations: 1, MaxPartitionBytes: 1 << 20, FalsePositiveRate: 1e-6},
	} {
		s.EnsureDefaults()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		z := s.Sizing()
		filters := z.Levels * z.Generations
		if z.Levels != s.N-1 || z.Generations != s.Generations || z.FilterBits%64 != 0 {
			t.Errorf("%+v: sizing %+v", s, z)
		}
		if z.PartitionBytes != filters*z.FilterBits/8 || z.PartitionBytes > s.MaxPartitionBytes ||
			z.PartitionBytes <= s.MaxPartitionBytes-8*filters {
			t.Errorf("%+v: %d bytes of Bloom bits for a budget of %d", s, z.PartitionBytes, s.MaxPartitionBytes)
		}
		if z.FilterRate != s.FalsePositiveRate/float64(s.Generations) {
			t.Errorf("%+v: filter rate %v", s, z.FilterRate)
		}
		target := sizingMargin * z.FilterRate
		if e := estimate(z.FilterBits, z.Hashes, z.Capacity); e > target {
			t.Errorf("%+v: %d IDs in %d bits with %d hashes: rate %v above %v", s, z.Capacity, z.FilterBits, z.Hashes, e, target)
		}
		for k := 1; k <= maxHashes; k++ {
			if e := estimate(z.FilterBits, k, z.Capacity+1); e <= target {
				t.Errorf("%+v: %d hashes hold %d IDs within %v, more than the sizing's %d", s, k, z.Capacity+1, target, z.Capacity)
			}
		}
	}
}

// TestMinPartitionBytes checks the bound Validate names: the smallest
// budget that gives MinCapacity is valid, one word less per filter is not.
func TestMinPartitionBytes(t *testing.T) {
	for _, s := range []Spec{
		{Kind: KindCount, N: 2},
		{Kind: KindCount, N: 3, FalsePositiveRate: 0.001, Generations: 4},
		{Kind: KindCount, N: 9, FalsePositiveRate: 0.5},
	} {
		s.EnsureDefaults()
		least := s.minPartitionBytes()
		s.MaxPartitionBytes = least
		if err := s.Validate(); err != nil || s.Sizing().Capacity < MinCapacity {
			t.Errorf("%+v: %v, capacity %d", s, err, s.Sizing().Capacity)
		}
		s.MaxPartitionBytes = least - 8*(s.N-1)*s.Generations
		err := s.Validate()
		checkProblems(t, err, []string{fmt.Sprintf("at least %d bytes are needed", least)})
	}
}
