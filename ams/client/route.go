package client

import (
	"fmt"

	"github.com/xdlgo/xps/ams"
)

// Route is a batch's unique ids split by shard: for every table added and
// every shard, the ids the shard owns and their positions in the batch's
// list. A pull and the push of the same batch route alike, so a worker
// routes a batch once (Add), pulls its rows through the route
// (PullRoute) and pushes its gradients through the same route
// (PushRoute); Pull and Push route each call anew.
//
// A Route belongs to the client that made it (NewRoute) and holds copies
// of the ids, so the caller may reuse its id lists once Add returns.
// Reset and Add reuse the route's buffers: a route reused for batches of
// about the same size allocates nothing. PullRoute and PushRoute only
// read a route, so several may use one at once; Reset and Add must not
// overlap them.
type Route struct {
	c      *Client
	tables []routeTable
	ids    [][][]uint64 // [shard][table]
	pos    [][][]int32  // [shard][table]
}

// routeTable is one table of a route.
type routeTable struct {
	name string
	dim  int // from the client's declarations when added
	n    int // ids
}

// NewRoute returns an empty route for c's shards.
func (c *Client) NewRoute() *Route {
	n := len(c.stubs)
	return &Route{c: c, ids: make([][][]uint64, n), pos: make([][][]int32, n)}
}

// Reset empties r for the next batch, keeping its buffers.
func (r *Route) Reset() {
	r.tables = r.tables[:0]
	for s := range r.ids {
		r.ids[s], r.pos[s] = r.ids[s][:0], r.pos[s][:0]
	}
}

// Tables returns the number of tables added since the last Reset (none
// for a nil route).
func (r *Route) Tables() int {
	if r == nil {
		return 0
	}
	return len(r.tables)
}

// Add routes the ids of table, a table declared through r's client, as
// the route's next table (index Tables() before the call). The ids of a
// route that is pulled must be unique.
func (r *Route) Add(table string, ids []uint64) error {
	dim, ok := (*r.c.dims.Load())[table]
	if !ok {
		return fmt.Errorf("%w: %q (declare it first)", ams.ErrUnknownTable, table)
	}
	ti := len(r.tables)
	r.tables = append(r.tables, routeTable{name: table, dim: dim, n: len(ids)})
	hint := len(ids)/len(r.ids) + 8
	for s := range r.ids {
		r.ids[s] = nextList(r.ids[s], ti, hint)
		r.pos[s] = nextList(r.pos[s], ti, hint)
	}
	for k, id := range ids {
		s := r.c.m.ShardOf(table, id)
		r.ids[s][ti] = append(r.ids[s][ti], id)
		r.pos[s][ti] = append(r.pos[s][ti], int32(k))
	}
	return nil
}

// nextList returns lists extended to list i (len(lists) == i on entry),
// empty, reusing the list an earlier batch left there, else a new one of
// capacity hint.
func nextList[T any](lists [][]T, i, hint int) [][]T {
	if i < cap(lists) {
		lists = lists[:i+1]
	} else {
		lists = append(lists, nil)
	}
	if lists[i] == nil {
		lists[i] = make([]T, 0, hint)
	}
	lists[i] = lists[i][:0]
	return lists
}

// check reports whether c may use r (nil: no tables) with bufs, one
// buffer of ids x dim values per table of r.
func (c *Client) check(r *Route, bufs [][]float32) error {
	if r == nil {
		if len(bufs) != 0 {
			return fmt.Errorf("%w: %d row buffers without a route", ams.ErrDimMismatch, len(bufs))
		}
		return nil
	}
	if r.c != c {
		return fmt.Errorf("ams client: a route of another client")
	}
	if len(bufs) != len(r.tables) {
		return fmt.Errorf("%w: %d row buffers for a route of %d tables", ams.ErrDimMismatch, len(bufs), len(r.tables))
	}
	for ti, t := range r.tables {
		if len(bufs[ti]) != t.n*t.dim {
			return fmt.Errorf("%w: table %q: %d values for %d ids of dim %d", ams.ErrDimMismatch, t.name, len(bufs[ti]), t.n, t.dim)
		}
	}
	return nil
}

// checkLimits reports whether every shard's part of a call on r and
// dense keeps within the limits of one request (ams.CheckRequestSize),
// so that a batch too large fails before anything is sent.
func (c *Client) checkLimits(r *Route, dense []Vector) error {
	n := len(c.stubs)
	for s := range n {
		ids, values, dv := 0, 0, 0
		for ti, t := range r.tables {
			k := len(r.ids[s][ti])
			ids += k
			values += k * t.dim
		}
		for _, d := range dense {
			lo, hi := ams.DenseRange(len(d.Values), s, n)
			dv += hi - lo
		}
		if err := ams.CheckRequestSize(ids, values, dv); err != nil {
			return fmt.Errorf("shard %s: %w", c.m.Shards[s], err)
		}
	}
	return nil
}
