package shard

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
	"github.com/xdlgo/xps/snapshot"
)

// Admission filter states in snapshots. A table whose admission policy
// keeps state (filters.Filter.Stateful: count with n >= 2) has, in each
// shard's part of a snapshot, one file (snapshot.FilterName) holding the
// state of every partition its stripes hold, in partition order, each as
// its partition (uint32), its length (uint32) and the state's bytes
// (filters.Filter.AppendPartition: versioned and checksummed), all
// little-endian. A restore reads every shard's file (only its own index's
// onto the same layout) and gives each partition it owns
// (Ownership.Partition) to the stripe that holds the partition's rows, so
// that a snapshot of N shards restores onto M with every partition's
// sightings where its IDs go.

// writeFilter writes ti's filter states, if its policy keeps any; ok is
// false for a stateless policy (no file).
func (s *Shard) writeFilter(store snapshot.Store, seq uint64, index int, ti *tableInfo) (f snapshot.FileMeta, ok bool, err error) {
	shares := make([][]filterState, len(s.stripes))
	stateful := make([]bool, len(s.stripes)) // each stripe writes its own
	if err := s.onStripes(func(i int, st *stripe) error {
		flt := st.tables[ti.idx].Filter()
		if flt == nil || !flt.Stateful() {
			return nil
		}
		stateful[i] = true
		for _, p := range flt.Partitions(nil) {
			shares[i] = append(shares[i], filterState{part: p, state: flt.MarshalPartition(p)})
		}
		return nil
	}); err != nil || !slices.Contains(stateful, true) {
		return snapshot.FileMeta{}, false, err
	}
	// Partitions are disjoint across stripes: one sort puts them in order.
	all := slices.Concat(shares...)
	slices.SortFunc(all, func(a, b filterState) int { return cmp.Compare(a.part, b.part) })
	var b []byte
	for _, e := range all {
		b = binary.LittleEndian.AppendUint32(b, e.part)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.state)))
		b = append(b, e.state...)
	}
	f, err = snapshot.WriteFile(store, seq, snapshot.FilterName(ti.spec.Name, index), b)
	return f, err == nil, err
}

// filterState is one partition's entry in a filter file.
type filterState struct {
	part  uint32
	state []byte
}

// parseFilterStates splits a filter file into its entries, checking their
// framing and order (each state checks itself).
func parseFilterStates(b []byte) ([]filterState, error) {
	var out []filterState
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, fmt.Errorf("%w: a filter state's header is cut short", filters.ErrCorrupt)
		}
		p, n := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		if uint64(n) > uint64(len(b)-8) {
			return nil, fmt.Errorf("%w: partition %d's filter state of %d bytes is cut short", filters.ErrCorrupt, p, n)
		}
		if len(out) > 0 && p <= out[len(out)-1].part {
			return nil, fmt.Errorf("%w: filter states out of order (partition %d after %d)", filters.ErrCorrupt, p, out[len(out)-1].part)
		}
		out = append(out, filterState{part: p, state: b[8 : 8+n]})
		b = b[8+n:]
	}
	return out, nil
}

// restoreFilter loads the filter states of t that the shard owns into the
// stripes of ti; the table was emptied, its filter has no state.
func (s *Shard) restoreFilter(store snapshot.Store, seq uint64, ti *tableInfo, t snapshot.TableEntry, own Ownership) error {
	if len(t.Admission) == 0 {
		return nil
	}
	cat := s.cat.Load()
	byStripe := make([][]filterState, len(s.stripes))
	for _, f := range t.Admission {
		if own.SameLayout && f.Name != snapshot.FilterName(t.Name, own.Index) {
			continue
		}
		b, err := readAll(store, seq, f.Name)
		if err != nil {
			return fmt.Errorf("admission filter: %w", err)
		}
		states, err := parseFilterStates(b)
		if err != nil {
			return fmt.Errorf("admission filter %s: %w", f.Name, err)
		}
		for _, e := range states {
			if int(e.part) >= cat.partitions {
				return fmt.Errorf("%w: admission filter %s holds partition %d of a model of %d", filters.ErrCorrupt, f.Name, e.part, cat.partitions)
			}
			if own.Partition == nil || own.Partition(e.part) {
				i := partitionStripe(e.part, len(s.stripes))
				byStripe[i] = append(byStripe[i], e)
			}
		}
	}
	return s.onStripes(func(i int, st *stripe) error {
		flt := st.tables[ti.idx].Filter()
		if flt == nil || !flt.Stateful() {
			if len(byStripe[i]) > 0 {
				return fmt.Errorf("%w: the snapshot holds admission filter states for a policy without state", ams.ErrRestore)
			}
			return nil
		}
		for _, e := range byStripe[i] {
			if err := flt.UnmarshalPartition(e.part, e.state); err != nil {
				return fmt.Errorf("admission filter, partition %d: %w", e.part, err)
			}
		}
		return nil
	})
}
