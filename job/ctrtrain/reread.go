package ctrtrain

import (
	"context"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/sparsenet"
)

// reread is the pipelined pass's fresh read of shared rows
// (train.reread_shared): a batch is pulled while the batch before it
// trains, so the rows the two share (a data set's frequent ids: a field
// of a few values has them in every batch) would miss that batch's
// update. Before a batch trains, reread waits until the previous batch's
// push is applied and reads those rows again, with the dense parameters;
// the rest of the batch keeps the rows pulled ahead. It is owned by the
// pass's training goroutine.
//
// Only tables whose rows a pull without create reads exactly as the
// batch's pull did are read again: no admission (an id not admitted
// would read as zeros instead of its initial row), no budget and no
// expiry (an evicted or expired row likewise).
type reread struct {
	t    *Trainer
	on   []bool            // by table: read again
	prev []sparsenet.Dedup // by table: the ids of the batch trained last
	have bool              // prev holds a batch
	// route, ids, pos and rows are the read's: per table the shared ids,
	// their index in the batch's ids and their rows.
	route *client.Route
	ids   [][]uint64
	pos   [][]int32
	rows  [][]float32
}

// newReread returns the reread of t's pipelined passes, or nil when
// train.reread_shared is off.
func newReread(t *Trainer) *reread {
	if !*t.cfg.Train.RereadShared {
		return nil
	}
	n := len(t.tables)
	r := &reread{t: t, on: make([]bool, n), prev: make([]sparsenet.Dedup, n), route: t.cl.NewRoute(),
		ids: make([][]uint64, n), pos: make([][]int32, n), rows: make([][]float32, n)}
	for ti, spec := range t.tables {
		r.on[ti] = rereadable(spec)
	}
	return r
}

// rereadable reports whether a pull without create reads spec's rows as
// the batch's pull (with create) read them.
func rereadable(spec ams.TableSpec) bool {
	return (spec.Admission.Kind == "" || spec.Admission.Kind == "none") && spec.Budget.IsZero() && !spec.Expiry.Enabled()
}

// reset forgets the previous batch (a new pass).
func (r *reread) reset() { r.have = false }

// refresh reads the rows s's batch shares with the batch trained before
// it, and the dense parameters, into s, once that batch's push is
// applied, and returns the number of rows read.
func (r *reread) refresh(ctx context.Context, s *state) (int, error) {
	if !r.have {
		return 0, nil
	}
	t := r.t
	if err := t.pushes.WaitLast(ctx); err != nil {
		return 0, err
	}
	n := 0
	r.route.Reset()
	for ti := range r.ids {
		ids, pos := r.ids[ti][:0], r.pos[ti][:0]
		if r.on[ti] {
			for j, id := range s.cb.Sparse.IDs(ti) {
				if _, ok := r.prev[ti].Lookup(id); ok {
					ids, pos = append(ids, id), append(pos, int32(j))
				}
			}
		}
		r.ids[ti], r.pos[ti] = ids, pos
		n += len(ids)
		r.rows[ti] = grow(r.rows[ti], len(ids)*t.layout.Dim(ti))
		if err := r.route.Add(t.tables[ti].Name, ids); err != nil {
			return 0, fmt.Errorf("worker: %w", err)
		}
	}
	if err := t.cl.PullRoute(ctx, r.route, r.rows, s.vecs, false); err != nil {
		return 0, err
	}
	for ti, pos := range r.pos {
		dim, rows, dst := t.layout.Dim(ti), r.rows[ti], s.rows[ti]
		for k, j := range pos {
			copy(dst[int(j)*dim:int(j+1)*dim], rows[k*dim:(k+1)*dim])
		}
	}
	return n, nil
}

// remember keeps the ids of s's batch, trained and its push started.
func (r *reread) remember(s *state) {
	for ti := range r.prev {
		d := &r.prev[ti]
		d.Reset()
		if r.on[ti] {
			for _, id := range s.cb.Sparse.IDs(ti) {
				d.Index(id)
			}
		}
	}
	r.have = true
}
