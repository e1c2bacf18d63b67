package shard

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
)

// snapChunk is how many rows a snapshot or restore moves per round of
// owner tasks.
const snapChunk = 4096

// onStripes runs fn(i, stripe) on the owner of every stripe, in parallel.
func (s *Shard) onStripes(fn func(i int, st *stripe) error) error {
	tasks := make([]*task, len(s.stripes))
	for i := range tasks {
		tasks[i] = &task{op: opFunc, fn: func(st *stripe) error { return fn(i, st) }}
	}
	return s.dispatch(tasks)
}

// WriteSnapshot writes this shard's part of snapshot seq to store, as
// shard number index of the cluster: one sorted table file per declared
// table (every row: values, optimizer state, statistics; see
// ams.Table.AppendSnapshotRow) and one dense file per dense range. It
// returns the manifest entries of what it wrote and its state entries
// (which must be JSON, as reader positions are). The snapshot is
// consistent only if nothing pushes while it runs: the scheduler pauses
// the workers first.
func (s *Shard) WriteSnapshot(store snapshot.Store, seq uint64, index int) (snapshot.Part, error) {
	state := map[string]json.RawMessage{}
	s.stateMu.Lock()
	for k, v := range s.state {
		if !json.Valid(v) {
			s.stateMu.Unlock()
			return snapshot.Part{}, fmt.Errorf("ams: snapshot %d: state %q is not JSON (snapshots keep state as JSON)", seq, k)
		}
		state[k] = slices.Clone(v)
	}
	s.stateMu.Unlock()
	tables, dense, err := s.writeParts(store, seq, index)
	return snapshot.Part{Tables: tables, Dense: dense, State: state}, err
}

func (s *Shard) writeParts(store snapshot.Store, seq uint64, index int) ([]snapshot.TableEntry, []snapshot.DenseEntry, error) {
	cat := s.cat.Load()
	names := slices.Sorted(maps.Keys(cat.tables))
	var tables []snapshot.TableEntry
	for _, name := range names {
		ti := cat.tables[name]
		f, err := s.writeTable(store, seq, index, ti)
		if err != nil {
			return nil, nil, fmt.Errorf("ams: snapshot %d of table %q: %w", seq, name, err)
		}
		spec, err := json.Marshal(ti.spec)
		if err != nil {
			return nil, nil, err
		}
		tables = append(tables, snapshot.TableEntry{Name: name, Spec: spec, Files: []snapshot.FileMeta{f}})
	}
	dense, err := s.writeDense(store, seq, index, cat)
	return tables, dense, err
}

func (s *Shard) writeTable(store snapshot.Store, seq uint64, index int, ti *tableInfo) (snapshot.FileMeta, error) {
	// Each owner lists its ids, sorted; ids are disjoint across stripes.
	ids := make([][]uint64, len(s.stripes))
	if err := s.onStripes(func(i int, st *stripe) error {
		ids[i] = st.tables[ti.idx].IDs(nil)
		slices.Sort(ids[i])
		return nil
	}); err != nil {
		return snapshot.FileMeta{}, err
	}
	tw, err := snapshot.CreateTable(store, seq, ti.spec.Name, index)
	if err != nil {
		return snapshot.FileMeta{}, err
	}
	defer tw.Abort()
	// Merge the stripes' lists a chunk at a time: each owner encodes its
	// rows of the chunk into its own buffer, then the rows go out in id
	// order.
	next := make([]int, len(s.stripes)) // per stripe: first id not yet written
	type ref struct {
		id     uint64
		stripe int
	}
	var chunk []ref
	bufs := make([][]byte, len(s.stripes))
	offs := make([][]int, len(s.stripes))
	for {
		chunk = chunk[:0]
		for len(chunk) < snapChunk {
			best := -1
			for i := range ids {
				if next[i] < len(ids[i]) && (best < 0 || ids[i][next[i]] < ids[best][next[best]]) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			chunk = append(chunk, ref{ids[best][next[best]], best})
			next[best]++
		}
		if len(chunk) == 0 {
			break
		}
		if err := s.onStripes(func(i int, st *stripe) error {
			tab := st.tables[ti.idx]
			b, o := bufs[i][:0], offs[i][:0]
			for _, r := range chunk {
				if r.stripe != i {
					continue
				}
				o = append(o, len(b))
				var ok bool
				if b, ok = tab.AppendSnapshotRow(b, r.id); !ok {
					return fmt.Errorf("row %d vanished while being written (were pushes paused?)", r.id)
				}
			}
			bufs[i], offs[i] = b, append(o, len(b))
			return nil
		}); err != nil {
			return snapshot.FileMeta{}, err
		}
		k := make([]int, len(s.stripes))
		for _, r := range chunk {
			o := offs[r.stripe]
			if err := tw.Add(r.id, bufs[r.stripe][o[k[r.stripe]]:o[k[r.stripe]+1]]); err != nil {
				return snapshot.FileMeta{}, err
			}
			k[r.stripe]++
		}
	}
	return tw.Close()
}

// denseFileName is the file of this shard's range of a dense vector.
func denseFileName(name string, index int) string {
	return fmt.Sprintf("dense/%s/shard-%05d", name, index)
}

// writeDense writes each dense range as lo, hi (uint64), the values and
// the optimizer state (float32), little-endian.
func (s *Shard) writeDense(store snapshot.Store, seq uint64, index int, cat *catalog) ([]snapshot.DenseEntry, error) {
	names := slices.Sorted(maps.Keys(cat.dense))
	var out []snapshot.DenseEntry
	for _, name := range names {
		di := cat.dense[name]
		var b []byte
		if err := s.onStripes(func(i int, st *stripe) error {
			if i != di.stripe {
				return nil
			}
			v := st.dense[name]
			if !v.Initialized() {
				return fmt.Errorf("%w: dense %q", ams.ErrNotInitialized, name)
			}
			lo, hi := v.Bounds()
			b = binary.LittleEndian.AppendUint64(b, uint64(lo))
			b = binary.LittleEndian.AppendUint64(b, uint64(hi))
			b = appendFloats(b, v.Values())
			b = appendFloats(b, v.State())
			return nil
		}); err != nil {
			return nil, fmt.Errorf("ams: snapshot %d: %w", seq, err)
		}
		f, err := snapshot.WriteFile(store, seq, denseFileName(name, index), b)
		if err != nil {
			return nil, err
		}
		spec, err := json.Marshal(di.spec)
		if err != nil {
			return nil, fmt.Errorf("ams: snapshot %d: dense %q: %w", seq, name, err)
		}
		out = append(out, snapshot.DenseEntry{Name: name, Len: di.spec.Size, Spec: spec, File: f})
	}
	return out, nil
}

func appendFloats(b []byte, v []float32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// ErrRestore is wrapped by Restore's errors about a snapshot that does not
// fit the shard.
var ErrRestore = errors.New("ams: restore")

// Ownership says which part of a snapshot a restoring shard takes.
type Ownership struct {
	// Row reports whether the shard owns a table's row.
	Row func(table string, id uint64) bool
	// State reports whether the shard owns a state entry (reader position).
	State func(key string) bool
	// Index and Shards place the shard in the map restored onto: a dense
	// vector of the snapshot that the shard has not declared is declared
	// with the range ams.DenseRange gives slot Index of Shards (when the
	// snapshot carries its spec). Shards 0 declares none.
	Index, Shards int
}

// Restore loads snapshot m from store into the shard, keeping what own
// says belongs to it: the shard reads every shard's file of every table,
// so a snapshot written by N shards restores onto M. Tables of the
// snapshot are declared from their specs when missing (an existing table
// must have the same spec); the shard's rows of those tables are replaced
// (rows of ids the snapshot lacks are deleted). Dense vectors are declared
// from their specs when missing (see Ownership); each range the shard
// holds takes its values from the snapshot's ranges that overlap it, and
// its optimizer state when a saved range has exactly its bounds (same
// shard count); otherwise the state starts afresh. Nothing may pull or
// push while it runs; the caller verifies m first (snapshot.Latest). The
// shard's state entries are replaced by the manifest's Readers whose keys
// own.State gives it.
func (s *Shard) Restore(store snapshot.Store, m *snapshot.Manifest, own Ownership) error {
	var specs []ams.TableSpec
	for _, t := range m.Tables {
		var spec ams.TableSpec
		if err := json.Unmarshal(t.Spec, &spec); err != nil {
			return fmt.Errorf("%w: table %q: bad spec in the manifest: %v", ErrRestore, t.Name, err)
		}
		specs = append(specs, spec)
	}
	var dense []DenseDecl
	if own.Shards > 0 {
		have := s.cat.Load().dense
		for _, d := range m.Dense {
			if _, ok := have[d.Name]; ok || len(d.Spec) == 0 || slices.ContainsFunc(dense, func(x DenseDecl) bool { return x.Spec.Name == d.Name }) {
				continue
			}
			var spec ams.DenseSpec
			if err := json.Unmarshal(d.Spec, &spec); err != nil || spec.Name != d.Name || spec.Size != d.Len {
				return fmt.Errorf("%w: dense %q: bad spec in the manifest", ErrRestore, d.Name)
			}
			lo, hi := ams.DenseRange(spec.Size, own.Index, own.Shards)
			dense = append(dense, DenseDecl{Spec: spec, Lo: lo, Hi: hi})
		}
	}
	if _, err := s.Declare(s.Version(), specs, dense); err != nil {
		return fmt.Errorf("%w: %w", ErrRestore, err)
	}
	owns, ownsState := own.Row, own.State
	cat := s.cat.Load()
	for _, t := range m.Tables {
		if err := s.restoreTable(store, m.Seq, cat.tables[t.Name], t, owns); err != nil {
			return fmt.Errorf("%w: snapshot %d table %q: %w", ErrRestore, m.Seq, t.Name, err)
		}
	}
	if err := s.restoreDense(store, m, cat); err != nil {
		return err
	}
	state := map[string][]byte{}
	for k, v := range m.Readers {
		if ownsState(k) {
			state[k] = slices.Clone([]byte(v))
		}
	}
	s.stateMu.Lock()
	s.state = state
	s.stateMu.Unlock()
	return nil
}

func (s *Shard) restoreTable(store snapshot.Store, seq uint64, ti *tableInfo, t snapshot.TableEntry, owns func(string, uint64) bool) error {
	// Empty the table first: the snapshot replaces it.
	if err := s.onStripes(func(_ int, st *stripe) error {
		tab := st.tables[ti.idx]
		for _, id := range tab.IDs(nil) {
			tab.Delete(id)
		}
		return nil
	}); err != nil {
		return err
	}
	type row struct {
		id  uint64
		off int
	}
	rows := make([][]row, len(s.stripes))
	var buf []byte
	flush := func() error {
		err := s.onStripes(func(i int, st *stripe) error {
			tab := st.tables[ti.idx]
			n := tab.SnapshotRowBytes()
			values, state := make([]float32, tab.Dim()), make([]float32, tab.StateWidth())
			for _, r := range rows[i] {
				if r.off+n > len(buf) {
					return fmt.Errorf("%w: row %d is short", ams.ErrDimMismatch, r.id)
				}
				if err := tab.LoadSnapshotRow(r.id, buf[r.off:r.off+n], values, state); err != nil {
					return err
				}
			}
			return nil
		})
		for i := range rows {
			rows[i] = rows[i][:0]
		}
		buf = buf[:0]
		return err
	}
	for _, f := range t.Files {
		tr, err := snapshot.OpenTable(store, seq, f)
		if err != nil {
			return err
		}
		n := 0
		for tr.Next() {
			id, v := tr.Row()
			if !owns(t.Name, id) {
				continue
			}
			if len(v) != s.rowBytes(ti) {
				tr.Close()
				return fmt.Errorf("%s: row %d has %d bytes, want %d: %w", f.Name, id, len(v), s.rowBytes(ti), ams.ErrDimMismatch)
			}
			i := s.stripeOf(ti.salt, id)
			rows[i] = append(rows[i], row{id, len(buf)})
			buf = append(buf, v...)
			if n++; n%snapChunk == 0 {
				if err := flush(); err != nil {
					tr.Close()
					return err
				}
			}
		}
		err = tr.Err()
		tr.Close()
		if err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// rowBytes is the encoded row size of a table (from its spec).
func (s *Shard) rowBytes(ti *tableInfo) int {
	var n int
	s.onStripes(func(i int, st *stripe) error {
		if i == 0 {
			n = st.tables[ti.idx].SnapshotRowBytes()
		}
		return nil
	})
	return n
}

func (s *Shard) restoreDense(store snapshot.Store, m *snapshot.Manifest, cat *catalog) error {
	for name, di := range cat.dense {
		var saved []snapshot.DenseEntry
		for _, d := range m.Dense {
			if d.Name == name {
				saved = append(saved, d)
			}
		}
		if len(saved) == 0 {
			return fmt.Errorf("%w: snapshot %d has no dense vector %q", ErrRestore, m.Seq, name)
		}
		lo, hi := di.lo, di.hi
		values := make([]float32, hi-lo)
		var state []float32
		covered := 0
		for _, d := range saved {
			if d.Len != di.spec.Size {
				return fmt.Errorf("%w: dense %q has %d values in snapshot %d, %d declared", ErrRestore, name, d.Len, m.Seq, di.spec.Size)
			}
			b, err := readAll(store, m.Seq, d.File.Name)
			if err != nil {
				return fmt.Errorf("%w: dense %q: %w", ErrRestore, name, err)
			}
			if len(b) < 16 {
				return fmt.Errorf("%w: dense %q: %s is short", ErrRestore, name, d.File.Name)
			}
			slo, shi := int(binary.LittleEndian.Uint64(b)), int(binary.LittleEndian.Uint64(b[8:]))
			b = b[16:]
			if slo < 0 || slo > shi || shi > d.Len || len(b) < 4*(shi-slo) || len(b)%4 != 0 {
				return fmt.Errorf("%w: dense %q: %s holds a bad range [%d, %d)", ErrRestore, name, d.File.Name, slo, shi)
			}
			vals := make([]float32, len(b)/4)
			for i := range vals {
				vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			for x := max(lo, slo); x < min(hi, shi); x++ {
				values[x-lo] = vals[x-slo]
				covered++
			}
			if slo == lo && shi == hi {
				state = vals[shi-slo:]
			}
		}
		if covered != hi-lo {
			return fmt.Errorf("%w: dense %q: the snapshot covers %d of the %d values of [%d, %d)", ErrRestore, name, covered, hi-lo, lo, hi)
		}
		if err := s.onStripes(func(i int, st *stripe) error {
			if i != di.stripe {
				return nil
			}
			v := st.dense[name]
			if len(state) != len(v.State()) {
				state = nil // another range or optimizer: a fresh state
			}
			return v.Load(values, state)
		}); err != nil {
			return fmt.Errorf("%w: dense %q: %w", ErrRestore, name, err)
		}
	}
	return nil
}

func readAll(store snapshot.Store, seq uint64, name string) ([]byte, error) {
	r, err := store.Open(snapshot.Dir(seq) + "/" + name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b := make([]byte, r.Size())
	n, err := r.ReadAt(b, 0)
	if n == len(b) {
		err = nil
	}
	return b, err
}
