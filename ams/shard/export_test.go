package shard

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/filters"
	"github.com/xdlgo/xps/snapshot"
)

// chainReplica applies exports as a server does: a full export replaces
// the rows, a delta's rows overwrite and its deletions remove.
type chainReplica map[uint64][]float32

func (r chainReplica) apply(t *testing.T, s snapshot.Store, m *export.Manifest) {
	t.Helper()
	if m.Kind == export.KindFull {
		clear(r)
	}
	if err := export.ReadTable(s, m, "emb", func(id uint64, v []float32) error {
		if v == nil {
			delete(r, id)
		} else {
			r[id] = slices.Clone(v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// rows returns every row of the shard's table "emb".
func (ls *lifeShard) rows(t *testing.T) map[uint64][]float32 {
	t.Helper()
	per := make([]map[uint64][]float32, len(ls.s.stripes)) // owners run in parallel
	if err := ls.s.onStripes(func(i int, st *stripe) error {
		per[i] = map[uint64][]float32{}
		st.tables[0].Range(func(id uint64, v, _ []float32, _, _ uint32) bool {
			per[i][id] = slices.Clone(v)
			return true
		})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out := map[uint64][]float32{}
	for _, m := range per {
		maps.Copy(out, m)
	}
	return out
}

func (ls *lifeShard) export(t *testing.T, s snapshot.Store, seq, base uint64) (*export.Manifest, error) {
	t.Helper()
	part, err := ls.s.WriteExport(s, ExportOptions{Seq: seq, Base: base})
	if err != nil {
		return nil, err
	}
	m := &export.Manifest{Seq: seq, Kind: export.KindFull, Full: seq}
	if base != 0 {
		m.Kind, m.Base, m.Full = export.KindDelta, base, 1
	}
	if err := m.Add(part); err != nil {
		t.Fatal(err)
	}
	if err := export.Commit(s, m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

// TestExportChain: a full export, then deltas holding the rows pushed
// since and deletions for the rows expiry removed, replayed in order,
// equal the shard's table row for row; a delta onto another base is
// refused, and so is every delta after a failed one until a full export.
func TestExportChain(t *testing.T) {
	ls := newLifeShard(t, ams.TableSpec{Expiry: filters.ExpirySpec{TTLSamples: 100 * batchSamples}}, Options{})
	store, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old, hot := idRange(0, 1000), idRange(1_000_000, 100)
	ls.push(t, old)
	rep := chainReplica{}
	m1, err := ls.export(t, store, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep.apply(t, store, m1)
	if rows, _ := m1.Rows(); rows != int64(len(old)) || !maps.EqualFunc(rep, ls.rows(t), slices.Equal) {
		t.Fatalf("full export: %d rows, the replica differs from the table", rows)
	}
	for range 300 { // the old rows expire; the hot ones change
		ls.push(t, hot)
	}
	m2, err := ls.export(t, store, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows, dels := m2.Rows()
	if rows != int64(len(hot)) || dels != int64(len(old)) {
		t.Fatalf("delta: %d rows and %d deletions, want %d and %d", rows, dels, len(hot), len(old))
	}
	rep.apply(t, store, m2)
	if !maps.EqualFunc(rep, ls.rows(t), slices.Equal) {
		t.Fatal("full + delta differ from the table")
	}
	// Nothing pushed since: an empty delta.
	m3, err := ls.export(t, store, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if rows, dels := m3.Rows(); rows+dels != 0 {
		t.Fatalf("a delta with nothing pushed holds %d rows and %d deletions", rows, dels)
	}
	// Onto another base: refused, and the chain is broken until a full
	// export.
	if _, err := ls.export(t, store, 4, 2); !errors.Is(err, ams.ErrNoExportBase) {
		t.Fatalf("a delta onto export 2 after 3: %v, want ErrNoExportBase", err)
	}
	if _, err := ls.export(t, store, 4, 3); !errors.Is(err, ams.ErrNoExportBase) {
		t.Fatalf("a delta after a refused one: %v, want ErrNoExportBase", err)
	}
	ls.push(t, hot)
	m5, err := ls.export(t, store, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep.apply(t, store, m5)
	if !maps.EqualFunc(rep, ls.rows(t), slices.Equal) {
		t.Fatal("a new full export differs from the table")
	}
	// A new model (Begin) has no base.
	if err := ls.s.Begin(2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.s.WriteExport(store, ExportOptions{Seq: 6, Base: 5}); !errors.Is(err, ams.ErrNoExportBase) {
		t.Fatalf("a delta after Begin: %v, want ErrNoExportBase", err)
	}
}

// TestExportQuantized: fp16 and int8 exports decode within their errors
// and are smaller than fp32.
func TestExportQuantized(t *testing.T) {
	c := newTestCluster(t, 1)
	ids := idRange(1, 2000)
	c.do(t, ids, nil, false)
	grads := make([]float32, len(ids)*snapSpec.Dim)
	for i := range grads {
		grads[i] = float32(i%7) - 3
	}
	c.do(t, ids, grads, true)
	want := c.do(t, ids, nil, false)
	sizes := map[string]int64{}
	for i, q := range export.Quants {
		store, err := snapshot.OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		seq := uint64(i + 1)
		part, err := c.shards[0].WriteExport(store, ExportOptions{Seq: seq, Quant: map[string]string{"emb": q}})
		if err != nil {
			t.Fatal(err)
		}
		m := &export.Manifest{Seq: seq, Kind: export.KindFull, Full: seq}
		if err := m.Add(part); err != nil {
			t.Fatal(err)
		}
		sizes[q] = m.Tables[0].Files[0].Size
		got := map[uint64][]float32{}
		if err := export.ReadTable(store, m, "emb", func(id uint64, v []float32) error {
			got[id] = slices.Clone(v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		d := snapSpec.Dim
		for k, id := range ids {
			w := want[k*d : (k+1)*d]
			var m float32
			for _, x := range w {
				m = max(m, abs(x))
			}
			for j, x := range got[id] {
				bound := map[string]float32{export.FP32: 0, export.FP16: abs(w[j])/1024 + 1e-7, export.Int8: m / 127 * 0.51 * (1 + 1.0/128)}[q]
				if abs(x-w[j]) > bound {
					t.Fatalf("%s: row %d value %d: %v, want %v within %v", q, id, j, x, w[j], bound)
				}
			}
		}
		dense, err := export.ReadDense(store, m, "mlp")
		if err != nil || len(dense) != snapDenseSize {
			t.Fatalf("dense: %d values, %v", len(dense), err)
		}
	}
	// Dim 5: a row's key (about 6 bytes compressed) weighs as much as
	// its int8 values; the bench measures the default dim's ratio.
	if sizes[export.Int8] >= sizes[export.FP16] || sizes[export.FP16] >= sizes[export.FP32] {
		t.Errorf("table file sizes %v: want int8 < fp16 < fp32", sizes)
	}
	t.Logf("table file sizes (dim %d): %v", snapSpec.Dim, sizes)
}

func abs(x float32) float32 { return max(x, -x) }
