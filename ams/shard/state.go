package shard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xdlgo/xps/ams"
)

// Limits on the state entries a shard keeps beside the model.
const (
	MaxStateKey   = 1 << 10
	MaxStateValue = 1 << 20
	MaxStateKeys  = 1 << 16
)

// StateEntry is a named value stored beside the model (see PutState).
type StateEntry struct {
	Key   string
	Value []byte
}

// PutState stores entries (copies of the values); an empty value deletes
// its key. The whole call is refused, and nothing stored, when an entry
// breaks a limit or Options.CheckState refuses it. State is small (reader positions): a mutex guards it,
// off the pull/push path.
func (s *Shard) PutState(version uint64, entries []StateEntry) error {
	if err := s.checkVersion(version); err != nil {
		return err
	}
	if err := checkStateEntries(entries); err != nil {
		return err
	}
	if check := s.opts.CheckState; check != nil {
		for _, e := range entries {
			if len(e.Value) > 0 {
				if err := check(e.Key, e.Value); err != nil {
					return fmt.Errorf("%w: state entry %q: %w", ams.ErrBadRequest, e.Key, err)
				}
			}
		}
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.state == nil {
		s.state = map[string][]byte{}
	}
	added := 0
	for _, e := range entries {
		if _, ok := s.state[e.Key]; !ok && len(e.Value) > 0 {
			added++
		}
	}
	if len(s.state)+added > MaxStateKeys {
		return fmt.Errorf("%w: more than %d state keys", ams.ErrBadRequest, MaxStateKeys)
	}
	for _, e := range entries {
		if len(e.Value) == 0 {
			delete(s.state, e.Key)
			continue
		}
		s.state[e.Key] = slices.Clone(e.Value)
	}
	return nil
}

// GetState returns the entries whose key starts with prefix, sorted by key.
func (s *Shard) GetState(version uint64, prefix string) ([]StateEntry, error) {
	if err := s.checkVersion(version); err != nil {
		return nil, err
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	var out []StateEntry
	for k, v := range s.state {
		if strings.HasPrefix(k, prefix) {
			out = append(out, StateEntry{Key: k, Value: slices.Clone(v)})
		}
	}
	slices.SortFunc(out, func(a, b StateEntry) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// checkStateEntries checks every entry's key and value against the limits.
func checkStateEntries(entries []StateEntry) error {
	for _, e := range entries {
		switch {
		case e.Key == "" || len(e.Key) > MaxStateKey:
			return fmt.Errorf("%w: state key of %d bytes (1 to %d)", ams.ErrBadRequest, len(e.Key), MaxStateKey)
		case len(e.Value) > MaxStateValue:
			return fmt.Errorf("%w: state value of %q has %d bytes, more than %d", ams.ErrBadRequest, e.Key, len(e.Value), MaxStateValue)
		}
	}
	return nil
}
