package ams

import (
	"fmt"

	"github.com/xdlgo/xps/model/prefetch"

	"github.com/xdlgo/xps/filters"
)

// StepUnit is the number of trained samples in one unit of a row's
// last-update step: the step word is the owner's sample clock divided by
// StepUnit, modulo 2^32, so that 2^31 units (137 billion samples) of age
// fit in it. Sweeps saturate older ages (Sweep), so a row never looks
// young again after its step wraps.
const StepUnit = 64

// sweepAhead is how many buckets ahead a sweep prefetches rows.
const sweepAhead = 8

// maxStepAge is the largest age, in step units, a row's step records.
const maxStepAge = 1 << 31

// Counters are what a table did since it was made (a restore makes new
// tables): rows created, IDs the admission filter kept out, rows removed
// by expiry and by the memory budget, and rows refused or clipped for a
// NaN or ±Inf.
type Counters struct {
	// Created counts rows created by pulls and pushes (admitted IDs);
	// rows loaded from a snapshot are not counted.
	Created uint64 `json:"created"`
	// FilteredPulls counts IDs a pull with create would have created and
	// the filter did not admit: they read as the row they would have had.
	FilteredPulls uint64 `json:"filtered_pulls"`
	// FilteredPushes counts gradients of IDs without a row that the filter
	// did not admit: they were dropped.
	FilteredPushes uint64 `json:"filtered_pushes"`
	// Expired counts rows removed by the table's expiry rules, Evicted
	// rows removed to keep the shard within its memory budget.
	Expired uint64 `json:"expired"`
	Evicted uint64 `json:"evicted"`
	// NonFiniteRefused counts gradient rows of pushes that held a NaN or
	// ±Inf and were not applied (TableSpec.NonFinite refuse);
	// NonFiniteClipped such rows, and rows of values a load set, that
	// were clipped and applied (clip). A load refused for one is an
	// error, not counted.
	NonFiniteRefused uint64 `json:"nonfinite_refused"`
	NonFiniteClipped uint64 `json:"nonfinite_clipped"`
}

// Add returns the sum of c and d, field by field.
func (c Counters) Add(d Counters) Counters {
	return Counters{Created: c.Created + d.Created, FilteredPulls: c.FilteredPulls + d.FilteredPulls,
		FilteredPushes: c.FilteredPushes + d.FilteredPushes, Expired: c.Expired + d.Expired, Evicted: c.Evicted + d.Evicted,
		NonFiniteRefused: c.NonFiniteRefused + d.NonFiniteRefused, NonFiniteClipped: c.NonFiniteClipped + d.NonFiniteClipped}
}

// admission is a table's admission filter over the model's virtual
// partitions.
type admission struct {
	f     *filters.Filter
	salt  uint64
	parts int
}

// partition is Partition(table, id, parts) with the table's hash kept.
func (a *admission) partition(id uint64) uint32 { return SaltedPartition(a.salt, id, a.parts) }

// admit records a pull's sighting of id, which has no row, and reports
// whether its row is created.
func (a *admission) admit(id uint64) bool { return a.f.Admit(a.partition(id), id) }

// pushed reports whether a push to id, which has no row, creates it. A
// push is not a sighting: a worker pulls every ID of its batch (a
// sighting) before it pushes their gradients, so counting both would count
// each occurrence twice. A stateless policy decides as for a pull (the
// probability policy's decision is a function of the ID); the count
// policy admits at pulls only, so a push never creates a row a pull did
// not.
func (a *admission) pushed(id uint64) bool {
	if a.f.Stateful() {
		return false
	}
	return a.f.Admit(a.partition(id), id)
}

// EnableAdmission has the table admit IDs by its spec's Admission policy,
// over the model's virtual partitions (ams.Partition): from now on a pull
// with create creates the row of a missing ID only when the filter admits
// it, and reads the row the ID would have had otherwise (its initializer's
// values: see InitSpec); a push to a missing ID that is not admitted is
// dropped. Both are counted (Counters). The policy none needs no filter
// and is a no-op. It fails with an error wrapping filters.ErrBadPolicy
// when the policy or the partition count is invalid.
func (t *Table) EnableAdmission(partitions int) error {
	spec := t.spec.Admission
	spec.EnsureDefaults()
	if spec.Kind == filters.KindNone {
		t.admit = nil
		return nil
	}
	f, err := filters.New(spec, TableHash(t.spec.Name), partitions)
	if err != nil {
		return fmt.Errorf("table %q: admission: %w", t.spec.Name, err)
	}
	t.admit = &admission{f: f, salt: TableHash(t.spec.Name), parts: partitions}
	return nil
}

// Filter returns the table's admission filter, nil when it admits every
// ID: the owner snapshots and restores its partition states.
func (t *Table) Filter() *filters.Filter {
	if t.admit == nil {
		return nil
	}
	return t.admit.f
}

// RowInfo is what a sweep shows of a row. Values aliases the table's
// storage, valid only during the call.
type RowInfo struct {
	ID      uint64
	Values  []float32
	Touched uint32 // last update, Unix seconds
	Hits    uint32 // creation and pushes, saturating
	// Age is the number of step units since the last update: the table's
	// step (SetStep) minus the row's, at most 2^31.
	Age uint32
	// Dirty reports whether a push changed the row since the last export
	// took it (see TakeDirty).
	Dirty bool
	// Shadowed reports whether the row has a stale copy on disk (see
	// MarkShadowed).
	Shadowed bool
	slot     uint32
}

// AppendSweptRow appends the encoding of a row a sweep shows (see
// AppendSnapshotRow) to dst: remove may call it, before it returns true,
// to keep the row it removes (a tiered table's cold tier).
func (t *Table) AppendSweptRow(dst []byte, r RowInfo) []byte {
	return t.appendSlot(dst, r.slot)
}

// Sweeper is a position of a sweep over a table's rows: how many buckets
// of its index the current lap has visited, kept across calls so that a
// sweep goes a slice at a time. The zero Sweeper starts a lap.
type Sweeper struct {
	k    int // buckets visited in the lap
	capa int // the index's bucket count k refers to
	// Laps counts the sweeps that visited every bucket.
	Laps uint64
}

// sweepStride orders a lap's buckets: the k-th bucket visited is k x
// sweepStride modulo the bucket count, a permutation (the stride is odd,
// the count a power of two) that scatters consecutive visits over the
// whole index. A sweep in bucket order that removes most rows it passes
// (the budget's CLOCK hand does) would leave the index empty behind it
// and, with new rows landing everywhere, twice as loaded as on average
// ahead of it: past a load of 1/2 the buckets ahead fill up, and linear
// probing's clusters there grow without bound (a drifting stream under a
// budget slowed from 70K to 1K samples/s, every lookup walking a cluster).
// Scattered, removals keep the load even.
const sweepStride = 0x9E3779B97F4A7C15 // 2^64 / golden ratio, odd

// bucketAt returns the bucket of the k-th visit of a lap over c buckets.
func bucketAt(k, c int) int { return int(uint64(k) * sweepStride & uint64(c-1)) }

// Sweep visits the rows of the next (at most) n buckets of the index in
// sw's lap, calls remove for each and deletes the rows for which it
// returns true (their slots are reused by later rows). It returns the
// rows visited, and whether the lap ended (sw begins the next). remove
// must not call the table's methods (but AppendSweptRow).
//
// A lap visits the buckets in a scattered order (sweepStride), so that the
// rows it removes leave the index evenly loaded. It visits every row that
// stays in the table while it runs about once: a row that a deletion
// shifts back, or a growth of the index moves, may be visited twice or
// not at all in that lap (the next lap sees it). A sweep also saturates
// the age of every row it visits at 2^31 step units, so that a step word
// that would wrap keeps reading as old.
func (t *Table) Sweep(sw *Sweeper, n int, remove func(RowInfo) bool) (visited int, lapEnd bool) {
	x := &t.idx
	c := x.capacity()
	if c == 0 {
		sw.k, sw.capa = 0, 0
		return 0, true
	}
	if sw.capa != c && sw.capa != 0 {
		// The index was resized: keep the share of the lap done.
		sw.k = int(int64(sw.k) * int64(c) / int64(sw.capa))
	}
	sw.capa = c
	for end := min(sw.k+n, c); sw.k < end; {
		if k := sw.k + sweepAhead; k < c {
			t.prefetchVisit(bucketAt(k, c), bucketAt(k+sweepAhead, c))
		}
		i := bucketAt(sw.k, c)
		slot := slotOf(x.b, 3*i)
		if slot == emptySlot {
			sw.k++
			continue
		}
		id := uint64(x.b[3*i]) | uint64(x.b[3*i+1])<<32
		w, _, st := t.split(t.rows.row(slot))
		age := t.step - st[statStep]
		if age > maxStepAge {
			age, st[statStep] = maxStepAge, t.step-maxStepAge
		}
		visited++
		w6, b6 := slot>>6, uint64(1)<<(slot&63)
		r := RowInfo{ID: id, Values: w, Touched: st[statTouched], Hits: st[statHits], Age: age,
			Dirty: t.dirty[w6]&b6 != 0, Shadowed: t.shadow[w6]&b6 != 0, slot: slot}
		if !remove(r) {
			sw.k++
			continue
		}
		// Deleting shifts a later entry into bucket i: look at it again.
		t.Delete(id)
	}
	if sw.k >= c {
		sw.k = 0
		sw.Laps++
		return visited, true
	}
	return visited, false
}

// prefetchVisit asks for what later visits of a sweep read, so that their
// misses overlap: the statistics of the row in bucket i (visited soon; its
// bucket was asked for earlier) and bucket j (visited later).
func (t *Table) prefetchVisit(i, j int) {
	x := &t.idx
	if s := slotOf(x.b, 3*i); s != emptySlot {
		row := t.rows.row(s)
		prefetch.Float32s(row[len(row)-statWords:])
	}
	prefetch.Uint32(&x.b[3*j])
}

// CountExpired and CountEvicted add to the table's counters the rows a
// sweep removed for its expiry rules and for the memory budget.
func (t *Table) CountExpired(n int) { t.cnt.Expired += uint64(n) }

// CountEvicted: see CountExpired.
func (t *Table) CountEvicted(n int) { t.cnt.Evicted += uint64(n) }

// RowBytes is the memory one row takes: its slab row and its index
// bucket at the index's largest load (12 bytes at 3/4 load: 16).
func (t *Table) RowBytes() int { return 4*t.rows.width + 16 }

// TableUsage is what a table holds and did, over the shards that report
// it: its rows and their memory, and its Counters. Shard stats carry it
// per shard; ams/client sums it over a cluster.
type TableUsage struct {
	Name string `json:"name"`
	Rows int64  `json:"rows"`
	// RowBytes is the memory of the rows, as a budget counts it
	// (Table.RowBytes each); MemoryBytes what the tables' storage holds
	// (grown, never shrunk: freed slots are reused); FilterBytes the
	// admission filter's state.
	RowBytes    int64 `json:"row_bytes"`
	MemoryBytes int64 `json:"memory_bytes"`
	FilterBytes int64 `json:"filter_bytes"`
	Counters
	// Tier is a tiered table's cold tier and its traffic: zero for a
	// table in memory. Rows and RowBytes count the rows in DRAM only.
	Tier TierUsage `json:"tier"`
}

// DenseUsage is what a dense vector did, over the shards that report it:
// the gradients of its ranges refused for a NaN or ±Inf (DenseVar.Apply).
// A push carries every shard's range of a gradient, and each shard
// refuses its own: a NaN in one range refuses that range only.
type DenseUsage struct {
	Name string `json:"name"`
	// NonFiniteRefused counts the refused gradients of the vector's
	// ranges (one per shard's range a push carried).
	NonFiniteRefused uint64 `json:"nonfinite_refused"`
}

// Add adds o's figures to u.
func (u *DenseUsage) Add(o DenseUsage) { u.NonFiniteRefused += o.NonFiniteRefused }

// TierUsage is what the cold tier of a tiered table holds, and the
// traffic between its tiers.
type TierUsage struct {
	// ColdRows is the rows on disk; ColdBytes their encoded size (values,
	// optimizer state, statistics and key; Pebble compresses blocks, so
	// the files may be smaller).
	ColdRows  int64 `json:"cold_rows"`
	ColdBytes int64 `json:"cold_bytes"`
	// Lookups counts the ids pulls and pushes asked of the table, Misses
	// those without a row in DRAM: 1 - Misses/Lookups is the DRAM tier's
	// hit ratio.
	Lookups uint64 `json:"lookups"`
	Misses  uint64 `json:"misses"`
	// DiskReads counts the ids pulls and pushes read from disk (the
	// misses that may be there), in DiskBatches batched reads (one per
	// stripe's part of a request that missed); snapshots' and exports'
	// reads are not counted.
	DiskReads   uint64 `json:"disk_reads"`
	DiskBatches uint64 `json:"disk_batches"`
	// Promoted counts rows read back from disk into DRAM, Demoted rows
	// the budget moved from DRAM to disk.
	Promoted uint64 `json:"promoted"`
	Demoted  uint64 `json:"demoted"`
}

// Add adds o's figures to u.
func (u *TierUsage) Add(o TierUsage) {
	u.ColdRows += o.ColdRows
	u.ColdBytes += o.ColdBytes
	u.Lookups += o.Lookups
	u.Misses += o.Misses
	u.DiskReads += o.DiskReads
	u.DiskBatches += o.DiskBatches
	u.Promoted += o.Promoted
	u.Demoted += o.Demoted
}

// HitRatio is the share of lookups that found their row in DRAM (1 with
// no lookups).
func (u TierUsage) HitRatio() float64 {
	if u.Lookups == 0 {
		return 1
	}
	return 1 - float64(u.Misses)/float64(u.Lookups)
}

// Add adds o's figures to u.
func (u *TableUsage) Add(o TableUsage) {
	u.Rows += o.Rows
	u.RowBytes += o.RowBytes
	u.MemoryBytes += o.MemoryBytes
	u.FilterBytes += o.FilterBytes
	u.Counters = u.Counters.Add(o.Counters)
	u.Tier.Add(o.Tier)
}
