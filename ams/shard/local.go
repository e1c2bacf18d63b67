package shard

import (
	"context"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// Local is a shard's data plane for a worker in the same process (see
// client.NewLocal): the service's Pull and Push on protobuf messages
// (sync-mode rounds use them), and PullRows and PushRows, which read and
// write the caller's own batch buffers, with no request payloads and no
// reply to copy. Every method checks what the service checks and fails
// with the same errors (sentinels of package ams, never a gRPC status),
// which match as a client's errors over gRPC do, so the caller handles
// both paths alike. It checks the request limits (ams.CheckRequestSize)
// as the service does; the one check it leaves out is gRPC's message
// size limit, as nothing is sent.
type Local struct {
	service
}

// NewLocal returns s's data plane for callers in this process.
func NewLocal(s *Shard) *Local { return &Local{service{s: s}} }

// PullRows fills each table request's rows (at its positions) and the
// shard's range of each dense vector, as Pull does.
func (l *Local) PullRows(ctx context.Context, version uint64, tables []ams.TableRequest, dense []ams.DenseRequest, create bool) error {
	c := l.s.getCall()
	defer l.s.putCall(c)
	if err := l.check(ctx, c, version, dense); err != nil {
		return err
	}
	if len(tables) > 0 {
		if err := l.s.pull(c, version, tables, create); err != nil {
			return err
		}
	}
	for i, d := range dense {
		di := c.infos[i]
		if err := l.s.denseTask(c, di, opDensePull, version, d.Values[di.lo:di.hi]); err != nil {
			return err
		}
	}
	return nil
}

// PushRows applies each table request's rows (at its positions) as
// gradients, and the shard's range of each dense gradient, as Push does,
// origin's batch once (ams.Origin). A bad dense vector refuses the whole
// request before anything is applied.
func (l *Local) PushRows(ctx context.Context, version uint64, origin ams.Origin, tables []ams.TableRequest, dense []ams.DenseRequest) error {
	c := l.s.getCall()
	defer l.s.putCall(c)
	if err := l.check(ctx, c, version, dense); err != nil {
		return err
	}
	for i, d := range dense {
		di := c.infos[i]
		c.grads = append(c.grads, denseGrad{di, d.Values[di.lo:di.hi]})
	}
	return l.s.applyIn(c, version, origin, tables, c.grads)
}

// check makes the checks every call makes first, in the service's order:
// the context, the version, the dense vectors (denseRanges, whose ranges
// it leaves in c.infos).
func (l *Local) check(ctx context.Context, c *call, version uint64, dense []ams.DenseRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.s.checkVersion(version); err != nil {
		return err
	}
	return l.denseRanges(c, dense)
}

// denseRanges looks up each vector and checks that its buffer is the
// whole vector, and that the shard's ranges keep within
// ams.MaxDenseValues together; it leaves their ranges in c.infos.
func (l *Local) denseRanges(c *call, dense []ams.DenseRequest) error {
	c.infos = c.infos[:0]
	values := 0
	for _, d := range dense {
		di, err := l.s.denseInfo(d.Name, -1)
		if err != nil {
			return err
		}
		if len(d.Values) != di.spec.Size {
			return fmt.Errorf("%w: dense %q: a buffer of %d values for a vector of %d", ams.ErrBadRequest, d.Name, len(d.Values), di.spec.Size)
		}
		c.infos = append(c.infos, di)
		values += di.hi - di.lo
	}
	return ams.CheckRequestSize(0, 0, values)
}

var _ amspb.AMSServer = (*Local)(nil)
