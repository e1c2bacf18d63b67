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
	ranges, err := l.check(ctx, version, dense)
	if err != nil {
		return err
	}
	if len(tables) > 0 {
		if err := l.s.Pull(version, tables, create); err != nil {
			return err
		}
	}
	for i, d := range dense {
		if err := l.s.denseTask(ranges[i], opDensePull, version, d.Values[ranges[i].lo:ranges[i].hi]); err != nil {
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
	ranges, err := l.check(ctx, version, dense)
	if err != nil {
		return err
	}
	grads := make([]denseGrad, len(dense))
	for i, d := range dense {
		grads[i] = denseGrad{ranges[i], d.Values[ranges[i].lo:ranges[i].hi]}
	}
	return l.s.apply(version, origin, tables, grads)
}

// check makes the checks every call makes first, in the service's order:
// the context, the version, the dense vectors (denseRanges, whose ranges
// it returns).
func (l *Local) check(ctx context.Context, version uint64, dense []ams.DenseRequest) ([]*denseInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.s.checkVersion(version); err != nil {
		return nil, err
	}
	return l.denseRanges(dense)
}

// denseRanges looks up each vector and checks that its buffer is the
// whole vector, and that the shard's ranges keep within
// ams.MaxDenseValues together.
func (l *Local) denseRanges(dense []ams.DenseRequest) ([]*denseInfo, error) {
	out := make([]*denseInfo, len(dense))
	values := 0
	for i, d := range dense {
		di, err := l.s.denseInfo(d.Name, -1)
		if err != nil {
			return nil, err
		}
		if len(d.Values) != di.spec.Size {
			return nil, fmt.Errorf("%w: dense %q: a buffer of %d values for a vector of %d", ams.ErrBadRequest, d.Name, len(d.Values), di.spec.Size)
		}
		out[i] = di
		values += di.hi - di.lo
	}
	if err := ams.CheckRequestSize(0, 0, values); err != nil {
		return nil, err
	}
	return out, nil
}

var _ amspb.AMSServer = (*Local)(nil)
