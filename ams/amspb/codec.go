package amspb

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Codec is gRPC's protobuf codec ("proto", the same wire format) with its
// buffers taken from a BufferPool instead of gRPC's default pool, which
// zeroes every buffer it hands out. AMS payloads are large (a pull reply is
// rows x dim x 4 bytes), so that zeroing showed up as a tenth of a worker's
// CPU time.
type Codec struct {
	Pool *BufferPool
}

var _ encoding.CodecV2 = Codec{}

// Marshal encodes v, a protobuf message, into a pooled buffer.
func (c Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *PullResponse:
		return marshalPullResponse(m, nil, nil), nil
	case *PooledReply:
		return marshalPullResponse(&m.Resp, m.Rows, m.Pool), nil
	case *PushRequest:
		return marshalPushRequest(m), nil
	case *Raw:
		return mem.BufferSlice{mem.NewBuffer(m.Buf, m.Pool)}, nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("amspb: cannot marshal %T: not a protobuf message", v)
	}
	size := proto.Size(m)
	buf := c.Pool.Get(size)
	// UseCachedSize reuses the sizes proto.Size just computed.
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		c.Pool.Put(buf)
		return nil, fmt.Errorf("amspb: marshal %T: %w", v, err)
	}
	*buf = out
	return mem.BufferSlice{mem.NewBuffer(buf, c.Pool)}, nil
}

// Unmarshal decodes data into v, a protobuf message, or a PullReply.
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch r := v.(type) {
	case *PullReply:
		return c.unmarshalPullReply(data, r)
	case *Raw:
		b := c.Pool.Get(data.Len())
		data.CopyTo(*b)
		r.Buf, r.Pool = b, c.Pool
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("amspb: cannot unmarshal into %T: not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(c.Pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// Raw is a message of a protocol of its own (package ams/stream's frames),
// which the Codec moves as its bytes: it sends Buf as a buffer owned by
// Pool, which gRPC gives back once the bytes are written (so the sender
// must not touch Buf after sending it), and receives a message into a
// buffer of its own pool, contiguous and aligned as the pool's buffers are
// (a fresh allocation: 8 bytes at least), which the receiver owns and puts
// back into Pool when done.
type Raw struct {
	Buf  *[]byte
	Pool *BufferPool
}

// Name is "proto": the codec speaks the standard protobuf content type.
func (Codec) Name() string { return "proto" }

// ServerOptions install p and a Codec of p on a gRPC server, and an
// interceptor that answers every error as a status of the error table
// (ToStatus), so that the service returns the shard's own errors.
func ServerOptions(p *BufferPool) []grpc.ServerOption {
	return []grpc.ServerOption{ServerOption(p), grpc.ForceServerCodecV2(Codec{Pool: p}),
		grpc.ChainUnaryInterceptor(errorInterceptor)}
}

// DialOptions install a BufferPool and a Codec on a gRPC client connection.
func DialOptions() []grpc.DialOption {
	p := &BufferPool{}
	return []grpc.DialOption{DialOption(p), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(Codec{Pool: p}))}
}
