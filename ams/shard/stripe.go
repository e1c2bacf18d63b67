package shard

import (
	"fmt"
	"sync"
	"time"

	"github.com/xdlgo/xps/filters"

	"github.com/xdlgo/xps/ams"
)

type opKind uint8

const (
	opDeclare opKind = iota + 1
	opPull
	opPush
	opDensePull
	opDensePush
	opStats
	opFunc // run fn on the owner (snapshots and restores)
)

// part is one table's share of a request for one stripe: the ids that hash
// to the stripe and their positions in the request's buffer.
type part struct {
	table int
	ids   []uint64
	pos   []int32
	buf   []float32
}

type denseDecl struct {
	info *denseInfo
	init []float32
}

// task is one stripe's share of a request. The sender owns it until it is
// sent; the stripe owner owns it until it calls wg.Done.
type task struct {
	op opKind
	// version is the cluster version of a pull or push: a stripe refuses
	// a task of any version but its own (see stripe.version).
	version uint64
	parts   []part
	create  bool
	now     uint32
	// step is the sample clock (ams.StepUnit units) that the rows a pull
	// creates or a push updates are stamped with.
	step uint32
	// partitions is the model's partition count a declare gives the
	// admission filters of its tables.
	partitions int

	declTables []*tableInfo
	declDense  []denseDecl

	dense    string
	denseBuf []float32

	stats []TableStats
	// denseStats receives the figures of the stripe's dense vectors (opStats).
	denseStats []ams.DenseUsage

	fn func(st *stripe) error

	err error
	wg  *sync.WaitGroup
}

// stripe is the state one owner goroutine alone reads and writes.
type stripe struct {
	in     chan *task
	tables []*ams.Table // indexed by tableInfo.idx
	lives  []*life      // each table's lifecycle (lifecycle.go), likewise
	dense  map[string]*ams.DenseVar
	// i is the stripe's number, n the shard's stripe count, hook its Options.Expire, now its
	// clock (Unix seconds): what the lifecycle of a table needs.
	i, n int
	hook filters.ExpireFunc
	now  func() uint32
	step func() uint32 // the shard's sample clock (Shard.step)
	work []work        // what serve's last pull or push created, reused
	// version is the cluster version whose pulls and pushes the stripe
	// serves, set with its rows by a reset (a restore or a begin): a
	// request that passed the shard's version check just before a restore
	// began is refused here rather than applied to the restored rows.
	version uint64
}

func (st *stripe) run(done <-chan struct{}) {
	idle := time.NewTicker(sweepIdle)
	defer idle.Stop()
	busy := false
	for {
		select {
		case t := <-st.in:
			st.work = st.work[:0]
			t.err = st.serve(t) // notes in st.work the rows it created
			// The task is the requester's again after Done: the lifecycle
			// runs once it has its answer, from st.work.
			t.wg.Done()
			for _, w := range st.work {
				st.maintain(w.table, w.created, w.now)
				busy = true
			}
		case <-idle.C:
			if !busy {
				now, step := st.now(), st.step()
				for idx, tab := range st.tables {
					tab.SetStep(step)
					st.maintain(idx, idleSweep/2, now)
				}
			}
			busy = false
		case <-done:
			return
		}
	}
}

// rows serves a pull or push of rows, and notes in st.work the rows each
// table created (a pull without create creates none and notes nothing).
func (st *stripe) rows(t *task) error {
	for i := range t.parts {
		p := &t.parts[i]
		if len(p.ids) == 0 {
			continue
		}
		tab := st.tables[p.table]
		if l := st.lives[p.table]; l != nil && l.cold != nil && t.op == opPull && !t.create {
			// A read (evaluation, serving): rows on disk are read where
			// they are, not promoted (tiered.go, 1).
			tab.PullAt(p.ids, p.pos, p.buf, false, t.now)
			if err := l.cold.readThrough(tab, p); err != nil {
				return err
			}
			continue
		}
		if l := st.lives[p.table]; l != nil && l.cold != nil {
			if int64(len(p.ids)) > l.limit {
				return fmt.Errorf("%w: table %q: a request's part of %d rows is over the stripe's budget share of %d rows: raise the table's budget (a tiered table holds one request's rows in DRAM at once)",
					ams.ErrBadRequest, l.name, len(p.ids), l.limit)
			}
			if err := l.cold.promote(tab, p.ids); err != nil {
				return err
			}
		}
		tab.SetStep(t.step)
		if t.op == opPush {
			n := tab.PushAt(p.ids, p.pos, p.buf, t.now)
			st.work = append(st.work, work{table: p.table, created: n, now: t.now})
		} else if n := tab.PullAt(p.ids, p.pos, p.buf, t.create, t.now); t.create {
			st.work = append(st.work, work{table: p.table, created: n, now: t.now})
		}
	}
	return nil
}

// work is a table a pull or push touched: what maintain needs of it.
type work struct {
	table, created int
	now            uint32
}

func (st *stripe) serve(t *task) error {
	switch t.op {
	case opPull, opPush, opDensePull, opDensePush:
		if t.version != st.version {
			return fmt.Errorf("%w: request version %d, the shard's rows are of version %d", ams.ErrStaleVersion, t.version, st.version)
		}
	}
	switch t.op {
	case opDeclare:
		for _, ti := range t.declTables {
			tab, err := ams.NewTable(ti.spec)
			if err == nil {
				tab.SetStep(st.step())
				err = tab.EnableAdmission(t.partitions)
			}
			if err != nil {
				return fmt.Errorf("ams: declare table %q: %w", ti.spec.Name, err)
			}
			l, err := newLife(tab, st.hook, st.n)
			if err != nil {
				return fmt.Errorf("ams: declare table %q: %w", ti.spec.Name, err)
			}
			if ti.tier != nil {
				l.cold = newCold(tab, ti.tier, tierSpace(ti.idx, st.i))
				if l.expiry != nil {
					l.cold.lap = l.expiry.NewLap()
				}
			}
			for len(st.tables) <= ti.idx {
				st.tables, st.lives = append(st.tables, nil), append(st.lives, nil)
			}
			st.tables[ti.idx], st.lives[ti.idx] = tab, l
		}
		for _, d := range t.declDense {
			v, err := ams.NewDenseVar(d.info.spec, d.info.lo, d.info.hi)
			if err != nil {
				return fmt.Errorf("ams: declare dense %q: %w", d.info.spec.Name, err)
			}
			if d.init != nil {
				if err := v.Set(d.init); err != nil {
					return fmt.Errorf("ams: declare dense %q: %w", d.info.spec.Name, err)
				}
			}
			st.dense[d.info.spec.Name] = v
		}
	case opPull, opPush:
		return st.rows(t)
	case opDensePull:
		v := st.dense[t.dense]
		if !v.Initialized() {
			return fmt.Errorf("%w: %q was declared without initial values", ams.ErrNotInitialized, t.dense)
		}
		copy(t.denseBuf, v.Values())
	case opDensePush:
		if err := st.dense[t.dense].Apply(t.denseBuf); err != nil {
			return fmt.Errorf("ams: push dense %q: %w", t.dense, err)
		}
	case opFunc:
		return t.fn(st)
	case opStats:
		for idx, tab := range st.tables {
			if tab != nil && idx < len(t.stats) {
				t.stats[idx] = tableStats(tab, st.lives[idx])
			}
		}
		for name, v := range st.dense {
			t.denseStats = append(t.denseStats, ams.DenseUsage{Name: name, NonFiniteRefused: v.Refused()})
		}
	}
	return nil
}
