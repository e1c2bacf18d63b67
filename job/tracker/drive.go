package tracker

import "fmt"

// StepExec applies ev and has exec carry out the actions it returns, in
// order, up to the first Open (only Started, EpochEnded and Validated
// return one): it returns that Open and what follows it, for the driver to
// train the epoch (see Epochs). An action that exec answers with an event
// (Validate: Validated) ends its step's actions; the answer is applied
// likewise. The tracker stays free of I/O: exec is the driver's.
func (t *Tracker) StepExec(ev Event, exec func(Action) (Event, error)) ([]Action, error) {
	for ev != nil {
		acts, err := t.Step(ev)
		if err != nil {
			return nil, err
		}
		ev = nil
		for i, a := range acts {
			if _, ok := a.(Open); ok {
				return acts[i:], nil
			}
			if ev, err = exec(a); err != nil {
				return nil, err
			}
			if ev != nil {
				if i != len(acts)-1 {
					return nil, fmt.Errorf("tracker: %T answered before the end of %v", a, acts)
				}
				break
			}
		}
	}
	return nil, nil
}

// Epochs trains the epochs the run opens: acts is what StepExec returned
// for Started, and epoch trains the epoch of one Open and returns what
// StepExec returned for its end (EpochEnded). It returns once an epoch's
// end opens no other (the run is done), or epoch's first error.
func Epochs(acts []Action, epoch func(Open) ([]Action, error)) error {
	for len(acts) > 0 {
		open, ok := acts[0].(Open)
		if !ok || len(acts) > 1 {
			return fmt.Errorf("tracker: actions %v, want one Open", acts)
		}
		var err error
		if acts, err = epoch(open); err != nil {
			return err
		}
	}
	return nil
}
