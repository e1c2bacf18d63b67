package shard

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xdlgo/xps/ams"
)

// Limits on the records of applied pushes (see claim).
const (
	// MaxAppliedWorkers bounds the workers a shard keeps records of.
	MaxAppliedWorkers = 1 << 12
	// MaxAppliedRanges bounds one worker's ranges: pushes arrive nearly
	// in batch order (a pipelined worker has a few in flight), so a
	// worker's record is a handful of ranges, and one that fragments
	// beyond this is not a worker's.
	MaxAppliedRanges = 1 << 12
)

// claim records origin's batch as applied, at version, before its push is
// dispatched: a second push of the batch is refused with
// ams.ErrDuplicatePush and applied nowhere. The caller has checked
// everything else about the push, so a claimed push is dispatched (it may
// still be refused by the stripes as stale, when a restore raced it; the
// restore replaces the record too). The version is checked under
// appliedMu, which a begin or restore takes to replace the record after
// advancing the version: a claim of the version replaced either lands in
// the record replaced or is refused.
func (s *Shard) claim(version uint64, o ams.Origin) error {
	if o.IsZero() {
		return nil
	}
	if len(o.Worker) > MaxStateKey {
		return fmt.Errorf("%w: a push's worker name of %d bytes", ams.ErrBadRequest, len(o.Worker))
	}
	s.appliedMu.Lock()
	defer s.appliedMu.Unlock()
	if err := s.checkVersion(version); err != nil {
		return err
	}
	a := s.applied[o.Worker]
	if a == nil {
		if len(s.applied) >= MaxAppliedWorkers {
			return fmt.Errorf("%w: pushes of more than %d workers", ams.ErrBadRequest, MaxAppliedWorkers)
		}
		a = &ams.Applied{}
		s.applied[o.Worker] = a
	}
	if a.Has(o.Batch) {
		a.Refused++
		return fmt.Errorf("%w: shard %s already applied batch %d of %s (it holds batches %s of it): "+
			"the model is ahead of the checkpoint the worker resumed from", ams.ErrDuplicatePush, s.opts.ID, o.Batch, o.Worker, a)
	}
	if len(a.Ranges) >= MaxAppliedRanges {
		return fmt.Errorf("%w: the pushes of %s on shard %s are scattered over %d ranges of batches", ams.ErrBadRequest, o.Worker, s.opts.ID, len(a.Ranges))
	}
	a.Add(o)
	s.clock.Add(uint64(o.Samples))
	return nil
}

// Applied returns a copy of the shard's records of applied pushes, by
// worker.
func (s *Shard) Applied() map[string]*ams.Applied {
	s.appliedMu.Lock()
	defer s.appliedMu.Unlock()
	out := make(map[string]*ams.Applied, len(s.applied))
	for w, a := range s.applied {
		out[w] = a.Clone()
	}
	return out
}

// appliedState returns the records as the JSON of the shard's snapshot
// state entry ams.AppliedKey.
func (s *Shard) appliedState() (json.RawMessage, error) {
	s.appliedMu.Lock()
	defer s.appliedMu.Unlock()
	return json.Marshal(s.applied)
}

// setApplied replaces the records (nil: none).
func (s *Shard) setApplied(m map[string]*ams.Applied) {
	if m == nil {
		m = map[string]*ams.Applied{}
	}
	var samples uint64
	for _, a := range m {
		samples += uint64(a.Samples)
	}
	s.appliedMu.Lock()
	s.applied = m
	s.clock.Store(samples)
	s.appliedMu.Unlock()
}

// restoredApplied returns the records a shard restoring a snapshot with
// the state entries readers takes: onto the same layout, the records of
// its own index; onto another, every part's records merged by worker
// (Applied.Union). The parts of a consistent snapshot agree whenever each
// of a worker's pushes reached every shard (they carry the dense
// gradient, of which every shard holds a range), and the merge is then
// exact; where they disagree the merged record holds every batch any part
// held, so none is applied twice, and the sums are those of the part
// that held the most.
func restoredApplied(readers map[string]json.RawMessage, own Ownership) (map[string]*ams.Applied, error) {
	out := map[string]*ams.Applied{}
	for _, k := range slices.Sorted(maps.Keys(readers)) {
		if !strings.HasPrefix(k, ams.StateAppliedPrefix) || (own.SameLayout && k != ams.AppliedKey(own.Index)) {
			continue
		}
		var part map[string]*ams.Applied
		if err := json.Unmarshal(readers[k], &part); err != nil {
			return nil, fmt.Errorf("%w: state %q: %v", ams.ErrRestore, k, err)
		}
		for w, a := range part {
			if a == nil {
				continue
			}
			for i, r := range a.Ranges { // Applied's invariants, on which Has relies
				if r.Lo >= r.Hi || i > 0 && a.Ranges[i-1].Hi >= r.Lo {
					return nil, fmt.Errorf("%w: state %q: %s's applied batches %s are not sorted disjoint ranges", ams.ErrRestore, k, w, a)
				}
			}
			have, ok := out[w]
			switch {
			case !ok:
				out[w] = a
			case a.Batches() > have.Batches():
				out[w], _ = a.Union(have)
			default:
				out[w], _ = have.Union(a)
			}
		}
	}
	return out, nil
}
