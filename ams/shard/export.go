package shard

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/snapshot"
)

// ExportOptions describe a shard's part of a model export.
type ExportOptions struct {
	// Seq numbers the export, Base the export a delta applies onto (0: a
	// full export).
	Seq, Base uint64
	// Index is the shard's position in the shard map.
	Index int
	// Quant gives a table's encoding (export.FP32 when absent).
	Quant map[string]string
}

// exportState is the shard's record of its exports, under exportMu.
type exportState struct {
	// last is the export this shard last wrote its part of in the current
	// model (0: none since the model began): the only base it writes a
	// delta onto.
	last uint64
}

// WriteExport writes this shard's part of export o.Seq into store: for a
// full export every row of every table, for a delta (o.Base > 0) the rows
// pushed since the shard's previous export and deletions for the rows
// expiry and the budget removed since (ams.Table.TakeDirty,
// DrainTombstones), values only, encoded by o.Quant; and its range of
// each dense vector, values only. It takes the rows' dirty marks and the
// tombstones: an export that fails, here or on another shard, leaves no
// base, and the next must be full (ams.ErrNoExportBase). Like a snapshot it
// is consistent only while nothing pushes.
func (s *Shard) WriteExport(store snapshot.Store, o ExportOptions) (export.Part, error) {
	s.modelMu.RLock()
	defer s.modelMu.RUnlock()
	s.exportMu.Lock()
	defer s.exportMu.Unlock()
	base := s.export.last
	s.export.last = 0 // until this export is whole
	if o.Base != 0 && o.Base != base {
		return export.Part{}, fmt.Errorf("%w: export %d onto %d, but this shard's last export is %d", ams.ErrNoExportBase, o.Seq, o.Base, base)
	}
	cat := s.cat.Load()
	var part export.Part
	for _, name := range slices.Sorted(maps.Keys(cat.tables)) {
		t, err := s.exportTable(store, cat, cat.tables[name], o)
		if err != nil {
			return export.Part{}, fmt.Errorf("ams: export %d of table %q: %w", o.Seq, name, err)
		}
		part.Tables = append(part.Tables, t)
	}
	dense, err := s.exportDense(store, cat, o)
	if err != nil {
		return export.Part{}, fmt.Errorf("ams: export %d: %w", o.Seq, err)
	}
	part.Dense = dense
	s.export.last = o.Seq
	return part, nil
}

// exportTable writes ti's file of export o.
func (s *Shard) exportTable(store snapshot.Store, cat *catalog, ti *tableInfo, o ExportOptions) (export.Table, error) {
	q := o.Quant[ti.spec.Name]
	if q == "" {
		q = export.FP32
	}
	if err := export.CheckQuant(q); err != nil {
		return export.Table{}, fmt.Errorf("%w: %w", ams.ErrBadRequest, err)
	}
	rows, err := s.exportRows(cat, ti, o.Base != 0)
	if err != nil {
		return export.Table{}, err
	}
	n := export.RowBytes(q, ti.spec.Dim)
	tw, err := snapshot.CreateBlockTableFile(store, export.Dir(o.Seq), export.TableName(ti.spec.Name, o.Index), n)
	if err != nil {
		return export.Table{}, err
	}
	w := &tableWrite{s: s, ti: ti, n: n, rows: rows, deletions: true,
		encode: func(tab *ams.Table, b []byte, r *ams.RowSet, lo, hi int, missing []int) ([]byte, []int) {
			tab.EachRowValues(r, lo, hi, func(k int, v []float32, ok bool) {
				if !ok { // removed since (a deletion), or on disk
					missing = append(missing, k)
					b = slices.Grow(b, n)[:len(b)+n]
					clear(b[len(b)-n:])
					return
				}
				b = export.AppendRow(b, q, v)
			})
			return b, missing
		},
		fromCold: func(b, enc []byte) []byte {
			return export.AppendRow(b, q, ams.SnapshotRowValues(enc, ti.spec.Dim))
		}}
	if err := w.start(); err != nil {
		tw.Abort()
		return export.Table{}, err
	}
	f, err := w.write(tw, seq(len(s.stripes)))
	if err != nil {
		return export.Table{}, err
	}
	init, err := json.Marshal(ti.spec.Init)
	if err != nil {
		return export.Table{}, err
	}
	return export.Table{Name: ti.spec.Name, Dim: ti.spec.Dim, Quant: q, Init: init, Files: []snapshot.FileMeta{f}}, nil
}

// exportRows has each owner take the dirty marks and the tombstones of
// its stripe of ti and, for a delta, list, sorted, the rows an export
// writes: those pushed since the last export and those removed since (the
// removed ones may have come back: the writer finds out). A full export
// writes every row, listed range by range as a snapshot's are: its rows
// are nil.
func (s *Shard) exportRows(cat *catalog, ti *tableInfo, delta bool) ([]ams.RowSet, error) {
	var rows []ams.RowSet
	if delta {
		rows = make([]ams.RowSet, len(s.stripes))
	}
	lost := make([]uint64, len(s.stripes))
	if err := s.onStripes(func(i int, st *stripe) error {
		tab := st.tables[ti.idx]
		var tombs []uint64
		tombs, lost[i] = st.takeTombstones(ti)
		cd := st.lives[ti.idx].coldOf()
		if !delta {
			tab.ClearDirty()
			if cd != nil {
				cd.exported(tab)
			}
			return nil
		}
		ids := append(tab.TakeDirty(nil), tombs...)
		if cd != nil {
			var err error
			if ids, err = cd.takeDirty(tab, ids); err != nil {
				return err
			}
		}
		sortIDs(ids)
		tab.LocateRows(&rows[i], slices.Compact(ids))
		return nil
	}); err != nil {
		return nil, err
	}
	if n := sum(lost); delta && n > 0 {
		return nil, fmt.Errorf("%w: %d removed rows had no tombstone (more than %d per stripe since the last export)", ams.ErrNoExportBase, n, MaxTombstones)
	}
	return rows, nil
}

// seq returns 0, 1, ..., n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func sum(v []uint64) uint64 {
	var n uint64
	for _, x := range v {
		n += x
	}
	return n
}

// exportDense writes this shard's range of each dense vector, values only.
func (s *Shard) exportDense(store snapshot.Store, cat *catalog, o ExportOptions) ([]export.Dense, error) {
	var out []export.Dense
	for _, name := range slices.Sorted(maps.Keys(cat.dense)) {
		di := cat.dense[name]
		var b []byte
		if err := s.onDense(di, func(v *ams.DenseVar) error {
			if !v.Initialized() {
				return fmt.Errorf("%w: dense %q", ams.ErrNotInitialized, name)
			}
			b = appendFloats(b, v.Values())
			return nil
		}); err != nil {
			return nil, err
		}
		f, err := snapshot.WriteFileIn(store, export.Dir(o.Seq), export.DenseName(name, o.Index), b)
		if err != nil {
			return nil, err
		}
		out = append(out, export.Dense{Name: name, Len: di.spec.Size,
			Parts: []export.DensePart{{Lo: di.lo, Hi: di.hi, File: f}}})
	}
	return out, nil
}
