package trainrun

import (
	"context"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
)

// Push is one batch's push, the buffer of a push ring: the gradients of
// the route's tables, the dense gradient (sent as the one vector of
// Vecs), the route of the batch's pull (swapped in from the batch: the
// push reuses it) and the batch's origin (the shards apply it once).
type Push struct {
	Route  *client.Route
	Grads  [][]float32 // by table of the route
	Dense  []float32
	Vecs   []client.Vector // Dense, named
	Origin ams.Origin
}

// NewPushRing returns a ring of n Pushes of tables tables and a dense
// vector of dense values named denseName, pushed through cl
// (client.PushBatch). name prefixes its errors.
func NewPushRing(name string, n int, cl *client.Client, tables int, denseName string, dense int) *Ring[Push] {
	return NewRing(name, n, func() Push {
		p := Push{Route: cl.NewRoute(), Grads: make([][]float32, tables), Dense: make([]float32, dense)}
		p.Vecs = []client.Vector{{Name: denseName, Values: p.Dense}}
		return p
	}, func(ctx context.Context, p *Push) error {
		return cl.PushBatch(ctx, p.Origin, p.Route, p.Grads, p.Vecs)
	})
}
