package shard

import (
	"fmt"
	"slices"

	"github.com/xdlgo/xps/ams"
)

// LoadRows sets the values of table's rows of ids (values[k*dim:(k+1)*dim]
// is row k's), creating missing rows, with a fresh optimizer state and
// statistics as for a new row; and deletes the rows of deletes. A warm
// start loads a model export through it (values only: the optimizer
// starts afresh). Every id must belong to this shard under the map the
// caller routes by; nothing checks that (a row on the wrong shard is never
// pulled). A row that holds a NaN or ±Inf refuses the whole call with
// ams.ErrNonFinite, nothing loaded or deleted, unless the table clips
// (ams.TableSpec.NonFinite): then it is loaded clipped and counted.
// values is not modified.
func (s *Shard) LoadRows(version uint64, table string, ids []uint64, values []float32, deletes []uint64) error {
	if err := s.checkVersion(version); err != nil {
		return err
	}
	cat := s.cat.Load()
	ti, ok := cat.tables[table]
	if !ok {
		return fmt.Errorf("%w: %q", ams.ErrUnknownTable, table)
	}
	d := ti.spec.Dim
	if len(values) != len(ids)*d {
		return fmt.Errorf("%w: load of table %q: %d values for %d ids of dim %d", ams.ErrDimMismatch, table, len(values), len(ids), d)
	}
	var clipped []bool // by row, when a row was clipped
	if ti.spec.NonFinite == ams.NonFiniteClip {
		if !ams.AllFinite(values) {
			values, clipped = slices.Clone(values), make([]bool, len(ids))
			for k := range ids {
				clipped[k] = ams.ClipNonFinite(values[k*d:(k+1)*d], values[k*d:(k+1)*d], ti.spec.NonFiniteBound) > 0
			}
		}
	} else if err := ams.CheckFinite(fmt.Sprintf("load of table %q", table), ids, values, d); err != nil {
		return err
	}
	n := len(s.stripes)
	load, del := make([][]int, n), make([][]uint64, n)
	for k, id := range ids {
		si := cat.stripeOf(ti, id, n)
		load[si] = append(load[si], k)
	}
	for _, id := range deletes {
		si := cat.stripeOf(ti, id, n)
		del[si] = append(del[si], id)
	}
	now := s.now()
	return s.onStripes(func(i int, st *stripe) error {
		tab := st.tables[ti.idx]
		for _, k := range load[i] {
			if err := tab.Load(ids[k], values[k*d:(k+1)*d], nil, now, 1); err != nil {
				return err
			}
			if clipped != nil && clipped[k] {
				tab.CountClipped(1)
			}
		}
		for _, id := range del[i] {
			tab.Delete(id)
		}
		return nil
	})
}

// SetDense sets the values of this shard's range of dense vector name
// (hi-lo values) with a fresh optimizer state: a warm start's dense
// parameters.
func (s *Shard) SetDense(version uint64, name string, values []float32) error {
	if err := s.checkVersion(version); err != nil {
		return err
	}
	di, err := s.denseInfo(name, len(values))
	if err != nil {
		return err
	}
	return s.onDense(di, func(v *ams.DenseVar) error { return v.Set(values) })
}
