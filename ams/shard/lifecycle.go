package shard

import (
	"fmt"
	"math"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
)

// Row lifecycle: expiry sweeps, the memory budget, tombstones. Every
// stripe owner keeps, for each table, a life: its compiled expiry rules
// and the sweep over its rows that applies them, the CLOCK hand of its
// budget, and the tombstones of the rows both removed. All of it runs on
// the owner, between tasks (maintain), so it needs no lock and training
// never stops for it:
//
//  1. After a pull or push task the owner sweeps, in each table it
//     touched that has expiry rules (or an Options.Expire hook), the next
//     2 x (rows the task created) + minSweep buckets of the table's index,
//     and every sweepIdle without a task another idleSweep buckets. A
//     table in a steady state creates as many rows as expire, about its
//     rows per TTL, so a lap over it (its index holds at most twice as
//     many buckets as rows, at least 4/3 as many) takes at most a TTL's
//     creations: a row outlives its TTL by at most one TTL. A sweep costs
//     a few nanoseconds a bucket (the rows' statistics are prefetched), a
//     small part of the cost of creating the rows it keeps pace with. A
//     lap removes at most the spec's
//     max_expire_fraction of the rows the table had when it began
//     (filters.Lap): one bad setting cannot wipe a table in one pass.
//  2. After a task that may have created rows, a table over its budget
//     share (ams.Budget.RowsFor the stripes) has the least recently
//     updated rows evicted, CLOCK-style: a hand goes round the index; a
//     row updated since the hand's lap began (its step after the lap's
//     first step) is passed over, any other is evicted, until the table
//     is within. The hand scans at most 8 buckets per row over the share
//     (and at least 1024) per task while the excess is below 1/16 of the
//     share; beyond, it goes on until the table is within: a stripe holds
//     at most its share plus the larger of 1/16 of it and one task's new
//     rows.
//  3. Every row removed is counted (ams.Counters.Expired, Evicted) and
//     its id kept as a tombstone for the next incremental export
//     (DrainTombstones), at most MaxTombstones per table and stripe; those
//     beyond are counted as lost (an export after a loss must be full).
const (
	minSweep   = 256
	idleSweep  = 4096
	sweepIdle  = time.Second
	handChunk  = 256
	minHandRun = 1024
	// MaxTombstones bounds the tombstones a stripe keeps per table until
	// an export drains them (8 MiB of ids).
	MaxTombstones = 1 << 20
)

// life is a stripe's lifecycle state of one table.
type life struct {
	name   string
	expiry *filters.Expiry    // nil: no rules
	hook   filters.ExpireFunc // Options.Expire, nil: none
	lap    filters.Lap
	inLap  bool
	sweep  ams.Sweeper
	limit  int64 // the stripe's budget share in rows, 0: none
	hand   ams.Sweeper
	// handLap is the step at which the hand's current lap began.
	handLap   uint32
	tombs     []uint64
	lostTombs uint64
	// cold is a tiered table's cold tier (tiered.go), nil for a table in
	// memory: the rows the hand evicts go there.
	cold *cold
}

// newLife builds the lifecycle of a table declared with spec in one of n
// stripes.
func newLife(tab *ams.Table, hook filters.ExpireFunc, n int) (*life, error) {
	spec := tab.Spec()
	l := &life{name: spec.Name, hook: hook, limit: spec.Budget.RowsFor(n, tab.RowBytes())}
	if spec.Expiry.Enabled() || hook != nil {
		e, err := filters.NewExpiry(spec.Expiry)
		if err != nil {
			return nil, fmt.Errorf("table %q: expiry: %w", spec.Name, err)
		}
		l.expiry, l.lap = e, e.NewLap()
	}
	return l, nil
}

// tomb records a removed row's id.
func (l *life) tomb(id uint64) {
	if len(l.tombs) >= MaxTombstones {
		l.lostTombs++
		return
	}
	l.tombs = append(l.tombs, id)
}

// maintain runs the lifecycle of table idx after a task that created
// work of its rows (see the list above).
func (st *stripe) maintain(idx, work int, now uint32) {
	tab, l := st.tables[idx], st.lives[idx]
	if l == nil {
		return
	}
	if l.expiry != nil {
		l.expire(tab, 2*work+minSweep, now)
	}
	if l.limit > 0 && int64(tab.Len()) > l.limit {
		l.evict(tab)
	}
}

// expire sweeps the next n buckets of tab with the expiry rules, and the
// next n rows of its cold tier, if it has one.
func (l *life) expire(tab *ams.Table, n int, now uint32) {
	if !l.inLap {
		l.lap.Begin(tab.Len())
		l.inLap = true
	}
	removed := 0
	_, lapEnd := tab.Sweep(&l.sweep, n, func(r ams.RowInfo) bool {
		if !l.expires(r, now, &l.lap) {
			return false
		}
		if r.Shadowed {
			l.cold.drop(r.ID)
		}
		l.tomb(r.ID)
		removed++
		return true
	})
	tab.CountExpired(removed)
	if l.cold != nil {
		l.cold.dropShadows()
	}
	if lapEnd {
		l.lap.End()
		l.inLap = false
	}
	if l.cold != nil {
		l.cold.expire(l, tab, n, now)
	}
}

// expires reports whether a row is to be removed by the expiry rules (or
// the hook), within lap's cap.
func (l *life) expires(r ams.RowInfo, now uint32, lap *filters.Lap) bool {
	rs := filters.RowStats{Hits: r.Hits, IdleSamples: int64(r.Age) * ams.StepUnit}
	if now > r.Touched {
		rs.Age = time.Duration(now-r.Touched) * time.Second
	}
	if l.expiry.NeedsNorm() {
		rs.Norm = norm(r.Values)
	}
	if !l.expiry.Expired(rs) && (l.hook == nil || !l.hook(l.name, rs)) {
		return false
	}
	return lap.Allow()
}

func norm(v []float32) float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return float32(math.Sqrt(s))
}

// evict brings tab within the budget share by CLOCK (see the list above).
func (l *life) evict(tab *ams.Table) {
	over := int64(tab.Len()) - l.limit
	scan := max(8*over, minHandRun)
	if over > l.limit/16 {
		scan = math.MaxInt64
	}
	evicted := int64(0)
	step := tab.Step()
	for scanned := int64(0); evicted < over && scanned < scan; scanned += handChunk {
		sinceLap := step - l.handLap // a row updated after the lap began is younger
		_, lapEnd := tab.Sweep(&l.hand, handChunk, func(r ams.RowInfo) bool {
			if evicted >= over || r.Age < sinceLap {
				return false
			}
			if l.cold != nil {
				l.cold.keep(tab, r)
			} else {
				l.tomb(r.ID)
			}
			evicted++
			return true
		})
		if lapEnd {
			l.handLap = step
		}
	}
	if l.cold != nil {
		l.cold.flush(tab) // demoted, not removed
		return
	}
	tab.CountEvicted(int(evicted))
}

// takeTombstones returns the tombstones the stripe keeps for table ti,
// and the count of removals beyond them, and forgets them (on the owner).
func (st *stripe) takeTombstones(ti *tableInfo) (ids []uint64, lost uint64) {
	if l := st.lives[ti.idx]; l != nil {
		ids, lost = l.tombs, l.lostTombs
		l.tombs, l.lostTombs = nil, 0
	}
	return ids, lost
}

// DrainTombstones returns the ids of the rows of table expiry and the
// budget removed since the last call, and how many more were removed
// without a tombstone (beyond MaxTombstones), and forgets them: what an
// incremental export takes.
func (s *Shard) DrainTombstones(table string) (ids []uint64, lost uint64, err error) {
	ti, ok := s.cat.Load().tables[table]
	if !ok {
		return nil, 0, fmt.Errorf("%w: %q", ams.ErrUnknownTable, table)
	}
	parts := make([][]uint64, len(s.stripes))
	losts := make([]uint64, len(s.stripes))
	if err := s.onStripes(func(i int, st *stripe) error {
		parts[i], losts[i] = st.takeTombstones(ti)
		return nil
	}); err != nil {
		return nil, 0, err
	}
	for i := range parts {
		ids = append(ids, parts[i]...)
		lost += losts[i]
	}
	return ids, lost, nil
}
