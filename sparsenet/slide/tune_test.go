package slide

import (
	"testing"
)

func TestTune(t *testing.T) {
	tests := []struct {
		name string
		d    int
		s    float64
		o    TuneOptions
		want Params
	}{
		// Amazon-670K at s = 0.005: s*d = 3350, budget 67009; K = 15 gives
		// L = round(163.84) = 164 (K*L = 2460); K = 16 would need L = 328 > 256.
		// R = ceil(2*670091/32768) = 41.
		{"amazon670k", 670091, 0.005, TuneOptions{}, Params{K: 15, L: 164, R: 41}},
		// d = 100K, s = 0.005: K = 15, L = 164; R = ceil(6.1) = 7 -> MinR 8.
		{"100k", 100000, 0.005, TuneOptions{}, Params{K: 15, L: 164, R: 8}},
		// d = 2000, s = 0.05: s*d = 100, budget 200: K = 7 gives L = 6
		// (K*L = 42); K = 8 gives L = 13, K*L = 104 > 100.
		{"2000", 2000, 0.05, TuneOptions{}, Params{K: 7, L: 6, R: 32}},
		// d = 2000, s = 0.005: s*d = 10, budget 200 -> K*L <= 190: K = 11,
		// L = 10 (110); K = 12, L = 20 (240) does not fit.
		{"2000-sparse", 2000, 0.005, TuneOptions{}, Params{K: 11, L: 10, R: 8}},
		// The MaxL cap binds before the cost: d = 10M, s = 0.001: K = 17,
		// L = 131; K = 18 would give L = 262.
		{"10M", 10000000, 0.001, TuneOptions{}, Params{K: 17, L: 131, R: 153}},
		// A lower MaxL picks a smaller K.
		{"maxL64", 670091, 0.005, TuneOptions{MaxL: 64}, Params{K: 13, L: 41, R: 164}},
		// C1 = 2 doubles L for a given K: K = 14 gives L = 164.
		{"c1=2", 670091, 0.005, TuneOptions{C1: 2}, Params{K: 14, L: 164, R: 82}},
		// Nothing fits when s >= C2: the cheapest shape, L = 1 at the first
		// K with round(s*2^K) >= 1.
		{"dense-ish", 1000, 0.2, TuneOptions{}, Params{K: 2, L: 1, R: 500}},
		{"tiny", 10, 0.05, TuneOptions{}, Params{K: 4, L: 1, R: 8}},
		{"bad-d", 0, 0.1, TuneOptions{}, Params{}},
		{"bad-s", 100, 0, TuneOptions{}, Params{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Tune(tc.d, tc.s, tc.o)
			if got != tc.want {
				t.Fatalf("Tune(%d, %v) = %+v, want %+v", tc.d, tc.s, got, tc.want)
			}
			if got.L == 0 || tc.want.L == 1 {
				return
			}
			o := tc.o
			o.EnsureDefaults()
			// The constraints hold, and the next K breaks one of them.
			if cost := float64(got.K*got.L) + tc.s*float64(tc.d); cost > o.C2*float64(tc.d) || got.L > o.MaxL {
				t.Fatalf("cost %v over budget %v or L %d > %d", cost, o.C2*float64(tc.d), got.L, o.MaxL)
			}
			next := Tune(tc.d, tc.s, o)
			if next != got {
				t.Fatalf("defaults filled: %+v != %+v", next, got)
			}
		})
	}
}

func TestTuneOptionsValidate(t *testing.T) {
	o := TuneOptions{C1: -1, C2: -1, MaxL: -1, MaxK: 99, MinR: -1, RFactor: -2}
	err := o.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	var ok TuneOptions
	ok.EnsureDefaults()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}
