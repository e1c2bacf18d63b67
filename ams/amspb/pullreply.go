package amspb

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// PullReply is a pull's reply as the Codec decodes it for Pull: the
// PullResponse's bytes fields (rows, dense values) alias the received
// message's buffer instead of being copied out of it, so that a pull's
// rows are copied once, from the received bytes into the caller's
// buffers, where proto.Unmarshal would copy them into fields of their own
// first (a tenth of a separate worker's copying). Release gives the
// buffer back to the pool; Resp must not be read after it.
type PullReply struct {
	Resp PullResponse
	buf  mem.Buffer
}

// Release returns r's buffer to its pool and empties r.
func (r *PullReply) Release() {
	if r.buf != nil {
		r.buf.Free()
		r.buf = nil
	}
	r.Resp.Tables, r.Resp.Dense, r.Resp.RoundPending = nil, nil, false
}

// replyCodec decodes the replies Pull asks for, on any connection.
var replyCodec = Codec{Pool: &BufferPool{}}

// Pull calls the AMS Pull method through cc and decodes the reply into r
// (released first): the generated client's Pull without the copies.
func Pull(ctx context.Context, cc grpc.ClientConnInterface, req *PullRequest, r *PullReply) error {
	r.Release()
	return cc.Invoke(ctx, AMS_Pull_FullMethodName, req, r, grpc.StaticMethod(), grpc.ForceCodecV2(replyCodec))
}

// unmarshalPullReply decodes data into r, r's bytes fields aliasing one
// buffer of data that r keeps until Release.
func (c Codec) unmarshalPullReply(data mem.BufferSlice, r *PullReply) error {
	r.Release()
	buf := data.MaterializeToBuffer(c.Pool)
	if err := unmarshalPullResponse(buf.ReadOnlyData(), &r.Resp); err != nil {
		buf.Free()
		r.Release()
		return fmt.Errorf("amspb: unmarshal PullResponse: %w", err)
	}
	r.buf = buf
	return nil
}

// unmarshalPullResponse decodes the protobuf encoding b into m, whose
// bytes fields alias b. Fields m does not know, or of another wire type
// than its own, are skipped (proto.Unmarshal keeps them as unknown fields,
// which nothing here reads).
func unmarshalPullResponse(b []byte, m *PullResponse) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			t := &TableRows{}
			m.Tables = append(m.Tables, t)
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					t.Table = string(v)
				case num == 2 && typ == protowire.BytesType:
					t.Rows = v
				}
				return nil
			})
		case num == 2 && typ == protowire.BytesType:
			d := &DenseValues{}
			m.Dense = append(m.Dense, d)
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					d.Name = string(v)
				case num == 2 && typ == protowire.VarintType:
					d.Lo = x
				case num == 3 && typ == protowire.VarintType:
					d.Hi = x
				case num == 4 && typ == protowire.BytesType:
					d.Values = v
				}
				return nil
			})
		case num == 3 && typ == protowire.VarintType:
			m.RoundPending = x != 0
		}
		return nil
	})
}

// eachField calls fn with every field of the encoded message b, in order:
// its number and wire type, and its bytes (length-delimited fields,
// aliasing b) or its value (varints).
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if !num.IsValid() { // ConsumeTag takes numbers up to 2^31-1
			return fmt.Errorf("invalid field number %d", num)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
