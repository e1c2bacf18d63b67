package serve

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
)

// denseName is the dense vector that holds the MLP's parameters.
const denseName = ctr.DenseName

// replica is the served model: the network, its parameters and each
// table's rows, as of the export seq of a chain (see the package doc); mu
// is held for reading by every request that scores with the replica and
// for writing while a delta read beforehand is applied to it, so that a
// request sees whole exports only.
type replica struct {
	mu sync.RWMutex
	// released is set, under mu held for writing, once the replica was
	// replaced and its rows' memory given back (release): a request that
	// found it then takes the replica that serves instead.
	released bool
	seq      uint64 // the export applied last; 0: none
	full     uint64 // the full export of its chain
	samples  int64  // trained samples at seq's cut
	net      *ctr.Net
	ns       []uint32 // the model's field namespaces (reader.DecoderOptions)
	params   []float32
	tables   []*ams.Frozen // by model table (config order)
	byName   map[string]int
	scratch  sync.Pool // of *scorer
	// mem is the replica's memory as of its last export applied
	// (measure), read by Status without the lock.
	mem atomic.Pointer[replicaMemory]
}

// newReplica builds an empty replica for the model of full export m: its
// network from the manifest's config and shape, its tables from the
// manifest's tables (values only, the manifest's initializer).
func newReplica(m *export.Manifest) (*replica, error) {
	cfg, net, err := ctr.NetOf(m.Config, m.Shape)
	if err != nil {
		return nil, fmt.Errorf("serve: export %d: %w", m.Seq, err)
	}
	r := &replica{net: net, ns: cfg.Model.Sequence.Namespace(0), byName: map[string]int{}}
	for i, spec := range cfg.Model.Tables {
		var init ams.InitSpec
		var rows int64
		for _, t := range m.Tables {
			if t.Name == spec.Name {
				if err := json.Unmarshal(t.Init, &init); err != nil {
					return nil, fmt.Errorf("serve: export %d: table %q's initializer: %w", m.Seq, t.Name, err)
				}
				for _, f := range t.Files {
					rows += f.Rows
				}
			}
		}
		tab, err := ams.NewFrozen(ams.TableSpec{Name: spec.Name, Dim: spec.Dim, Init: init}, int(min(rows, 1<<32-1)))
		if err != nil {
			return nil, fmt.Errorf("serve: export %d: table %q: %w", m.Seq, spec.Name, err)
		}
		r.tables = append(r.tables, tab)
		r.byName[spec.Name] = i
	}
	r.params = make([]float32, net.NumParams())
	return r, nil
}

// applyFull loads full export m (verified: export.Next) into r, a new
// replica not yet serving: each table's files (one per shard, each in id
// order) merged by id into one run of its ams.Frozen. r's tables, sized
// by the manifest's rows, may take at most budget bytes (-1: any): a
// larger model is refused before a row is read (or, counting the runs'
// offsets, once a table is read). An error leaves r in an
// unspecified state: the caller drops it.
func (r *replica) applyFull(s snapshot.Store, m *export.Manifest, budget int64) error {
	if m.Kind != export.KindFull || r.seq != 0 {
		return fmt.Errorf("serve: export %d (%s) onto a replica at export %d: want a full export onto a new one", m.Seq, m.Kind, r.seq)
	}
	rows, _ := m.Rows()
	over := func() error {
		if b := r.tableBytes(); budget >= 0 && b > budget {
			return fmt.Errorf("%w: export %d: its %d rows take %d bytes, and the model may take %d beside the one serving (MaxBytes)",
				ErrMemoryLimit, m.Seq, rows, b, budget)
		}
		return nil
	}
	if err := over(); err != nil { // the rows' arrays, sized already
		return err
	}
	for _, t := range m.Tables {
		i, err := r.table(m, t)
		if err != nil {
			return err
		}
		if err := loadMerged(s, m, t, r.tables[i]); err != nil {
			return err
		}
		if err := over(); err != nil { // and the run's offsets
			return err
		}
	}
	params, err := r.readParams(s, m)
	if err != nil {
		return err
	}
	copy(r.params, params)
	r.seq, r.full, r.samples = m.Seq, m.Full, m.Samples
	r.measure()
	return nil
}

// loadMerged loads table t of full export m into tab as one run: its
// files, each in id order, merged by id (a k-way merge of their heads).
func loadMerged(s snapshot.Store, m *export.Manifest, t export.Table, tab *ams.Frozen) error {
	var heads []*export.FileReader
	defer func() {
		for _, h := range heads {
			h.Close()
		}
	}()
	for i := range t.Files {
		h, err := export.OpenTableFile(s, m, t.Name, i)
		if err != nil {
			return err
		}
		if !h.Next() {
			err := h.Err()
			h.Close()
			if err != nil {
				return err
			}
			continue
		}
		heads = append(heads, h)
	}
	tab.StartRun()
	for len(heads) > 0 {
		k := 0
		id, v := heads[0].Row()
		for j := 1; j < len(heads); j++ {
			if jd, jv := heads[j].Row(); jd < id {
				k, id, v = j, jd, jv
			}
		}
		// A full export deletes nothing (export's reader refuses it); ids
		// out of order, or on two shards, are refused here.
		if err := tab.Append(id, v); err != nil {
			return fmt.Errorf("%w: export %d: %w", export.ErrCorrupt, m.Seq, err)
		}
		if !heads[k].Next() {
			err := heads[k].Err()
			heads[k].Close()
			heads = slices.Delete(heads, k, k+1)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// tableBytes returns the memory of r's tables and parameters whole.
func (r *replica) tableBytes() int64 {
	n := 4 * int64(cap(r.params))
	for _, t := range r.tables {
		n += t.MemoryBytes()
	}
	return n
}

// fits reports whether deltas ds keep r's tables within limit bytes,
// counting each row they hold as a new one, at its values and an overlay
// row's cost beyond them (rowOverhead):
// an error wrapping ErrMemoryLimit if not.
func (r *replica) fits(ds []*delta, limit int64) error {
	if limit < 0 {
		return nil
	}
	need := r.tableBytes()
	for _, d := range ds {
		for _, td := range d.tables {
			need += int64(len(td.ids)) * (4*int64(r.tables[td.tab].Dim()) + rowOverhead)
		}
	}
	if need > limit {
		return fmt.Errorf("%w: export %d: the model with its rows would take up to %d bytes, over %d (MaxBytes)", ErrMemoryLimit, ds[len(ds)-1].m.Seq, need, limit)
	}
	return nil
}

// rowOverhead is what a row costs a table beyond its values, with room
// to spare: its index entry and the slabs' unused room (about 31 bytes a
// row on a model of 1.4M rows, BENCHMARKS.md, issue 52 step 1): an
// overlay row is an ams.Table's.
const rowOverhead = 48

// table returns the index of export m's table t among r's, checking that
// the model has it, of t's dim.
func (r *replica) table(m *export.Manifest, t export.Table) (int, error) {
	i, ok := r.byName[t.Name]
	if !ok {
		return 0, fmt.Errorf("serve: export %d has table %q, which its model does not", m.Seq, t.Name)
	}
	if d := r.tables[i].Dim(); t.Dim != d {
		return 0, fmt.Errorf("serve: export %d: table %q of dim %d, the model's has %d", m.Seq, t.Name, t.Dim, d)
	}
	return i, nil
}

// readParams reads export m's MLP parameters, as many as r's network has.
func (r *replica) readParams(s snapshot.Store, m *export.Manifest) ([]float32, error) {
	params, err := export.ReadDense(s, m, denseName)
	if err != nil {
		return nil, err
	}
	if len(params) != len(r.params) {
		return nil, fmt.Errorf("serve: export %d: %d MLP parameters, the network has %d", m.Seq, len(params), len(r.params))
	}
	return params, nil
}

// delta is a delta export read into memory, checked against the replica's
// model, to be applied in place (applyDeltas, which then cannot fail).
type delta struct {
	m      *export.Manifest
	tables []tableDelta
	params []float32
}

// tableDelta is one table's rows of a delta: ids[i]'s values are
// values[i*dim:(i+1)*dim], deleted the ids it deletes.
type tableDelta struct {
	tab     int // r.tables' index
	ids     []uint64
	values  []float32
	deleted []uint64
}

// readDeltas reads deltas ms, a chain from r's export on, into memory
// for applyDeltas (no lock needed: it reads only r's shape, which never
// changes, and r.seq, which only the caller writes). A delta not linked
// to the one before it is refused.
func (r *replica) readDeltas(s snapshot.Store, ms []*export.Manifest) ([]*delta, error) {
	base := r.seq
	ds := make([]*delta, 0, len(ms))
	for _, m := range ms {
		if m.Kind != export.KindDelta || m.Base != base {
			return nil, fmt.Errorf("serve: export %d (%s) onto export %d, but the replica is at export %d", m.Seq, m.Kind, m.Base, base)
		}
		d, err := r.readDelta(s, m)
		if err != nil {
			return nil, err
		}
		ds, base = append(ds, d), m.Seq
	}
	return ds, nil
}

// readDelta reads delta export m for r.
func (r *replica) readDelta(s snapshot.Store, m *export.Manifest) (*delta, error) {
	d := &delta{m: m}
	for _, t := range m.Tables {
		i, err := r.table(m, t)
		if err != nil {
			return nil, err
		}
		td := tableDelta{tab: i}
		if err := export.ReadTable(s, m, t.Name, func(id uint64, v []float32) error {
			if v == nil {
				td.deleted = append(td.deleted, id)
				return nil
			}
			td.ids, td.values = append(td.ids, id), append(td.values, v...)
			return nil
		}); err != nil {
			return nil, err
		}
		d.tables = append(d.tables, td)
	}
	params, err := r.readParams(s, m)
	if err != nil {
		return nil, err
	}
	d.params = params
	return d, nil
}

// applyDeltas applies ds, read by readDeltas, to r in place, then counts
// r's memory (measure). The caller holds r.mu for writing, or r does not
// serve yet.
func (r *replica) applyDeltas(ds []*delta) {
	for _, d := range ds {
		for _, td := range d.tables {
			tab := r.tables[td.tab]
			for _, id := range td.deleted {
				tab.Delete(id)
			}
			dim := tab.Dim()
			for k, id := range td.ids {
				// The lengths were checked (readDelta: the table's dim), so
				// Set, whose only error is a length, cannot fail.
				_ = tab.Set(id, td.values[k*dim:(k+1)*dim])
			}
		}
		copy(r.params, d.params)
		r.seq, r.full, r.samples = d.m.Seq, d.m.Full, d.m.Samples
	}
	r.measure()
}

// release gives r's rows' memory back once the requests scoring with it
// end (they hold mu for reading); r must no longer be Server.cur.
func (r *replica) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	for _, t := range r.tables {
		t.Release()
	}
}

// Rows returns the rows the replica holds, by table.
func (r *replica) rows() map[string]int {
	out := map[string]int{}
	for _, t := range r.tables {
		out[t.Spec().Name] = t.Len()
	}
	return out
}

// scorer holds one request's buffers: a sample group, a batch builder,
// the pulled rows and the forward pass's.
type scorer struct {
	builder *compress.Builder
	infer   *ctr.Infer
	rows    [][]float32
	logits  []float32
}

// maxCandidates bounds the candidates of one request.
const maxCandidates = 4096

// scoreBatch is the most candidates a scorer takes through the network
// at once: a request of more is scored in batches of scoreBatch (each
// candidate's score does not depend on the others'), so that a scorer,
// one per request in flight, holds the activations of scoreBatch rows
// (about 0.3 MB at MLP 200-80), not of maxCandidates (5 MB).
const scoreBatch = 256

func (r *replica) newScorer() (*scorer, error) {
	b, err := compress.NewBuilder(compress.Options{BatchSize: scoreBatch, Layout: r.net.Layout})
	if err != nil {
		return nil, err
	}
	return &scorer{builder: b, infer: r.net.NewInfer(scoreBatch), rows: make([][]float32, len(r.tables)),
		logits: make([]float32, scoreBatch)}, nil
}

// score scores group g (one user line at level 1, the candidates at level
// 0) into out, one probability per candidate in order. The caller holds
// r.mu for reading: Pull without create changes nothing, so requests
// score concurrently.
func (r *replica) score(sc *scorer, g *reader.Group, out []float32) error {
	if err := sc.builder.Add(g); err != nil {
		return err
	}
	sc.builder.Flush()
	n := 0
	for b := sc.builder.Take(); b != nil; b = sc.builder.Take() {
		for t, tab := range r.tables {
			ids := b.Sparse.IDs(t)
			sc.rows[t] = grow(sc.rows[t], len(ids)*tab.Dim())
			tab.Pull(ids, sc.rows[t])
		}
		r.net.Forward(sc.infer, r.params, b, sc.rows, sc.logits)
		for j := range b.N {
			out[n+j] = densenet.Sigmoid(sc.logits[j])
		}
		n += b.N
		sc.builder.Recycle(b)
	}
	if n != len(out) {
		return fmt.Errorf("serve: %d scores for %d candidates", n, len(out))
	}
	return nil
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
