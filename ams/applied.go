package ams

import (
	"fmt"
	"slices"
	"strings"
)

// Origin names the batch a push carries: the worker that sent it, the
// batch's number in the worker's job (0, 1, 2, ... over the whole job,
// across restarts: the checkpoint's Batches when the batch was trained),
// and the batch's samples and their digest sum. A shard applies a push of
// an origin once: a second push of the same worker and batch is refused
// (ErrDuplicatePush) and applied nowhere. The zero Origin names nothing
// (a push outside a job: tests, tools); such pushes are not recorded.
type Origin struct {
	Worker  string
	Batch   uint64
	Samples uint32
	Digest  uint64
}

// IsZero reports whether o names no batch.
func (o Origin) IsZero() bool { return o.Worker == "" }

// BatchRange is the batches [Lo, Hi) of one worker.
type BatchRange struct {
	Lo uint64 `json:"lo"`
	Hi uint64 `json:"hi"`
}

// Applied is a shard's record of one worker's pushes that it applied:
// the batches, as sorted ranges, and their samples and digest sum. It is
// part of the model: snapshotted with the rows (the state entry
// AppliedKey of the shard's index) and rolled back with them, so that it
// always describes exactly the pushes the shard's rows hold.
//
// Invariants: Ranges are sorted, non-empty, and neither overlap nor touch
// (a range ending where the next begins is merged into it).
type Applied struct {
	Ranges  []BatchRange `json:"ranges,omitempty"`
	Samples int64        `json:"samples"`
	Digest  uint64       `json:"digest,omitempty"`
	// Refused counts the pushes refused as duplicates since the shard
	// last began or restored (not snapshotted: a refusal applied nothing).
	Refused uint64 `json:"-"`
}

// Has reports whether batch b is in the record.
func (a *Applied) Has(b uint64) bool {
	i, found := a.find(b)
	return found || (i > 0 && b < a.Ranges[i-1].Hi)
}

// find returns the index of the first range with Lo >= b, and whether
// that range starts at b.
func (a *Applied) find(b uint64) (int, bool) {
	return slices.BinarySearchFunc(a.Ranges, b, func(r BatchRange, b uint64) int {
		switch {
		case r.Lo < b:
			return -1
		case r.Lo > b:
			return 1
		}
		return 0
	})
}

// Add records o's batch and reports whether it was new; a batch already
// in the record changes nothing but Refused.
func (a *Applied) Add(o Origin) bool {
	b := o.Batch
	if a.Has(b) {
		a.Refused++
		return false
	}
	i, _ := a.find(b)
	joinsPrev := i > 0 && a.Ranges[i-1].Hi == b
	joinsNext := i < len(a.Ranges) && a.Ranges[i].Lo == b+1
	switch {
	case joinsPrev && joinsNext:
		a.Ranges[i-1].Hi = a.Ranges[i].Hi
		a.Ranges = slices.Delete(a.Ranges, i, i+1)
	case joinsPrev:
		a.Ranges[i-1].Hi = b + 1
	case joinsNext:
		a.Ranges[i].Lo = b
	default:
		a.Ranges = slices.Insert(a.Ranges, i, BatchRange{b, b + 1})
	}
	a.Samples += int64(o.Samples)
	a.Digest += o.Digest
	return true
}

// Batches returns the number of batches in the record.
func (a *Applied) Batches() uint64 {
	var n uint64
	for _, r := range a.Ranges {
		n += r.Hi - r.Lo
	}
	return n
}

// Exactly reports whether the record holds batches 0 to n-1, each once
// (a record holds a batch at most once), and nothing else.
func (a *Applied) Exactly(n uint64) bool {
	if n == 0 {
		return len(a.Ranges) == 0
	}
	return len(a.Ranges) == 1 && a.Ranges[0] == BatchRange{0, n}
}

// Clone returns a deep copy of a.
func (a *Applied) Clone() *Applied {
	c := *a
	c.Ranges = slices.Clone(a.Ranges)
	return &c
}

// String lists the ranges, "[0,344) [345,460)", or "none".
func (a *Applied) String() string {
	if len(a.Ranges) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, r := range a.Ranges {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "[%d,%d)", r.Lo, r.Hi)
	}
	return b.String()
}

// Union returns the record of every batch in a or in o. Its Samples and
// Digest are a's, which Union cannot complete with those of o's batches
// that a lacks: it reports false when o holds any (then the sums are a's
// alone).
func (a *Applied) Union(o *Applied) (*Applied, bool) {
	all := append(slices.Clone(a.Ranges), o.Ranges...)
	slices.SortFunc(all, func(x, y BatchRange) int {
		switch {
		case x.Lo < y.Lo:
			return -1
		case x.Lo > y.Lo:
			return 1
		}
		return 0
	})
	u := &Applied{Samples: a.Samples, Digest: a.Digest}
	for _, r := range all {
		if n := len(u.Ranges); n > 0 && r.Lo <= u.Ranges[n-1].Hi {
			u.Ranges[n-1].Hi = max(u.Ranges[n-1].Hi, r.Hi)
			continue
		}
		u.Ranges = append(u.Ranges, r)
	}
	return u, u.Batches() == a.Batches()
}

// Equal reports whether a and o hold the same batches and sums.
func (a *Applied) Equal(o *Applied) bool {
	return slices.Equal(a.Ranges, o.Ranges) && a.Samples == o.Samples && a.Digest == o.Digest
}
