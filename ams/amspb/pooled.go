package amspb

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
)

// A shard's pull reply is most of what a shard allocates per request: a
// 50,000-row pull's rows are 3.2 MB. PooledReply lets the service fill
// buffers of the server's BufferPool instead and hand them to gRPC, which
// gives them back to the pool once the reply is on the wire: the Codec
// encodes the rows of a PooledReply as pool-owned buffers (mem.NewBuffer),
// and gRPC frees every buffer of a sent message after its last write.

// PooledReply is a pull reply whose table rows are in buffers of a
// BufferPool. Rows[i] is the buffer holding Resp.Tables[i].Rows (nil for
// rows the pool does not own).
type PooledReply struct {
	Resp PullResponse
	Rows []*[]byte
	Pool *BufferPool
}

// Release gives the buffers back to the pool: for a reply that will not
// be sent (the server returns an error instead). Without a pool it does
// nothing.
func (r *PooledReply) Release() {
	if r.Pool == nil {
		return
	}
	for i, b := range r.Rows {
		if b != nil {
			r.Pool.Put(b)
			r.Rows[i] = nil
		}
	}
}

// PooledServer is an AMSServer that can also reply to a pull with rows in
// buffers of p (PooledReply). Pull and PullPooled must answer alike.
type PooledServer interface {
	AMSServer
	PullPooled(ctx context.Context, req *PullRequest, p *BufferPool) (*PooledReply, error)
}

// RegisterPooledServer registers srv as the AMS service of s, its Pull
// method answered by srv.PullPooled with buffers of p, the pool of the
// server's Codec (ServerOptions(p)).
func RegisterPooledServer(s *grpc.Server, srv PooledServer, p *BufferPool) {
	desc := AMS_ServiceDesc
	desc.Methods = append([]grpc.MethodDesc(nil), AMS_ServiceDesc.Methods...)
	for i := range desc.Methods {
		if desc.Methods[i].MethodName == "Pull" {
			desc.Methods[i].Handler = pooledPullHandler(p)
		}
	}
	s.RegisterService(&desc, srv)
}

// pooledPullHandler is the generated Pull handler calling PullPooled.
func pooledPullHandler(p *BufferPool) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(PullRequest)
		if err := dec(in); err != nil {
			return nil, err
		}
		handler := func(ctx context.Context, req any) (any, error) {
			return srv.(PooledServer).PullPooled(ctx, req.(*PullRequest), p)
		}
		if interceptor == nil {
			return handler(ctx, in)
		}
		return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: AMS_Pull_FullMethodName}, handler)
	}
}

// pooledBuffer returns data, which is *b, as a buffer that goes back to p
// when gRPC frees it; or as a plain one when b is nil or not exactly data
// (then the garbage collector takes it).
func pooledBuffer(b *[]byte, p *BufferPool, data []byte) mem.Buffer {
	if b == nil || p == nil || len(*b) != len(data) || len(data) == 0 || &(*b)[0] != &data[0] {
		return mem.SliceBuffer(data)
	}
	return mem.NewBuffer(b, p)
}
