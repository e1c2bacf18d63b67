package ams

import (
	"errors"
	"fmt"
	"math"
)

// The decays of an LRSchedule.
const (
	DecayNone        = "none"
	DecayLinear      = "linear"
	DecayCosine      = "cosine"
	DecayExponential = "exponential"
)

// LRSchedule scales a dense variable's learning rate by its step t (the
// updates applied, from 1): a linear warm-up over the first WarmupSteps,
// then a decay over DecaySteps more, never below MinScale:
//
//	scale(t) = t / WarmupSteps                                  t <= WarmupSteps
//	u = t - WarmupSteps
//	none:        1
//	linear:      max(MinScale, 1 - u/DecaySteps)
//	cosine:      MinScale + (1-MinScale) * (1 + cos(π min(u, DecaySteps)/DecaySteps)) / 2
//	exponential: max(MinScale, 0.5^(u/DecaySteps))              (DecaySteps: the half-life)
//
// The zero value scales nothing: no warm-up, no decay.
type LRSchedule struct {
	// WarmupSteps ramps the rate up linearly over the first steps.
	//
	// The default value is 0: none.
	WarmupSteps int64 `yaml:"warmup_steps"`
	// Decay is none, linear, cosine or exponential.
	//
	// The default value is none.
	Decay string `yaml:"decay"`
	// DecaySteps is the length of the decay (the half-life for
	// exponential); required with a decay.
	DecaySteps int64 `yaml:"decay_steps"`
	// MinScale is the floor of the decay, a fraction of the rate in [0, 1).
	//
	// The default value is 0.
	MinScale float32 `yaml:"min_scale"`
}

// On reports whether the schedule scales anything.
func (s LRSchedule) On() bool { return s.WarmupSteps > 0 || (s.Decay != "" && s.Decay != DecayNone) }

// EnsureDefaults fills the zero fields with their defaults.
func (s *LRSchedule) EnsureDefaults() {
	if s.Decay == "" {
		s.Decay = DecayNone
	}
}

// Validate reports every problem of the schedule at once.
func (s LRSchedule) Validate() error {
	var errs []error
	switch s.Decay {
	case DecayNone:
		if s.DecaySteps != 0 {
			errs = append(errs, fmt.Errorf("%w: schedule: decay_steps %d without a decay", ErrBadSpec, s.DecaySteps))
		}
	case DecayLinear, DecayCosine, DecayExponential:
		if s.DecaySteps <= 0 {
			errs = append(errs, fmt.Errorf("%w: schedule: decay %s needs decay_steps > 0, not %d", ErrBadSpec, s.Decay, s.DecaySteps))
		}
	default:
		errs = append(errs, fmt.Errorf("%w: schedule: decay %q is not one of none, linear, cosine, exponential", ErrBadSpec, s.Decay))
	}
	if s.WarmupSteps < 0 {
		errs = append(errs, fmt.Errorf("%w: schedule: warmup_steps %d is negative", ErrBadSpec, s.WarmupSteps))
	}
	if !(s.MinScale >= 0 && s.MinScale < 1) {
		errs = append(errs, fmt.Errorf("%w: schedule: min_scale %v is not in [0, 1)", ErrBadSpec, s.MinScale))
	}
	return errors.Join(errs...)
}

// Scale returns the learning rate's factor at step t >= 1.
func (s LRSchedule) Scale(t int64) float32 {
	if s.WarmupSteps > 0 && t <= s.WarmupSteps {
		return float32(t) / float32(s.WarmupSteps)
	}
	u := float64(t - s.WarmupSteps)
	lo := float64(s.MinScale)
	d := float64(s.DecaySteps)
	switch s.Decay {
	case DecayLinear:
		return float32(max(lo, 1-u/d))
	case DecayCosine:
		return float32(lo + (1-lo)*(1+math.Cos(math.Pi*min(u, d)/d))/2)
	case DecayExponential:
		return float32(max(lo, math.Pow(0.5, u/d)))
	}
	return 1
}

// stepWords is the state a scheduled dense variable adds after its
// optimizer's: its step, a uint64 in two float32 words (their bits).
const stepWords = 2

func getStep(w []float32) int64 {
	return int64(uint64(math.Float32bits(w[0])) | uint64(math.Float32bits(w[1]))<<32)
}

func setStep(w []float32, t int64) {
	w[0], w[1] = math.Float32frombits(uint32(t)), math.Float32frombits(uint32(uint64(t)>>32))
}
