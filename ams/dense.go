package ams

import "fmt"

// DenseVar is the part [lo, hi) of a flat dense parameter vector that one
// shard holds (see DenseRange), with its optimizer state. The optimizer
// treats the part as one long row, so Adam keeps one step count for it.
//
// Its values start unset: a worker sends the initial values (Set), or a
// snapshot restores them (Load); until then Apply fails with
// ErrNotInitialized.
//
// A DenseVar is not safe for concurrent use.
type DenseVar struct {
	spec   DenseSpec
	lo, hi int
	opt    Optimizer
	values []float32
	state  []float32
	inited bool
	// refused counts the gradients Apply refused for a NaN or ±Inf.
	refused uint64
}

// NewDenseVar returns the part [lo, hi) of the vector spec describes,
// uninitialised. It applies the defaults to a copy of spec and fails with
// an error wrapping ErrBadSpec when the spec or the range is invalid.
func NewDenseVar(spec DenseSpec, lo, hi int) (*DenseVar, error) {
	spec.EnsureDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if lo < 0 || lo > hi || hi > spec.Size {
		return nil, fmt.Errorf("%w: dense %q: range [%d, %d) is not inside [0, %d)", ErrBadSpec, spec.Name, lo, hi, spec.Size)
	}
	opt, err := spec.Optimizer.New()
	if err != nil {
		return nil, err
	}
	n, width := hi-lo, opt.StateWidth(hi-lo)
	if spec.Schedule.On() {
		width += stepWords
	}
	return &DenseVar{spec: spec, lo: lo, hi: hi, opt: opt,
		values: make([]float32, n), state: make([]float32, width)}, nil
}

// optState is the optimizer's part of the state (a schedule's step
// follows it).
func (v *DenseVar) optState() []float32 { return v.state[:v.opt.StateWidth(len(v.values))] }

// Spec returns the variable's spec, defaults applied.
func (v *DenseVar) Spec() DenseSpec { return v.spec }

// Bounds returns the range [lo, hi) of the whole vector that v holds.
func (v *DenseVar) Bounds() (lo, hi int) { return v.lo, v.hi }

// Initialized reports whether Set or Load has given v its values.
func (v *DenseVar) Initialized() bool { return v.inited }

// Refused returns the number of gradients Apply refused for a NaN or
// ±Inf since v was made.
func (v *DenseVar) Refused() uint64 { return v.refused }

// Values returns the hi-lo values. The slice aliases v's storage: Apply,
// Set and Load change it; copy it before handing it to another goroutine.
func (v *DenseVar) Values() []float32 { return v.values }

// State returns the optimizer state (StateWidth(hi-lo) words, and two
// more holding the step with a Schedule), aliasing v's storage, for
// snapshots.
func (v *DenseVar) State() []float32 { return v.state }

// Set installs initial values (copied) and resets the optimizer state. It
// fails with an error wrapping ErrDimMismatch unless len(values) == hi-lo,
// and with one wrapping ErrNonFinite when a value is NaN or ±Inf; either
// way v is left as it was.
func (v *DenseVar) Set(values []float32) error {
	if len(values) != len(v.values) {
		return fmt.Errorf("%w: dense %q: set with %d values, want %d", ErrDimMismatch, v.spec.Name, len(values), len(v.values))
	}
	if err := CheckFinite(fmt.Sprintf("dense %q: set", v.spec.Name), nil, values, 0); err != nil {
		return err
	}
	copy(v.values, values)
	v.initState()
	v.inited = true
	return nil
}

// initState starts the optimizer's state and the schedule's step afresh.
func (v *DenseVar) initState() {
	clear(v.state)
	v.opt.InitState(v.optState())
}

// Load restores values and optimizer state from a snapshot (both copied;
// an empty state starts a fresh one). It fails with an error wrapping
// ErrDimMismatch when a length is wrong.
func (v *DenseVar) Load(values, state []float32) error {
	if len(values) != len(v.values) || (len(state) != 0 && len(state) != len(v.state)) {
		return fmt.Errorf("%w: dense %q: load of %d values and %d state words, want %d and %d (or 0)",
			ErrDimMismatch, v.spec.Name, len(values), len(state), len(v.values), len(v.state))
	}
	copy(v.values, values)
	if len(state) == 0 {
		v.initState()
	} else {
		copy(v.state, state)
	}
	v.inited = true
	return nil
}

// Apply updates the values with the gradient grad (hi-lo values, not
// modified). It fails with an error wrapping ErrNotInitialized before Set
// or Load, and with one wrapping ErrDimMismatch when len(grad) != hi-lo.
// A gradient that holds a NaN or ±Inf is refused: it changes nothing
// (values, optimizer state, the schedule's step) and is counted
// (Refused), and Apply returns nil, as a push's refused row does not
// fail the push.
func (v *DenseVar) Apply(grad []float32) error {
	if !v.inited {
		return fmt.Errorf("%w: dense %q", ErrNotInitialized, v.spec.Name)
	}
	if len(grad) != len(v.values) {
		return fmt.Errorf("%w: dense %q: gradient of %d values, want %d", ErrDimMismatch, v.spec.Name, len(grad), len(v.values))
	}
	if !allFiniteLong(grad) {
		v.refused++
		return nil
	}
	opt := v.opt
	if sc := v.spec.Schedule; sc.On() {
		step := v.state[len(v.state)-stepWords:]
		t := getStep(step) + 1
		setStep(step, t)
		o := v.spec.Optimizer
		if o.LR *= sc.Scale(t); !(o.LR > 0) {
			return nil // a decay to a rate of 0: nothing moves
		}
		var err error
		if opt, err = o.New(); err != nil { // v.spec's, validated, with a positive rate
			return fmt.Errorf("%w: dense %q: %w", ErrBadSpec, v.spec.Name, err)
		}
	}
	opt.Apply(v.values, v.optState(), grad)
	return nil
}
