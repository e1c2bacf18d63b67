package export

import (
	"errors"
	"fmt"

	"github.com/xdlgo/xps/snapshot"
)

// Next returns the exports a reader that holds cur (nil: nothing yet)
// applies next, in order: when the store's newest intact full export is
// newer than cur's chain (or cur is nil), that full export and the deltas
// that extend it; otherwise the deltas that extend cur. A delta extends a
// chain when it names the chain's last export as its base and its
// manifest and files are intact; the walk stops at the first export
// after the chain's last that does not (a missing link, a delta being
// written, a corrupt one), and skipped says why, each error wrapping
// ErrCorrupt (and ErrIncomplete for one being written). With no intact
// full export and cur nil, the error wraps ErrNoExport and skipped says
// why of every export the store holds.
func Next(s snapshot.Store, cur *Manifest) (next []*Manifest, skipped []error, err error) {
	seqs, err := Exports(s)
	if err != nil {
		return nil, nil, err
	}
	full, skipped := newestFull(s, seqs)
	last := cur
	switch {
	case full == nil && cur == nil:
		// Nothing can be served: say why of every export, the newest
		// first (newestFull passed over those it could not read).
		for i := len(seqs) - 1; i >= 0; i-- {
			if _, err := ReadManifest(s, seqs[i]); err != nil {
				skipped = append(skipped, err)
			}
		}
		if len(skipped) == 0 {
			return nil, nil, fmt.Errorf("%w in %s: it holds no export", ErrNoExport, s)
		}
		return nil, skipped, fmt.Errorf("%w in %s: %w", ErrNoExport, s, errors.Join(skipped...))
	case full != nil && (cur == nil || full.Seq > cur.Full):
		next, last = []*Manifest{full}, full
	}
	for _, seq := range seqs {
		if seq <= last.Seq {
			continue
		}
		m, err := ReadManifest(s, seq)
		if err == nil && m.Kind == KindFull {
			continue // a newer full that did not verify: in skipped already
		}
		if err == nil && m.Base != last.Seq {
			err = fmt.Errorf("%w: %s: a delta onto export %d, but the chain ends at export %d (a missing link)", ErrCorrupt, Dir(seq), m.Base, last.Seq)
		}
		if err == nil {
			err = Verify(s, m)
		}
		if err != nil {
			return next, append(skipped, err), nil
		}
		next, last = append(next, m), m
	}
	return next, skipped, nil
}

// newestFull returns the newest full export whose manifest and files are
// intact, and the errors of the newer full exports it passed over.
func newestFull(s snapshot.Store, seqs []uint64) (*Manifest, []error) {
	var skipped []error
	for i := len(seqs) - 1; i >= 0; i-- {
		m, err := ReadManifest(s, seqs[i])
		if err != nil {
			continue // a delta, or incomplete: Next's walk reports it if it matters
		}
		if m.Kind != KindFull {
			continue
		}
		if err := Verify(s, m); err != nil {
			skipped = append(skipped, err)
			continue
		}
		return m, skipped
	}
	return nil, skipped
}

// Prune keeps the newest keep complete full exports and every export
// after the oldest of them (their deltas, and exports being written), and
// removes the older ones, complete or not. With fewer than keep complete
// full exports it removes nothing. It returns the removed sequence
// numbers.
func Prune(s snapshot.Store, keep int) ([]uint64, error) {
	if keep < 1 {
		return nil, fmt.Errorf("export: prune: keep %d, want at least 1", keep)
	}
	seqs, err := Exports(s)
	if err != nil {
		return nil, err
	}
	fulls, cut := 0, uint64(0)
	for i := len(seqs) - 1; i >= 0 && cut == 0; i-- {
		if m, err := ReadManifest(s, seqs[i]); err == nil && m.Kind == KindFull {
			if fulls++; fulls == keep {
				cut = m.Seq
			}
		}
	}
	var removed []uint64
	for _, seq := range seqs {
		if cut == 0 || seq >= cut {
			break
		}
		if err := s.Remove(Dir(seq)); err != nil {
			return removed, err
		}
		removed = append(removed, seq)
	}
	return removed, nil
}

// RemoveIncomplete removes every export without an intact manifest (a
// failed or abandoned attempt: one export is written at a time, so any
// such directory is dead once the writer knows none is in progress), and
// returns their sequence numbers.
func RemoveIncomplete(s snapshot.Store) ([]uint64, error) {
	seqs, err := Exports(s)
	if err != nil {
		return nil, err
	}
	var removed []uint64
	for _, seq := range seqs {
		if _, err := ReadManifest(s, seq); err == nil {
			continue
		}
		if err := s.Remove(Dir(seq)); err != nil {
			return removed, err
		}
		removed = append(removed, seq)
	}
	return removed, nil
}
