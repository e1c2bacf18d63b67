package shard

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/tier"
	"github.com/xdlgo/xps/filters"
)

// Tiered tables (issue 25). A table declared with storage tiered keeps at
// most its budget's rows in DRAM, in the stripes' tables as any other, and
// the rest in the shard's cold tier: a Pebble DB (package tier) on local
// disk, one per shard and tier directory, where each stripe's rows of the
// table are one key range (its space). The stripe owner is the only
// reader and writer of its space, as of its DRAM rows:
//
//  1. A row's current copy is in DRAM if DRAM has it, else on disk. A pull
//     or push first finds the ids of its part that have no row in DRAM,
//     reads them from disk with one batched, sorted read (ids a Bloom
//     filter of the ids ever written says are not there cost nothing),
//     and loads those found into DRAM (promotion), leaving the disk copy
//     where it is, stale, and the row marked shadowed (ams.MarkShadowed):
//     a delete per promotion cost a sixth of a tiered job's throughput.
//     Then the request runs as on a table in memory. So admission,
//     creation and the optimizer see every row the table holds wherever
//     it was: the rows a tiered table ends with are those of the table in
//     memory, bit for bit. A shadowed row that leaves DRAM overwrites its
//     disk copy (the budget) or deletes it (expiry); the disk's expiry
//     sweep passes over copies whose row is in DRAM; snapshots and
//     exports take the DRAM copy.
//  2. The budget's CLOCK (lifecycle.go) moves the rows it evicts to disk
//     in one sorted batch per maintain (demotion) instead of dropping
//     them: no tombstone, no eviction counted. A write that fails puts
//     its rows back in DRAM (over budget: none is lost) and the table
//     fails every request from then on with ams.ErrTier, as does a failed
//     read: the job stops and recovers from its last snapshot.
//  3. A row keeps its dirty mark (an export's) across tiers, at no cost
//     per cold row: a row's step (its last update, which it carries) tells
//     whether an export took it since. An export records the table's step
//     in each stripe's cold tier; a delta lists, with DRAM's dirty rows,
//     the rows only on disk whose step is at or after the previous
//     export's (a scan of the disk's rows), and a promotion marks dirty a
//     row whose step is. A delta may repeat a row updated in the step of
//     the export before; it never misses one.
//  4. A snapshot or export lists, and reads, the rows of both tiers (the
//     cold ones in a batched read per chunk); a restore loads the rows into
//     DRAM a chunk at a time, and the budget moves the excess to disk
//     after each chunk. A reset (restore, begin) and a table's emptying
//     clear the disk's rows with the DRAM's.
//  5. The DB's files are scratch space: a shard's first open discards
//     what an earlier process left (tier.Options.Fresh), since a shard
//     that died restores both tiers from a snapshot.

// tierSpace is the key range of stripe's rows of the table idx.
func tierSpace(idx, stripe int) uint32 { return uint32(idx)<<10 | uint32(stripe) }

// tiers are a shard's cold tier stores, one per tier directory, opened at
// the first declaration of a tiered table in the directory and closed by
// Close.
type tiers struct {
	roots storeRoots // Options.TierDirs, cleaned
	mu    sync.Mutex
	open  map[string]*tier.Store // by the store's directory
}

// storeFor returns the store of a tiered table's spec: in the spec's tier
// directory, which must lie under one of the roots, or the first root.
func (t *tiers) storeFor(id string, spec ams.TableSpec) (*tier.Store, error) {
	dir := spec.TierDir
	if dir == "" {
		if len(t.roots.dirs) == 0 {
			return nil, fmt.Errorf("%w: table %q is tiered, and this shard has no tier directory (start it with -tier-dir DIR, shard.Options.TierDirs)", ams.ErrBadSpec, spec.Name)
		}
		dir = t.roots.dirs[0]
	}
	real, err := t.roots.allowed(dir)
	if err != nil {
		return nil, fmt.Errorf("table %q: tier_dir: %w", spec.Name, err)
	}
	path := filepath.Join(real, safeName(id))
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.open[path]; ok {
		return s, nil
	}
	s, err := tier.Open(tier.Options{Dir: path, Fresh: true})
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: %w", ams.ErrTier, spec.Name, err)
	}
	if t.open == nil {
		t.open = map[string]*tier.Store{}
	}
	t.open[path] = s
	return s, nil
}

// safeName makes a shard ID a directory name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == 0 {
			return '_'
		}
		return r
	}, id)
}

// clear removes every cold row (a reset).
func (t *tiers) clear() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, s := range t.open {
		if err := s.Clear(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close closes every store.
func (t *tiers) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, s := range t.open {
		errs = append(errs, s.Close())
	}
	t.open = nil
	return errors.Join(errs...)
}

// stats returns every store's figures, by directory.
func (t *tiers) stats() []TierStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []TierStats
	for dir, s := range t.open {
		out = append(out, TierStats{Dir: dir, Stats: s.Stats()})
	}
	slices.SortFunc(out, func(a, b TierStats) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}

// TierStats are one cold tier store's figures (Pebble's included).
type TierStats struct {
	Dir string
	tier.Stats
}

// cold is a stripe's cold tier of one tiered table.
type cold struct {
	name  string
	store *tier.Store
	space uint32
	// rows is the rows the space holds, shadowed those of them that are
	// stale copies of rows in DRAM (invariant 1); err the failure that
	// stopped the table (invariant 2).
	rows, shadowed int64
	err            error
	// exportStep is the table's step when the last export listed the
	// space's rows (invariant 3).
	exportStep uint32
	usage      ams.TierUsage
	// filter holds the ids written to disk (see mayHave), filterAdds how
	// many; nil before the first write.
	filter                *bloom.BloomFilter
	filterAdds, filterCap uint
	// The expiry sweep (expire): its lap, and where it is (after sweepAt,
	// unless !swept: from the start).
	lap     filters.Lap
	inLap   bool
	sweepAt uint64
	swept   bool
	expired []uint64

	// Buffers, reused: a read's ids, rows and flags; the row being
	// loaded; the rows an eviction keeps, to write.
	miss         []uint64
	at           []int32
	got          [][]byte
	found        []bool
	values, st   []float32
	evIDs        []uint64
	evRows       []byte
	evDirty      []bool
	evShadow     []bool
	drops        []uint64
	order        []int
	putIDs       []uint64
	putRows      [][]byte
	rowBytesEach int
}

func newCold(tab *ams.Table, store *tier.Store, space uint32) *cold {
	return &cold{name: tab.Spec().Name, store: store, space: space,
		values: make([]float32, tab.Dim()), st: make([]float32, tab.StateWidth()), rowBytesEach: tab.SnapshotRowBytes()}
}

// The cold ids' filter: a Bloom filter of every id written to the space
// since it was last emptied, so that the ids a pull or push misses in
// DRAM and that were never on disk (new rows, most misses of a growing
// table) cost no disk read. Deleted ids stay in it, as false positives;
// a filter past its capacity is rebuilt, twice as large, from the
// space's ids.
const (
	filterFP       = 0.01
	filterMinRows  = 1 << 16
	filterGrowRows = 2
)

// mayHave reports whether id may be on disk.
func (c *cold) mayHave(id uint64) bool {
	if c.filter == nil {
		return false
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	return c.filter.Test(b[:])
}

// maybeCold keeps the ids of ids that may be on disk, in place.
func (c *cold) maybeCold(ids []uint64) []uint64 {
	return slices.DeleteFunc(ids, func(id uint64) bool { return !c.mayHave(id) })
}

// remember adds ids, just written, fresh of them new keys, to the filter.
func (c *cold) remember(ids []uint64, fresh int) {
	if c.filter == nil || c.filterAdds+uint(fresh) > c.filterCap {
		c.rebuildFilter(uint(c.rows) + uint(fresh))
	}
	c.add(ids)
	c.filterAdds += uint(fresh)
}

func (c *cold) add(ids []uint64) {
	var b [8]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(b[:], id)
		c.filter.Add(b[:])
	}
}

// rebuildFilter makes a filter for twice need ids (at least
// filterMinRows) from the ids on disk.
func (c *cold) rebuildFilter(need uint) {
	capacity := max(filterGrowRows*need, filterMinRows)
	c.filter, c.filterCap = bloom.NewWithEstimates(capacity, filterFP), capacity
	c.filterAdds = uint(c.rows)
	if c.rows > 0 {
		var b [8]byte
		c.scanAll(func(id uint64, _ []byte) {
			binary.LittleEndian.PutUint64(b[:], id)
			c.filter.Add(b[:])
		})
	}
}

// scanAll calls fn for every row of the space in id order (row valid only
// during the call), scanChunk rows per iterator; an error fails the tier.
func (c *cold) scanAll(fn func(id uint64, row []byte)) error {
	first, after := true, uint64(0)
	for {
		last, end, err := c.store.ScanFrom(c.space, after, first, scanChunk, func(id uint64, row []byte) error {
			fn(id, row)
			return nil
		})
		if err != nil {
			return c.fail(err)
		}
		if end {
			return nil
		}
		first, after = false, last
	}
}

// scanChunk is the rows scanAll reads per iterator.
const scanChunk = 1 << 16

// fail records the first failure of the cold tier and returns it.
func (c *cold) fail(err error) error {
	if c.err == nil {
		c.err = fmt.Errorf("%w: table %q: %w (the table refuses requests until the shard is restored)", ams.ErrTier, c.name, err)
	}
	return c.err
}

// read reads the rows of ids (sorted, unique) from disk into c.got and
// c.found; a read for a request (not a snapshot's or an export's) counts
// in the usage.
func (c *cold) read(ids []uint64, request bool) error {
	n := len(ids)
	for len(c.got) < n {
		c.got = append(c.got, nil)
	}
	c.found = slices.Grow(c.found[:0], n)[:n]
	if err := c.store.Get(c.space, ids, c.got[:n], c.found); err != nil {
		return c.fail(err)
	}
	if request {
		c.usage.DiskReads += uint64(n)
		c.usage.DiskBatches++
	}
	return nil
}

// promote moves the rows of ids (a part of a pull or push) that are on
// disk into tab (invariant 1).
func (c *cold) promote(tab *ams.Table, ids []uint64) error {
	if c.err != nil {
		return c.err
	}
	c.usage.Lookups += uint64(len(ids))
	c.miss = tab.Missing(ids, c.miss[:0])
	c.usage.Misses += uint64(len(c.miss))
	if len(c.miss) == 0 || c.rows == 0 {
		return nil
	}
	c.miss = c.maybeCold(c.miss)
	if len(c.miss) == 0 {
		return nil
	}
	sortIDs(c.miss)
	c.miss = slices.Compact(c.miss)
	if err := c.read(c.miss, true); err != nil {
		return err
	}
	moved := 0
	for i, id := range c.miss {
		if !c.found[i] {
			continue
		}
		if err := tab.LoadSnapshotRow(id, c.got[i], c.values, c.st); err != nil {
			return c.fail(err)
		}
		tab.MarkShadowed(id) // its disk copy stays, stale (invariant 1)
		if tab.SnapshotRowStep(c.got[i]) >= c.exportStep {
			tab.MarkDirty(id) // updated since the last export (invariant 3)
		}
		moved++
	}
	c.shadowed += int64(moved)
	c.usage.Promoted += uint64(moved)
	return nil
}

// readThrough overwrites, in p's buffer, the rows of p's ids that are on
// disk with their values: a pull without create, which tab.PullAt served
// (the ids without a row in DRAM read as their initial rows), reads the
// disk's rows without moving them.
func (c *cold) readThrough(tab *ams.Table, p *part) error {
	if c.err != nil {
		return c.err
	}
	c.usage.Lookups += uint64(len(p.ids))
	c.at = tab.MissingAt(p.ids, c.at[:0])
	c.usage.Misses += uint64(len(c.at))
	if len(c.at) == 0 || c.rows == 0 {
		return nil
	}
	c.at = slices.DeleteFunc(c.at, func(k int32) bool { return !c.mayHave(p.ids[k]) })
	if len(c.at) == 0 {
		return nil
	}
	slices.SortFunc(c.at, func(a, b int32) int { return cmp.Compare(p.ids[a], p.ids[b]) })
	c.miss = c.miss[:0]
	for _, k := range c.at {
		if id := p.ids[k]; len(c.miss) == 0 || c.miss[len(c.miss)-1] != id {
			c.miss = append(c.miss, id)
		}
	}
	if err := c.read(c.miss, true); err != nil {
		return err
	}
	d := tab.Dim()
	j := 0
	for _, k := range c.at {
		for c.miss[j] != p.ids[k] {
			j++
		}
		if !c.found[j] {
			continue
		}
		o := int(k) * d
		if p.pos != nil {
			o = int(p.pos[k]) * d
		}
		ams.DecodeSnapshotValues(p.buf[o:o+d], c.got[j])
	}
	return nil
}

// expire sweeps the next n rows of the space with the table's expiry
// rules, as the owner sweeps DRAM (lifecycle.go, 1), with a lap and a cap
// of its own: expired rows are deleted in one batch and tombstoned.
func (c *cold) expire(l *life, tab *ams.Table, n int, now uint32) {
	if c.err != nil || c.rows == 0 {
		return
	}
	if !c.inLap {
		c.lap.Begin(int(c.rows))
		c.inLap = true
	}
	c.expired = c.expired[:0]
	last, end, err := c.store.ScanFrom(c.space, c.sweepAt, !c.swept, n, func(id uint64, row []byte) error {
		if _, inDRAM := tab.Get(id); inDRAM {
			return nil // a stale copy: DRAM's sweep judges the row
		}
		if l.expires(tab.SnapshotRowInfo(id, row, c.values), now, &c.lap) {
			c.expired = append(c.expired, id)
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.sweepAt, c.swept = last, !end
	if end {
		c.lap.End()
		c.inLap = false
	}
	if len(c.expired) == 0 {
		return
	}
	if err := c.store.Delete(c.space, c.expired); err != nil {
		c.fail(err)
		return
	}
	for _, id := range c.expired {
		l.tomb(id)
	}
	c.rows -= int64(len(c.expired))
	tab.CountExpired(len(c.expired))
}

// keep encodes a row the budget's hand evicts, to write it by flush.
func (c *cold) keep(tab *ams.Table, r ams.RowInfo) {
	c.evIDs = append(c.evIDs, r.ID)
	c.evRows = tab.AppendSweptRow(c.evRows, r)
	c.evDirty = append(c.evDirty, r.Dirty)
	c.evShadow = append(c.evShadow, r.Shadowed)
}

// drop notes a shadowed row that expiry removes from DRAM: its disk copy
// goes too (dropShadows), or it would come back.
func (c *cold) drop(id uint64) { c.drops = append(c.drops, id) }

// dropShadows deletes the disk copies of the rows drop noted.
func (c *cold) dropShadows() {
	if len(c.drops) == 0 || c.err != nil {
		return
	}
	sortIDs(c.drops)
	if err := c.store.Delete(c.space, c.drops); err != nil {
		c.fail(err)
		return
	}
	c.rows -= int64(len(c.drops))
	c.shadowed -= int64(len(c.drops))
	c.drops = c.drops[:0]
}

// flush writes the rows keep encoded to disk in one sorted batch
// (invariant 2).
func (c *cold) flush(tab *ams.Table) {
	n := len(c.evIDs)
	if n == 0 {
		return
	}
	defer func() {
		c.evIDs, c.evRows, c.evDirty, c.evShadow = c.evIDs[:0], c.evRows[:0], c.evDirty[:0], c.evShadow[:0]
	}()
	c.order = c.order[:0]
	for i := range n {
		c.order = append(c.order, i)
	}
	slices.SortFunc(c.order, func(a, b int) int {
		if c.evIDs[a] < c.evIDs[b] {
			return -1
		}
		return 1 // ids are unique
	})
	c.putIDs, c.putRows = c.putIDs[:0], c.putRows[:0]
	w := c.rowBytesEach
	for _, i := range c.order {
		c.putIDs = append(c.putIDs, c.evIDs[i])
		c.putRows = append(c.putRows, c.evRows[i*w:(i+1)*w])
	}
	if err := c.store.Put(c.space, c.putIDs, c.putRows); err != nil {
		c.fail(err)
		for i, id := range c.evIDs { // back in DRAM, over budget: lost nowhere
			if tab.LoadSnapshotRow(id, c.evRows[i*w:(i+1)*w], c.values, c.st) != nil {
				continue
			}
			if c.evDirty[i] {
				tab.MarkDirty(id)
			}
			if c.evShadow[i] {
				tab.MarkShadowed(id)
			}
		}
		return
	}
	overwritten := 0
	for i := range c.evIDs {
		if c.evShadow[i] {
			overwritten++
		}
	}
	c.remember(c.evIDs, n-overwritten) // before rows grows: a rebuild counts the rows before
	c.rows += int64(n - overwritten)
	c.shadowed -= int64(overwritten)
	c.usage.Demoted += uint64(n)
}

// ids appends the ids of the space's rows to dst.
func (c *cold) ids(dst []uint64) ([]uint64, error) {
	if c.err != nil {
		return dst, c.err
	}
	if c.rows == 0 {
		return dst, nil
	}
	dst, err := c.store.IDs(c.space, dst)
	if err != nil {
		return dst, c.fail(err)
	}
	return dst, nil
}

// takeDirty appends to dst the ids of the space's rows that an export has
// not taken, and forgets them: the rows only on disk whose last update
// (their step) is at or after the previous export's (invariant 3).
func (c *cold) takeDirty(tab *ams.Table, dst []uint64) ([]uint64, error) {
	since := c.exportStep
	c.exportStep = tab.Step()
	if c.err != nil {
		return dst, c.err
	}
	err := c.scanAll(func(id uint64, row []byte) {
		if _, inDRAM := tab.Get(id); !inDRAM && tab.SnapshotRowStep(row) >= since {
			dst = append(dst, id)
		}
	})
	return dst, err
}

// exported records a full export: the rows updated from now on are the
// next delta's.
func (c *cold) exported(tab *ams.Table) { c.exportStep = tab.Step() }

// empty deletes every row of the space.
func (c *cold) empty() error {
	if err := c.store.DropTable(c.space); err != nil {
		return c.fail(err)
	}
	c.rows, c.shadowed = 0, 0
	c.filter = nil
	return nil
}

// coldOf returns l's cold tier, nil for a table in memory (or no life).
func (l *life) coldOf() *cold {
	if l == nil {
		return nil
	}
	return l.cold
}

// usageNow returns the tier's figures.
func (c *cold) usageNow() ams.TierUsage {
	u := c.usage
	u.ColdRows = c.rows - c.shadowed
	u.ColdBytes = c.rows * int64(c.rowBytesEach+12)
	return u
}
