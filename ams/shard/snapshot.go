package shard

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
)

// snapChunk is how many rows a snapshot or restore moves per round of
// owner tasks.
const snapChunk = 4096

// onDense runs fn on the owner of the stripe that holds dense vector di,
// with the vector.
func (s *Shard) onDense(di *denseInfo, fn func(v *ams.DenseVar) error) error {
	tasks := make([]*task, len(s.stripes))
	tasks[di.stripe] = &task{op: opFunc, fn: func(st *stripe) error { return fn(st.dense[di.spec.Name]) }}
	return s.dispatch(tasks)
}

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
	s.modelMu.RLock()
	defer s.modelMu.RUnlock()
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
	applied, err := s.appliedState()
	if err != nil {
		return snapshot.Part{}, fmt.Errorf("ams: snapshot %d: the records of applied pushes: %w", seq, err)
	}
	state[ams.AppliedKey(index)] = applied
	tables, dense, err := s.writeParts(store, seq, index)
	return snapshot.Part{Tables: tables, Dense: dense, State: state}, err
}

func (s *Shard) writeParts(store snapshot.Store, seq uint64, index int) ([]snapshot.TableEntry, []snapshot.DenseEntry, error) {
	cat := s.cat.Load()
	names := slices.Sorted(maps.Keys(cat.tables))
	var tables []snapshot.TableEntry
	for _, name := range names {
		ti := cat.tables[name]
		files, err := s.writeTable(store, seq, index, ti)
		if err != nil {
			return nil, nil, fmt.Errorf("ams: snapshot %d of table %q: %w", seq, name, err)
		}
		spec, err := json.Marshal(ti.spec)
		if err != nil {
			return nil, nil, err
		}
		e := snapshot.TableEntry{Name: name, Spec: spec, Files: files}
		ff, ok, err := s.writeFilter(store, seq, index, ti)
		if err != nil {
			return nil, nil, fmt.Errorf("ams: snapshot %d of table %q's admission filter: %w", seq, name, err)
		}
		if ok {
			e.Admission = []snapshot.FileMeta{ff}
		}
		tables = append(tables, e)
	}
	dense, err := s.writeDense(store, seq, index, cat)
	return tables, dense, err
}

// writeChunk is one chunk of a table being written: the stripe each row
// comes from in id order, each stripe's range of its rows, and each
// stripe's encoded rows (w.n bytes per row of its range, in order).
type writeChunk struct {
	of     []int // the stripes whose rows it takes
	from   []int32
	lo, hi []int
	bufs   [][]byte
	// gone holds, per stripe, the positions (in its range) of ids whose
	// row is gone: an export writes deletions for them; their bytes in
	// bufs are unused.
	gone [][]int
}

// tableWrite is the state of one writeTable: each stripe's rows in id
// order and how far the chunks have taken them.
type tableWrite struct {
	s    *Shard
	ti   *tableInfo
	n    int          // encoded row size
	rows []ams.RowSet // per stripe: its ids, sorted, and their rows
	next []int        // per stripe: first row not yet in a chunk
	// ranges, when not nil, cut the ids into the ranges whose rows are
	// listed (into rows) and written one after the other, so that the
	// lists cost a range's rows, not the table's (planRanges); nil: rows
	// holds every row to write already (an export's delta).
	ranges []ams.IDRange
	most   []int      // per stripe: its rows in its largest range
	cold   [][]uint64 // per stripe: a tiered table's ids on disk, sorted
	// encode appends the encoding of the rows [lo, hi) of r (n bytes
	// each) to b, on the owner of tab's stripe, and the positions (from
	// lo) of those not in tab to missing, leaving their bytes for later.
	encode func(tab *ams.Table, b []byte, r *ams.RowSet, lo, hi int, missing []int) ([]byte, []int)
	// deletions lets gone rows through as deletions (an export's); a
	// snapshot's rows must all be there.
	deletions bool
	// fromCold appends the encoding of a row of the cold tier (its
	// snapshot encoding, enc) to b; nil: enc as it is.
	fromCold func(b, enc []byte) []byte
	missing  [][]int // per stripe: encode's scratch
}

// writeTable writes ti's rows into snapshot seq as parts
// (snapshot.TablePartName) written in parallel, one per core at most:
// part p holds the rows of the stripes i with i mod parts = p, merged in
// id order. Each part needs a core for the sstable writer's per-row work;
// a shard has a stripe per core by default.
func (s *Shard) writeTable(store snapshot.Store, seq uint64, index int, ti *tableInfo) ([]snapshot.FileMeta, error) {
	w := &tableWrite{s: s, ti: ti, n: s.rowBytes(ti), encode: (*ams.Table).AppendSnapshotRows}
	if err := w.start(); err != nil {
		return nil, err
	}
	parts := max(1, min(len(s.stripes), runtime.GOMAXPROCS(0)))
	files := make([]snapshot.FileMeta, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		var of []int
		for i := p; i < len(s.stripes); i += parts {
			of = append(of, i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tw, err := snapshot.CreateTablePart(store, seq, ti.spec.Name, index, p)
			if err != nil {
				errs[p] = err
				return
			}
			files[p], errs[p] = w.write(tw, of)
		}()
	}
	wg.Wait()
	return files, errors.Join(errs...)
}

// start readies w for its writes: with rows not given, it plans the
// ranges they are listed in.
func (w *tableWrite) start() error {
	n := len(w.s.stripes)
	w.next, w.missing = make([]int, n), make([][]int, n)
	if w.rows != nil {
		return nil
	}
	w.rows, w.cold = make([]ams.RowSet, n), make([][]uint64, n)
	return w.planRanges()
}

// rangeRows is about how many rows of a stripe a snapshot (or a full
// export) lists and sorts at a time when the table has more: 24 bytes a
// row (id, slot and the sort's scratch), 12 MiB. Below it the lists
// cost a stripe's rows, above it they stay a small fraction of a byte
// a row of the table (BENCHMARKS, "Issue 30, step 4"). A variable only
// so that tests can cut small tables into many ranges.
var rangeRows = 1 << 19

// maxRanges bounds the ranges a table is cut into: listing each range
// reads every stripe's whole index once.
const maxRanges = 32

// planRanges cuts the ids of w's table into ranges of about rangeRows
// rows per stripe (at most maxRanges of them), from the stripes' ids
// counted in an ams.IDHistogram: ranges of ids, not of hash buckets, so
// that every range's rows follow the previous range's in id order.
func (w *tableWrite) planRanges() error {
	s, idx := w.s, w.ti.idx
	n := len(s.stripes)
	w.most = make([]int, n)
	los, his := make([]uint64, n), make([]uint64, n)
	if err := s.onStripes(func(i int, st *stripe) error {
		w.most[i] = st.tables[idx].Len()
		if w.most[i] > rangeRows {
			los[i], his[i], _ = st.tables[idx].IDBounds()
		}
		return nil
	}); err != nil {
		return err
	}
	total := 0
	for _, m := range w.most {
		total += m
	}
	if slices.Max(w.most) <= rangeRows {
		w.ranges = []ams.IDRange{ams.AllIDs}
		return nil
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i, m := range w.most {
		if m > rangeRows {
			lo, hi = min(lo, los[i]), max(hi, his[i])
		}
	}
	hists := make([]*ams.IDHistogram, n)
	if err := s.onStripes(func(i int, st *stripe) error {
		hists[i] = ams.NewIDHistogram(lo, hi) // ids outside count at the ends
		st.tables[idx].CountIDs(hists[i])
		return nil
	}); err != nil {
		return err
	}
	all := ams.NewIDHistogram(lo, hi)
	for _, h := range hists {
		all.Add(h)
	}
	w.ranges = all.Ranges(max(rangeRows*n, (total+maxRanges-1)/maxRanges))
	for i, h := range hists {
		w.most[i] = 0
		for _, rg := range w.ranges {
			w.most[i] = max(w.most[i], h.Count(rg))
		}
	}
	return nil
}

// write writes the rows of the stripes of (each of w.rows's stripes, in
// at most one write at a time) in id order to tw and closes it: range
// after range (when w has ranges), each listed on the stripes' owners
// and then written a chunk at a time.
func (w *tableWrite) write(tw *snapshot.TableWriter, of []int) (snapshot.FileMeta, error) {
	defer tw.Abort()
	var chunks [2]writeChunk
	for i := range chunks {
		c := &chunks[i]
		c.of = of
		c.lo, c.hi = make([]int, len(w.s.stripes)), make([]int, len(w.s.stripes))
		c.bufs = make([][]byte, len(w.s.stripes))
		c.gone = make([][]int, len(w.s.stripes))
	}
	if w.ranges == nil {
		if err := w.writeRows(tw, &chunks); err != nil {
			return snapshot.FileMeta{}, err
		}
	}
	for k := range w.ranges {
		if err := w.list(of, k); err != nil {
			return snapshot.FileMeta{}, err
		}
		if err := w.writeRows(tw, &chunks); err != nil {
			return snapshot.FileMeta{}, err
		}
	}
	return tw.Close()
}

// writeRows hands the listed rows of chunks' stripes to tw, a chunk at a
// time: the owners encode the rows of one chunk (each its own, in
// parallel) while this goroutine hands the previous chunk to the table
// writer, which writes its blocks from a goroutine of its own.
func (w *tableWrite) writeRows(tw *snapshot.TableWriter, chunks *[2]writeChunk) error {
	cur, other := &chunks[0], &chunks[1]
	if !w.plan(cur) {
		return nil
	}
	pending := w.encodeChunk(cur)
	for {
		err := <-pending
		pending = nil
		if err != nil {
			return err
		}
		more := w.plan(other)
		if more {
			pending = w.encodeChunk(other)
		}
		if err := w.add(tw, cur); err != nil {
			if pending != nil {
				<-pending
			}
			return err
		}
		if !more {
			return nil
		}
		cur, other = other, cur
	}
}

// list has the owners of the stripes of lists their rows of range k.
func (w *tableWrite) list(of []int, k int) error {
	tasks := make([]*task, len(w.s.stripes))
	for _, i := range of {
		w.next[i] = 0
		tasks[i] = &task{op: opFunc, fn: func(st *stripe) error { return w.listStripe(st, i, k) }}
	}
	return w.s.dispatch(tasks)
}

// listStripe lists stripe i's rows of range k, in both tiers, sorted by
// id, on its owner.
func (w *tableWrite) listStripe(st *stripe, i, k int) error {
	rg, r := w.ranges[k], &w.rows[i]
	st.tables[w.ti.idx].SortedRowsIn(r, rg, w.most[i])
	cd := st.lives[w.ti.idx].coldOf()
	if cd == nil {
		return nil
	}
	if k == 0 {
		ids, err := cd.ids(nil)
		if err != nil {
			return err
		}
		sortIDs(ids)
		w.cold[i] = ids
	}
	ids := w.cold[i]
	a, _ := slices.BinarySearch(ids, rg.Lo)
	b, found := slices.BinarySearch(ids, rg.Hi)
	if found {
		b++
	}
	r.MergeAbsent(ids[a:b])
	return nil
}

// plan merges the lists of c's stripes into c's next snapChunk rows and
// reports whether c has any.
func (w *tableWrite) plan(c *writeChunk) bool {
	next := w.next
	c.from = c.from[:0]
	for _, i := range c.of {
		c.lo[i] = next[i]
	}
	if len(c.of) == 1 { // one stripe: no merge
		i := c.of[0]
		k := min(snapChunk, w.rows[i].Len()-next[i])
		for range k {
			c.from = append(c.from, int32(i))
		}
		next[i] += k
	}
	for len(c.of) > 1 && len(c.from) < snapChunk {
		best := -1
		for _, i := range c.of {
			if next[i] < w.rows[i].Len() && (best < 0 || w.rows[i].IDs()[next[i]] < w.rows[best].IDs()[next[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		c.from = append(c.from, int32(best))
		next[best]++
	}
	for _, i := range c.of {
		c.hi[i] = next[i]
	}
	return len(c.from) > 0
}

// encodeChunk has the owners of c's stripes encode c's rows; the result
// comes on the channel.
func (w *tableWrite) encodeChunk(c *writeChunk) <-chan error {
	done := make(chan error, 1)
	tasks := make([]*task, len(w.s.stripes))
	for _, i := range c.of {
		tasks[i] = &task{op: opFunc, fn: func(st *stripe) error { return w.encodeStripe(st, i, c) }}
	}
	go func() { done <- w.s.dispatch(tasks) }()
	return done
}

// encodeStripe encodes stripe i's rows of c, on its owner: from DRAM, and
// those DRAM lacks from a tiered table's cold tier, read in one batch.
func (w *tableWrite) encodeStripe(st *stripe, i int, c *writeChunk) error {
	tab := st.tables[w.ti.idx]
	r := &w.rows[i]
	lo, hi := c.lo[i], c.hi[i]
	b, missing := w.encode(tab, c.bufs[i][:0], r, lo, hi, w.missing[i][:0])
	c.bufs[i], w.missing[i], c.gone[i] = b, missing, c.gone[i][:0]
	if len(missing) == 0 {
		return nil
	}
	ids := r.IDs()[lo:hi]
	var cd *cold
	if x := st.lives[w.ti.idx].coldOf(); x != nil && x.rows > 0 {
		cd = x
		coldIDs := make([]uint64, len(missing)) // sorted, as ids are
		for k, j := range missing {
			coldIDs[k] = ids[j]
		}
		if err := cd.read(coldIDs, false); err != nil {
			return err
		}
	}
	n := w.n
	for k, j := range missing {
		if cd != nil && cd.found[k] {
			out := w.coldRow(b[j*n:j*n:(j+1)*n], cd.got[k])
			if len(out) != n {
				return fmt.Errorf("row %d from the cold tier encodes to %d bytes, want %d", ids[j], len(out), n)
			}
			continue
		}
		if !w.deletions {
			return fmt.Errorf("row %d vanished while being written (were pushes paused?)", ids[j])
		}
		c.gone[i] = append(c.gone[i], j)
	}
	return nil
}

// coldRow appends the row a tiered table's cold tier holds (enc, encoded
// as ams.Table.AppendSnapshotRow does) to b in the written encoding.
func (w *tableWrite) coldRow(b, enc []byte) []byte {
	if w.fromCold == nil {
		return append(b, enc...)
	}
	return w.fromCold(b, enc)
}

// add hands c's encoded rows to tw in id order.
func (w *tableWrite) add(tw *snapshot.TableWriter, c *writeChunk) error {
	n := w.n
	k := make([]int, len(w.rows)) // per stripe: rows of c written
	g := make([]int, len(w.rows)) // per stripe: gone ids of c passed
	for _, i := range c.from {
		j := k[i]
		k[i]++
		id := w.rows[i].IDs()[c.lo[i]+j]
		if gi := g[i]; gi < len(c.gone[i]) && c.gone[i][gi] == j {
			g[i]++
			if err := tw.Delete(id); err != nil {
				return err
			}
			continue
		}
		if err := tw.Add(id, c.bufs[i][j*n:(j+1)*n]); err != nil {
			return err
		}
	}
	return nil
}

// sortIDs sorts ids in increasing order (ams.SortIDs: a radix sort).
func sortIDs(ids []uint64) { ams.SortIDs(ids) }

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
		if err := s.onDense(di, func(v *ams.DenseVar) error {
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
		out = append(out, snapshot.DenseEntry{Name: name, Len: di.spec.Size, Lo: di.lo, Hi: di.hi, Spec: spec, File: f})
	}
	return out, nil
}

func appendFloats(b []byte, v []float32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

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
	// Partition reports whether the shard owns a virtual partition: it
	// takes the admission filter states of those (nil: of every one).
	Partition func(p uint32) bool
	// Partitions is the partition count of the map restored onto (0: keep
	// the shard's): the stripes of the restored tables, and the partitions
	// of their admission filter states, are chosen by it.
	Partitions int
	// SameLayout says the snapshot was written under the map restored
	// onto (same shards, same partition assignment): the rows Row gives
	// the shard are all in the files the shard of slot Index wrote, and
	// it reads only those, not every shard's.
	SameLayout bool
}

// reads reports whether the shard reads file f of table t.
func (own Ownership) reads(table string, f snapshot.FileMeta) bool {
	if !own.SameLayout {
		return true
	}
	k, ok := snapshot.TableFileShard(table, f.Name)
	return ok && k == own.Index
}

// Begin starts version v on an empty shard: what a new cluster's
// scheduler orders of every shard of its first map, as a restore of
// nothing. partitions is the map's partition count (0: keep the
// shard's). A shard that was never begun or restored serves no version
// (Options.Blank).
func (s *Shard) Begin(v uint64, partitions int) error {
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	if err := s.advanceVersion(v); err != nil {
		return err
	}
	if err := s.reset(v, partitions); err != nil {
		return fmt.Errorf("%w: %w", ams.ErrRestore, err)
	}
	return nil
}

// reset empties the shard (tables, dense vectors, state entries) and has
// every stripe serve version v from here on: a pull or push of another
// version that reaches a stripe after the reset is refused, and one that
// got there before is wiped. The caller holds modelMu and advanced the
// shard's version to v first, so no new request of an older one gets in.
// Tables declared from here on are striped by partitions of that many (0:
// the current count).
func (s *Shard) reset(v uint64, partitions int) error {
	if partitions < 0 || partitions > ams.MaxPartitions {
		return fmt.Errorf("%w: %d partitions, want 1 to %d", ams.ErrBadRequest, partitions, ams.MaxPartitions)
	}
	if partitions == 0 {
		partitions = s.cat.Load().partitions
	}
	s.declareMu.Lock()
	defer s.declareMu.Unlock()
	if err := s.onStripes(func(_ int, st *stripe) error {
		st.version, st.tables, st.lives, st.dense = v, nil, nil, map[string]*ams.DenseVar{}
		return nil
	}); err != nil {
		return err
	}
	s.cat.Store(newCatalog(partitions))
	if err := s.tiers.clear(); err != nil {
		return err
	}
	s.stateMu.Lock()
	s.state = map[string][]byte{}
	s.stateMu.Unlock()
	s.setApplied(nil)
	s.exportMu.Lock()
	s.export = exportState{} // a new model: the next export is full
	s.exportMu.Unlock()
	return nil
}

// Restore makes the shard hold snapshot m from store and nothing else:
// it empties the shard (reset: every table, dense vector and state entry
// goes, so a model declared after the snapshot was taken is not left
// half there), then loads what own says belongs to it: the shard reads
// every shard's file of every table,
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
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	if err := s.reset(s.Version(), own.Partitions); err != nil {
		return fmt.Errorf("%w: %w", ams.ErrRestore, err)
	}
	var specs []ams.TableSpec
	for _, t := range m.Tables {
		var spec ams.TableSpec
		if err := json.Unmarshal(t.Spec, &spec); err != nil {
			return fmt.Errorf("%w: table %q: bad spec in the manifest: %v", ams.ErrRestore, t.Name, err)
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
				return fmt.Errorf("%w: dense %q: bad spec in the manifest", ams.ErrRestore, d.Name)
			}
			lo, hi := ams.DenseRange(spec.Size, own.Index, own.Shards)
			dense = append(dense, DenseDecl{Spec: spec, Lo: lo, Hi: hi})
		}
	}
	// The records, and with them the sample clock, come first: the tables
	// declared next take the clock their restored rows were stamped by.
	applied, err := restoredApplied(m.Readers, own)
	if err != nil {
		return err
	}
	s.setApplied(applied)
	if _, err := s.Declare(s.Version(), specs, dense); err != nil {
		return fmt.Errorf("%w: %w", ams.ErrRestore, err)
	}
	ownsState := own.State
	cat := s.cat.Load()
	for _, t := range m.Tables {
		if err := s.restoreTable(store, m.Seq, cat.tables[t.Name], t, own); err != nil {
			return fmt.Errorf("%w: snapshot %d table %q: %w", ams.ErrRestore, m.Seq, t.Name, err)
		}
		if err := s.restoreFilter(store, m.Seq, cat.tables[t.Name], t, own); err != nil {
			return fmt.Errorf("%w: snapshot %d table %q: %w", ams.ErrRestore, m.Seq, t.Name, err)
		}
	}
	if err := s.restoreDense(store, m, cat); err != nil {
		return err
	}
	state := map[string][]byte{}
	for k, v := range m.Readers {
		if strings.HasPrefix(k, ams.StateAppliedPrefix) {
			continue // the shards' own records, not entries of PutState
		}
		if ownsState(k) || k == SyncStateKey { // every shard has its own sync progress
			state[k] = slices.Clone([]byte(v))
		}
	}
	s.stateMu.Lock()
	s.state = state
	s.stateMu.Unlock()
	return nil
}

// restoreChunk is the rows of one chunk of a restore, by stripe: their
// ids and their encoded rows.
type restoreChunk struct {
	n    int
	ids  [][]uint64
	bufs [][]byte
}

func (c *restoreChunk) reset() {
	c.n = 0
	for i := range c.ids {
		c.ids[i], c.bufs[i] = c.ids[i][:0], c.bufs[i][:0]
	}
}

// restoreTable reads every file of t that own says the shard reads and
// loads the rows own gives the shard, a chunk at a time: the owners load
// one chunk (each its rows, in parallel) while a reader reads the next.
// Files are read by up to GOMAXPROCS readers at once (a shard wrote its
// parts in parallel); the files hold disjoint rows.
func (s *Shard) restoreTable(store snapshot.Store, seq uint64, ti *tableInfo, t snapshot.TableEntry, own Ownership) error {
	n := s.rowBytes(ti)
	if err := s.emptyTable(ti, s.restoreReserve(t, own, n)); err != nil {
		return err
	}
	var files []snapshot.FileMeta
	for _, f := range t.Files {
		if own.reads(t.Name, f) {
			files = append(files, f)
		}
	}
	readers := min(runtime.GOMAXPROCS(0), len(files))
	errs := make([]error, readers)
	var next atomic.Int64 // the next file to read
	var failed atomic.Bool
	var wg sync.WaitGroup
	for k := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &tableRestore{s: s, cat: s.cat.Load(), store: store, seq: seq, ti: ti, table: t.Name, own: own, n: n}
			for i := range r.chunks {
				c := &r.chunks[i]
				c.ids, c.bufs = make([][]uint64, len(s.stripes)), make([][]byte, len(s.stripes))
			}
			r.cur, r.other = &r.chunks[0], &r.chunks[1]
			var err error
			for i := int(next.Add(1) - 1); i < len(files) && !failed.Load(); i = int(next.Add(1) - 1) {
				if err = r.read(files[i]); err != nil {
					break
				}
			}
			if err == nil {
				err = r.flush()
			}
			if werr := r.wait(); err == nil {
				err = werr
			}
			if err != nil {
				failed.Store(true)
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// restoreReserve is the number of rows each stripe should reserve room
// for, to size each stripe's index once rather than grow it by doubling:
// the rows of t's files the shard reads (as far as their sizes allow, rows
// being n bytes), split over the shards restored onto, and some imbalance.
func (s *Shard) restoreReserve(t snapshot.TableEntry, own Ownership, n int) int {
	var rows int64
	for _, f := range t.Files {
		if own.reads(t.Name, f) {
			rows += min(f.Rows, f.Size/int64(n+8))
		}
	}
	if own.Shards > 1 && !own.SameLayout {
		rows /= int64(own.Shards)
	}
	return int(rows/int64(len(s.stripes))) * 17 / 16
}

// emptyTable deletes every row of ti and reserves room for reserve rows
// in each stripe: the snapshot replaces the table.
func (s *Shard) emptyTable(ti *tableInfo, reserve int) error {
	return s.onStripes(func(_ int, st *stripe) error {
		tab := st.tables[ti.idx]
		for _, id := range tab.IDs(nil) {
			tab.Delete(id)
		}
		tab.Reserve(reserve)
		if cd := st.lives[ti.idx].coldOf(); cd != nil {
			return cd.empty()
		}
		return nil
	})
}

// tableRestore is the state of one restoreTable: the chunk being read,
// and the one being loaded by the owners.
type tableRestore struct {
	s     *Shard
	cat   *catalog
	store snapshot.Store
	seq   uint64
	ti    *tableInfo
	table string
	own   Ownership
	n     int // encoded row size

	chunks     [2]restoreChunk
	cur, other *restoreChunk
	pending    <-chan error // the load of other, while it runs
}

// load has the owners load c's rows; the result comes on the channel.
func (r *tableRestore) load(c *restoreChunk) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- r.s.onStripes(func(i int, st *stripe) error {
			tab := st.tables[r.ti.idx]
			if err := tab.LoadSnapshotRows(c.ids[i], c.bufs[i]); err != nil {
				return err
			}
			if l := st.lives[r.ti.idx]; l != nil && l.cold != nil && int64(tab.Len()) > l.limit {
				l.evict(tab) // the excess to disk (tiered.go, 4)
				return l.cold.err
			}
			return nil
		})
	}()
	return done
}

// wait waits for the pending load, if any, and returns its error.
func (r *tableRestore) wait() error {
	if r.pending == nil {
		return nil
	}
	err := <-r.pending
	r.pending = nil
	return err
}

// flush waits for the pending load and starts loading the current chunk,
// if it has rows; reading goes on into the other chunk.
func (r *tableRestore) flush() error {
	if err := r.wait(); err != nil {
		return err
	}
	if r.cur.n > 0 {
		r.pending = r.load(r.cur)
		r.cur, r.other = r.other, r.cur
		r.cur.reset()
	}
	return nil
}

// read reads the rows of file f that the shard owns into chunks.
func (r *tableRestore) read(f snapshot.FileMeta) error {
	tr, err := snapshot.OpenTable(r.store, r.seq, f)
	if err != nil {
		return err
	}
	defer tr.Close()
	for tr.Next() {
		id, v := tr.Row()
		if tr.Deleted() {
			return fmt.Errorf("%w: %s: a deletion of row %d (a snapshot holds rows only)", snapshot.ErrCorrupt, f.Name, id)
		}
		if !r.own.Row(r.table, id) {
			continue
		}
		if len(v) != r.n {
			return fmt.Errorf("%s: row %d has %d bytes, want %d: %w", f.Name, id, len(v), r.n, ams.ErrDimMismatch)
		}
		cur := r.cur
		i := r.cat.stripeOf(r.ti, id, len(r.s.stripes))
		cur.ids[i] = append(cur.ids[i], id)
		cur.bufs[i] = append(cur.bufs[i], v...)
		if cur.n++; cur.n == snapChunk {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	return tr.Err()
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
			return fmt.Errorf("%w: snapshot %d has no dense vector %q", ams.ErrRestore, m.Seq, name)
		}
		lo, hi := di.lo, di.hi
		values := make([]float32, hi-lo)
		var state []float32
		covered := 0
		for _, d := range saved {
			if d.Len != di.spec.Size {
				return fmt.Errorf("%w: dense %q has %d values in snapshot %d, %d declared", ams.ErrRestore, name, d.Len, m.Seq, di.spec.Size)
			}
			b, err := readAll(store, m.Seq, d.File.Name)
			if err != nil {
				return fmt.Errorf("%w: dense %q: %w", ams.ErrRestore, name, err)
			}
			if len(b) < 16 {
				return fmt.Errorf("%w: dense %q: %s is short", ams.ErrRestore, name, d.File.Name)
			}
			slo, shi := int(binary.LittleEndian.Uint64(b)), int(binary.LittleEndian.Uint64(b[8:]))
			b = b[16:]
			if slo < 0 || slo > shi || shi > d.Len || len(b) < 4*(shi-slo) || len(b)%4 != 0 {
				return fmt.Errorf("%w: dense %q: %s holds a bad range [%d, %d)", ams.ErrRestore, name, d.File.Name, slo, shi)
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
			return fmt.Errorf("%w: dense %q: the snapshot covers %d of the %d values of [%d, %d)", ams.ErrRestore, name, covered, hi-lo, lo, hi)
		}
		if err := s.onDense(di, func(v *ams.DenseVar) error {
			if len(state) != len(v.State()) {
				state = nil // another range or optimizer: a fresh state
			}
			return v.Load(values, state)
		}); err != nil {
			return fmt.Errorf("%w: dense %q: %w", ams.ErrRestore, name, err)
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
