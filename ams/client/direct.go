package client

import (
	"context"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// DataPlane is the part of a shard's service that pulls and pushes rows:
// the signatures of amspb.AMSServer's Pull and Push, which a shard's
// service (shard.NewService) implements.
type DataPlane interface {
	Pull(context.Context, *amspb.PullRequest) (*amspb.PullResponse, error)
	Push(context.Context, *amspb.PushRequest) (*amspb.PushResponse, error)
}

// LocalShard is a DataPlane that also pulls into and pushes from the
// caller's own batch buffers, named by requests in package ams types
// (shard.Local implements it; the client does not import the shard): a
// resolver that returns one saves the request payloads and the reply's
// copies altogether. Sync-mode rounds still go through Pull and Push.
type LocalShard interface {
	DataPlane
	PullRows(ctx context.Context, version uint64, tables []ams.TableRequest, dense []ams.DenseRequest, create bool) error
	PushRows(ctx context.Context, version uint64, origin ams.Origin, tables []ams.TableRequest, dense []ams.DenseRequest) error
}

// Resolver finds the shard that serves a shard-map address inside this
// process. Local returns nil when no shard of this process serves addr
// (any more); the client then goes through gRPC. It is called on every
// pull and push, so it must be cheap and safe for concurrent use.
type Resolver interface {
	Local(addr string) DataPlane
}

// NewLocal is New for a worker that shares its process with some or all
// of the shards (the embedded local cluster): pulls and pushes to a shard
// that r resolves are calls of its service, with no gRPC framing, no
// socket and no copy of the request or the reply between the two; every
// other call, and the data plane of a shard r does not resolve, goes
// through gRPC as with New. The shard's checks and errors are the same on
// both paths: a call in this process fails with the shard's own errors,
// one over gRPC with an error that wraps the same sentinels (the error
// table, amspb.Errors).
//
// On the direct path the shard reads the request's payloads in place
// while it serves the call and keeps none of them (it copies what a
// sync-mode round holds until it is applied), and the reply's payloads
// are the shard's fresh buffers, which the client only reads.
func NewLocal(m *ams.ShardMap, r Resolver, extra ...grpc.DialOption) (*Client, error) {
	c, err := New(m, extra...)
	if err != nil {
		return nil, err
	}
	c.local = r
	return c, nil
}

// direct returns the data plane of shard s in this process, or nil when
// the shard is not resolved here. The callers look it up once per call
// and pass it to plane.
func (c *Client) direct(s int) DataPlane {
	if c.local == nil {
		return nil
	}
	return c.local.Local(c.m.Addrs[s])
}

// localRequests returns shard s's part of k's route as requests on the
// caller's buffers (one per table of the route; rows at their
// positions), and the dense vectors whole, in k's lists for shard s; ok
// is false when the shard has no part in the call.
func (k *call) localRequests(s int) (reqs []ams.TableRequest, vecs []ams.DenseRequest, ok bool) {
	r := k.r
	reqs, vecs = k.reqs[s][:0], k.vecs[s][:0]
	for ti, t := range r.tables {
		if len(r.ids[s][ti]) > 0 {
			reqs = append(reqs, ams.TableRequest{Table: t.name, IDs: r.ids[s][ti], Pos: r.pos[s][ti], Rows: k.bufs[ti]})
		}
	}
	for _, d := range k.dense {
		vecs = append(vecs, ams.DenseRequest{Name: d.Name, Values: d.Values})
	}
	k.reqs[s], k.vecs[s] = reqs, vecs
	return reqs, vecs, len(reqs) > 0 || len(vecs) > 0
}

// plane returns the data plane of shard s given its direct one d (from
// direct): a direct call when d is set, else the gRPC stub.
func (c *Client) plane(s int, d DataPlane) DataPlane {
	if d != nil {
		return directPlane{d}
	}
	return grpcPlane{c.stubs[s], c.conns[s]}
}

// grpcPlane adapts a gRPC stub to DataPlane.
type grpcPlane struct {
	stub amspb.AMSClient
	cc   grpc.ClientConnInterface // the stub's, for pulls without copies (pullVia)
}

// pullVia pulls through plane. Over gRPC the reply's bytes alias the
// received message (amspb.PullReply) until release, which the caller
// calls once it copied them out.
func pullVia(ctx context.Context, plane DataPlane, req *amspb.PullRequest) (resp *amspb.PullResponse, release func(), err error) {
	g, ok := plane.(grpcPlane)
	if !ok {
		resp, err = plane.Pull(ctx, req)
		return resp, func() {}, err
	}
	r := new(amspb.PullReply)
	if err := amspb.Pull(ctx, g.cc, req, r); err != nil {
		return nil, func() {}, err
	}
	return &r.Resp, r.Release, nil
}

func (g grpcPlane) Pull(ctx context.Context, req *amspb.PullRequest) (*amspb.PullResponse, error) {
	return g.stub.Pull(ctx, req)
}

func (g grpcPlane) Push(ctx context.Context, req *amspb.PushRequest) (*amspb.PushResponse, error) {
	return g.stub.Push(ctx, req)
}

// directPlane calls a shard's service in this process. It honours a
// context that has already ended, as gRPC would, with the context's
// error.
type directPlane struct{ d DataPlane }

func (p directPlane) Pull(ctx context.Context, req *amspb.PullRequest) (*amspb.PullResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return p.d.Pull(ctx, req)
}

func (p directPlane) Push(ctx context.Context, req *amspb.PushRequest) (*amspb.PushResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return p.d.Push(ctx, req)
}
