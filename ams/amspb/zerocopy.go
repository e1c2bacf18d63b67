package amspb

import (
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// The two messages that carry bulk payloads, a pull reply and a push
// request, are encoded by hand into a BufferSlice whose large bytes fields
// are the message's own slices rather than copies: gRPC copies them into
// its frames anyway, so the protobuf marshal's copy is saved. The bytes are
// the standard protobuf encoding of the message (tests check it against
// proto.Marshal and proto.Unmarshal), so any protobuf peer decodes them.
// The caller must not change the message's slices until the send is done
// (for a unary RPC: until the call returns, or the handler's reply is sent).

// bulkMin is the size from which a bytes field is sent without a copy.
const bulkMin = 4 << 10

// wireWriter accumulates small encoded pieces and splices large bytes
// fields in as their own buffers.
type wireWriter struct {
	out mem.BufferSlice
	cur []byte
}

func (w *wireWriter) flush() {
	if len(w.cur) > 0 {
		w.out = append(w.out, mem.SliceBuffer(w.cur))
		w.cur = nil
	}
}

func (w *wireWriter) tag(num protowire.Number, t protowire.Type) {
	w.cur = protowire.AppendTag(w.cur, num, t)
}

func (w *wireWriter) varint(num protowire.Number, v uint64) {
	if v != 0 {
		w.tag(num, protowire.VarintType)
		w.cur = protowire.AppendVarint(w.cur, v)
	}
}

func (w *wireWriter) str(num protowire.Number, s string) {
	if s != "" {
		w.tag(num, protowire.BytesType)
		w.cur = protowire.AppendString(w.cur, s)
	}
}

func (w *wireWriter) bytes(num protowire.Number, b []byte) { w.bytesOf(num, b, nil, nil) }

// bytesOf writes the bytes field b, which is *buf's bytes when buf is
// not nil: then the message owns buf, which goes back to pool once gRPC
// has sent it (pooledBuffer). A small b is copied and buf left to the
// garbage collector.
func (w *wireWriter) bytesOf(num protowire.Number, b []byte, buf *[]byte, pool *BufferPool) {
	if len(b) == 0 {
		return
	}
	w.tag(num, protowire.BytesType)
	w.cur = protowire.AppendVarint(w.cur, uint64(len(b)))
	if len(b) < bulkMin {
		w.cur = append(w.cur, b...)
		return
	}
	w.flush()
	w.out = append(w.out, pooledBuffer(buf, pool, b))
}

// message writes a length-delimited sub-message of the given encoded size.
func (w *wireWriter) message(num protowire.Number, size int) {
	w.tag(num, protowire.BytesType)
	w.cur = protowire.AppendVarint(w.cur, uint64(size))
}

func sizeStr(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

func sizeBytes(num protowire.Number, b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(b))
}

func sizeVarint(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// marshalPullResponse encodes m without copying its rows and values. With
// a pool, rows[i] (when not nil) is the pool's buffer holding table i's
// rows: the returned message owns it.
func marshalPullResponse(m *PullResponse, rows []*[]byte, pool *BufferPool) mem.BufferSlice {
	var w wireWriter
	for i, t := range m.Tables {
		var buf *[]byte
		if i < len(rows) {
			buf = rows[i]
		}
		w.message(1, sizeStr(1, t.Table)+sizeBytes(2, t.Rows))
		w.str(1, t.Table)
		w.bytesOf(2, t.Rows, buf, pool)
	}
	for _, d := range m.Dense {
		w.message(2, sizeStr(1, d.Name)+sizeVarint(2, d.Lo)+sizeVarint(3, d.Hi)+sizeBytes(4, d.Values))
		w.str(1, d.Name)
		w.varint(2, d.Lo)
		w.varint(3, d.Hi)
		w.bytes(4, d.Values)
	}
	if m.RoundPending {
		w.varint(3, 1)
	}
	w.flush()
	return w.out
}

// marshalPushRequest encodes m without copying its ids and gradients.
func marshalPushRequest(m *PushRequest) mem.BufferSlice {
	var w wireWriter
	w.varint(1, m.ClusterVersion)
	for _, t := range m.Tables {
		w.message(2, sizeStr(1, t.Table)+sizeBytes(2, t.Ids)+sizeBytes(3, t.Grads))
		w.str(1, t.Table)
		w.bytes(2, t.Ids)
		w.bytes(3, t.Grads)
	}
	for _, d := range m.Dense {
		w.message(3, sizeStr(1, d.Name)+sizeBytes(2, d.Grad))
		w.str(1, d.Name)
		w.bytes(2, d.Grad)
	}
	if r := m.Sync; r != nil {
		done := uint64(0)
		if r.Done {
			done = 1
		}
		w.message(4, sizeVarint(1, uint64(r.Epoch))+sizeVarint(2, uint64(r.Iter))+sizeVarint(3, uint64(r.Worker))+
			sizeVarint(4, uint64(r.Workers))+sizeVarint(5, done))
		w.varint(1, uint64(r.Epoch))
		w.varint(2, uint64(r.Iter))
		w.varint(3, uint64(r.Worker))
		w.varint(4, uint64(r.Workers))
		w.varint(5, done)
	}
	for _, e := range m.State {
		w.message(5, sizeStr(1, e.Key)+sizeBytes(2, e.Value))
		w.str(1, e.Key)
		w.bytes(2, e.Value)
	}
	if o := m.Origin; o != nil {
		w.message(6, sizeStr(1, o.Worker)+sizeVarint(2, o.Batch)+sizeVarint(3, uint64(o.Samples))+sizeVarint(4, o.Digest))
		w.str(1, o.Worker)
		w.varint(2, o.Batch)
		w.varint(3, uint64(o.Samples))
		w.varint(4, o.Digest)
	}
	w.flush()
	return w.out
}
