package slide

import (
	"errors"
	"fmt"
	"math"
)

// Params are the shape of a layer's hash tables: L tables of K-bit codes
// with buckets of at most R neurons.
type Params struct {
	K, L, R int
}

// TuneOptions are the constants of Tune. Zero fields take their defaults.
type TuneOptions struct {
	// C1 sets the number of tables per bucket fraction: L = C1*s*2^K, so
	// that the L buckets of a query hold about C1*s*d neurons. The default
	// value is 1.
	C1 float64 `yaml:"c1"`
	// C2 bounds the cost: K*L + s*d <= C2*d. The default value is 0.1.
	C2 float64 `yaml:"c2"`
	// MaxL is the most tables. The default value is 256.
	MaxL int `yaml:"max_l"`
	// MaxK is the most bits per code. The default value is 20
	// (2^20 buckets per table); it must be at most 24.
	MaxK int `yaml:"max_k"`
	// MinR is the smallest bucket capacity. The default value is 8.
	MinR int `yaml:"min_r"`
	// RFactor sets the bucket capacity to RFactor times the expected
	// bucket size d/2^K. The default value is 2.
	RFactor float64 `yaml:"r_factor"`
}

// Default values of TuneOptions.
const (
	DefaultC1      = 1.0
	DefaultC2      = 0.1
	DefaultMaxL    = 256
	DefaultMaxK    = 20
	DefaultMinR    = 8
	DefaultRFactor = 2.0
)

// EnsureDefaults fills the zero fields with their defaults.
func (o *TuneOptions) EnsureDefaults() {
	if o.C1 == 0 {
		o.C1 = DefaultC1
	}
	if o.C2 == 0 {
		o.C2 = DefaultC2
	}
	if o.MaxL == 0 {
		o.MaxL = DefaultMaxL
	}
	if o.MaxK == 0 {
		o.MaxK = DefaultMaxK
	}
	if o.MinR == 0 {
		o.MinR = DefaultMinR
	}
	if o.RFactor == 0 {
		o.RFactor = DefaultRFactor
	}
}

// Validate reports every out-of-range field (after EnsureDefaults).
func (o *TuneOptions) Validate() error {
	var errs []error
	if !(o.C1 > 0) || math.IsInf(o.C1, 0) {
		errs = append(errs, fmt.Errorf("C1 %v not positive and finite", o.C1))
	}
	if !(o.C2 > 0) || math.IsInf(o.C2, 0) {
		errs = append(errs, fmt.Errorf("C2 %v not positive and finite", o.C2))
	}
	if o.MaxL < 1 || o.MaxL > maxL {
		errs = append(errs, fmt.Errorf("MaxL %d not in [1, %d]", o.MaxL, maxL))
	}
	if o.MaxK < 1 || o.MaxK > maxK {
		errs = append(errs, fmt.Errorf("MaxK %d not in [1, %d]", o.MaxK, maxK))
	}
	if o.MinR < 1 {
		errs = append(errs, fmt.Errorf("MinR %d < 1", o.MinR))
	}
	if !(o.RFactor > 0) || math.IsInf(o.RFactor, 0) {
		errs = append(errs, fmt.Errorf("RFactor %v not positive and finite", o.RFactor))
	}
	return errors.Join(errs...)
}

// Tune picks the table shape for d neurons at sparsity s (the fraction of
// neurons a query should find), as BOLT's autotuning does; see "Autotuning"
// in the package documentation for the derivation. Over K = 1..MaxK, with
// L(K) = round(C1*s*2^K), it returns the K with the largest L(K) >= 1 such
// that L(K) <= MaxL and K*L(K) + s*d <= C2*d, and R = max(MinR,
// ceil(RFactor*d/2^K)). When no K qualifies (s*d alone exceeds the budget,
// s >= C2, or d is tiny) it returns the cheapest shape: the smallest K with
// L(K) = 1, and L = 1. Zero options take their defaults; d < 1 or s outside
// (0, 1] gives the zero Params.
func Tune(d int, s float64, o TuneOptions) Params {
	o.EnsureDefaults()
	if d < 1 || !(s > 0 && s <= 1) {
		return Params{}
	}
	maxK := min(o.MaxK, maxK)
	bestK, bestL := 0, 0
	firstK := 0
	for k := 1; k <= maxK; k++ {
		l := int(math.Round(o.C1 * s * float64(int(1)<<k)))
		if l < 1 {
			continue
		}
		if firstK == 0 {
			firstK = k
		}
		if l > o.MaxL || float64(k*l)+s*float64(d) > o.C2*float64(d) {
			// Both K*L and L grow with K: no larger K fits either.
			break
		}
		bestK, bestL = k, l
	}
	if bestK == 0 {
		bestK, bestL = firstK, 1
		if bestK == 0 {
			bestK = maxK
		}
	}
	r := max(o.MinR, int(math.Ceil(o.RFactor*float64(d)/float64(int(1)<<bestK))))
	return Params{K: bestK, L: bestL, R: r}
}
