package shard

import (
	"fmt"
	"sync"

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

	declTables []*tableInfo
	declDense  []denseDecl

	dense    string
	denseBuf []float32

	stats []TableStats

	fn func(st *stripe) error

	err error
	wg  *sync.WaitGroup
}

// stripe is the state one owner goroutine alone reads and writes.
type stripe struct {
	in     chan *task
	tables []*ams.Table // indexed by tableInfo.idx
	dense  map[string]*ams.DenseVar
	// version is the cluster version whose pulls and pushes the stripe
	// serves, set with its rows by a reset (a restore or a begin): a
	// request that passed the shard's version check just before a restore
	// began is refused here rather than applied to the restored rows.
	version uint64
}

func (st *stripe) run(done <-chan struct{}) {
	for {
		select {
		case t := <-st.in:
			t.err = st.serve(t)
			t.wg.Done()
		case <-done:
			return
		}
	}
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
			if err != nil {
				return fmt.Errorf("ams: declare table %q: %w", ti.spec.Name, err)
			}
			for len(st.tables) <= ti.idx {
				st.tables = append(st.tables, nil)
			}
			st.tables[ti.idx] = tab
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
	case opPull:
		for i := range t.parts {
			p := &t.parts[i]
			if len(p.ids) > 0 {
				st.tables[p.table].PullAt(p.ids, p.pos, p.buf, t.create, t.now)
			}
		}
	case opPush:
		for i := range t.parts {
			p := &t.parts[i]
			if len(p.ids) > 0 {
				st.tables[p.table].PushAt(p.ids, p.pos, p.buf, t.now)
			}
		}
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
				t.stats[idx] = TableStats{Rows: tab.Len(), MemoryBytes: tab.MemoryBytes()}
			}
		}
	}
	return nil
}
