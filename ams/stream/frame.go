package stream

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams"
)

// ProtocolVersion is the version of the frames below. A stream opens with
// a hello each way that carries it; a shard refuses a stream of another
// version with a status that names both.
const ProtocolVersion = 1

// Kind is a frame's first byte.
type Kind byte

// The kinds of frames.
const (
	KindHello Kind = 1 // both ways, once: the protocol version
	KindPull  Kind = 2 // worker to shard: ids of tables, names of dense vectors
	KindPush  Kind = 3 // worker to shard: ids and gradients, dense gradients, the batch's origin
	KindReply Kind = 4 // shard to worker: a request's rows and dense ranges, or its error
)

// Request layout (little-endian; every payload starts 8-byte aligned in
// the frame, so that a frame in an aligned buffer is read in place):
//
//	[0]      kind (KindPull, KindPush or KindHello)
//	[1]      flags: bit 0 create (pull)
//	[2:4]    tables, [4:6] dense vectors, [6:8] worker name bytes (push)
//	[8:16]   request id (hello: ProtocolVersion)
//	[16:24]  cluster version
//	[24:32]  batch, [32:36] samples, [36:40] zero, [40:48] digest (push's origin)
//	worker name
//	each table: u16 name length, name, u32 ids, u32 dim (push; 0 in a pull)
//	each vector: u16 name length, name, u32 values (push; 0 in a pull)
//	zero padding to 8
//	each table: ids (8 bytes each), then (push) ids x dim gradients (4 bytes
//	each), padded to 8
//	each vector (push): its values (4 bytes each), padded to 8
//
// Reply layout:
//
//	[0]      KindReply (or KindHello)
//	[1]      0: ok; 1: the request failed, the error follows
//	[2:4]    tables, [4:6] dense vectors, [6:8] zero
//	[8:16]   request id (hello: ProtocolVersion)
//	[16:20]  error bytes (a google.rpc.Status), [20:24] zero
//	the error
//	each table: u32 values (ids x dim); each vector: u64 lo, u64 hi
//	zero padding to 8
//	each table's rows (4 bytes a value), padded to 8; each vector's values
//	[lo, hi), padded to 8
const (
	requestHeader = 48
	replyHeader   = 24
	maxNames      = 1 << 16 // tables or vectors in one frame, and bytes of one name
)

// errFrame is the error of every malformed frame.
var errFrame = errors.New("ams stream: malformed frame")

func align8(n int) int { return (n + 7) &^ 7 }

// RequestHeader is the fixed part of a request.
type RequestHeader struct {
	Kind    Kind
	ID      uint64
	Version uint64 // the cluster version
	Create  bool   // a pull's: create missing rows
	Origin  ams.Origin
}

// TableMeta names one table of a request: its name, how many ids, and a
// push's gradient width (its dim; 0 in a pull).
type TableMeta struct {
	Name string
	IDs  int
	Dim  int
}

// DenseMeta names one dense vector of a request, with the values a push
// carries (0 in a pull).
type DenseMeta struct {
	Name   string
	Values int
}

// RequestSize returns the bytes of a request frame of h, tables and dense.
func RequestSize(h *RequestHeader, tables []TableMeta, dense []DenseMeta) int {
	n := requestHeader + len(h.Origin.Worker)
	for _, t := range tables {
		n += 2 + len(t.Name) + 8
	}
	for _, d := range dense {
		n += 2 + len(d.Name) + 4
	}
	n = align8(n)
	for _, t := range tables {
		n += align8(8*t.IDs + 4*t.IDs*t.Dim)
	}
	for _, d := range dense {
		n += align8(4 * d.Values)
	}
	return n
}

// RequestWriter lays out one request frame in a buffer of exactly
// RequestSize bytes: Begin writes the header and the metadata, then the
// caller writes every table's payload (Table) and every vector's (Dense),
// in the order of the metadata.
type RequestWriter struct {
	b   []byte
	off int // the next payload's offset
}

// Begin writes h and the metadata into b, which must hold RequestSize
// bytes, and returns the writer of the payloads. It fails on a name over
// 65,535 bytes or more tables or vectors than that.
func (w *RequestWriter) Begin(b []byte, h *RequestHeader, tables []TableMeta, dense []DenseMeta) error {
	if len(tables) >= maxNames || len(dense) >= maxNames || len(h.Origin.Worker) >= maxNames {
		return fmt.Errorf("%w: %d tables, %d dense vectors, a worker name of %d bytes in one request", ams.ErrBadRequest, len(tables), len(dense), len(h.Origin.Worker))
	}
	le := binary.LittleEndian
	b[0] = byte(h.Kind)
	b[1] = 0
	if h.Create {
		b[1] = 1
	}
	le.PutUint16(b[2:], uint16(len(tables)))
	le.PutUint16(b[4:], uint16(len(dense)))
	le.PutUint16(b[6:], uint16(len(h.Origin.Worker)))
	le.PutUint64(b[8:], h.ID)
	le.PutUint64(b[16:], h.Version)
	le.PutUint64(b[24:], h.Origin.Batch)
	le.PutUint32(b[32:], h.Origin.Samples)
	le.PutUint32(b[36:], 0)
	le.PutUint64(b[40:], h.Origin.Digest)
	off := requestHeader + copy(b[requestHeader:], h.Origin.Worker)
	for _, t := range tables {
		if len(t.Name) >= maxNames {
			return fmt.Errorf("%w: a table name of %d bytes", ams.ErrBadRequest, len(t.Name))
		}
		le.PutUint16(b[off:], uint16(len(t.Name)))
		off += 2 + copy(b[off+2:], t.Name)
		le.PutUint32(b[off:], uint32(t.IDs))
		le.PutUint32(b[off+4:], uint32(t.Dim))
		off += 8
	}
	for _, d := range dense {
		if len(d.Name) >= maxNames {
			return fmt.Errorf("%w: a dense vector name of %d bytes", ams.ErrBadRequest, len(d.Name))
		}
		le.PutUint16(b[off:], uint16(len(d.Name)))
		off += 2 + copy(b[off+2:], d.Name)
		le.PutUint32(b[off:], uint32(d.Values))
		off += 4
	}
	end := align8(off)
	clear(b[off:end])
	w.b, w.off = b, end
	return nil
}

// Table writes the next table's ids and returns the room of its gradients
// (ids x dim x 4 bytes; empty in a pull), which the caller fills.
func (w *RequestWriter) Table(ids []uint64, dim int) (grads []byte) {
	ams.PutIDs(w.b[w.off:w.off+8*len(ids)], ids)
	w.off += 8 * len(ids)
	grads = w.b[w.off : w.off+4*len(ids)*dim]
	w.off += len(grads)
	w.pad()
	return grads
}

// Dense returns the room of the next vector's values (4 bytes each), which
// the caller fills.
func (w *RequestWriter) Dense(values int) []byte {
	b := w.b[w.off : w.off+4*values]
	w.off += len(b)
	w.pad()
	return b
}

// pad zeroes the bytes up to the next multiple of 8.
func (w *RequestWriter) pad() {
	end := align8(w.off)
	clear(w.b[w.off:end])
	w.off = end
}

// Request is a decoded request: its tables' ids and a push's gradients
// are views of the frame (on a little-endian machine, in an aligned
// frame; copies otherwise), valid while the frame is. Its lists are
// reused by the next ParseRequest.
type Request struct {
	RequestHeader
	// Tables holds each table's name and ids, and a push's gradients in
	// Rows; a pull's Rows are left for the server to point at the reply.
	Tables []ams.TableRequest
	// Dims holds each table's dim as the request gave it (a push's).
	Dims []int
	// Dense holds each vector's name, and a push's gradient of the
	// shard's range in Values.
	Dense []ams.DenseRequest

	counts []int // the tables' ids, then the vectors' values, as the metadata gives them
}

// Names interns the names of tables and vectors read from frames, so that
// a stream does not allocate a string per name per request. A Names is
// used by one goroutine at a time; it keeps at most maxNames names.
type Names map[string]string

func (n Names) name(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(n) < maxNames {
		n[s] = s
	}
	return s
}

// reader reads a frame's fields in order; every read checks the bounds.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.err = errFrame
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u16() int {
	if b := r.take(2); b != nil {
		return int(binary.LittleEndian.Uint16(b))
	}
	return 0
}

func (r *reader) u32() int {
	if b := r.take(4); b != nil {
		return int(binary.LittleEndian.Uint32(b))
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// align skips the padding to the next multiple of 8.
func (r *reader) align() { r.take(align8(r.off) - r.off) }

// ParseRequest decodes frame into q, names interned by names. It fails,
// never panics, on a frame that is not a well-formed request (an error
// that wraps ams.ErrBadRequest), and reuses q's lists.
func ParseRequest(frame []byte, q *Request, names Names) error {
	if err := q.parse(frame, names); err != nil {
		return fmt.Errorf("%w: %w", ams.ErrBadRequest, err)
	}
	return nil
}

func (q *Request) parse(frame []byte, names Names) error {
	if len(frame) < requestHeader {
		return fmt.Errorf("%w: a request of %d bytes", errFrame, len(frame))
	}
	le := binary.LittleEndian
	q.Kind = Kind(frame[0])
	q.Create = frame[1]&1 != 0
	nt, nd, nw := int(le.Uint16(frame[2:])), int(le.Uint16(frame[4:])), int(le.Uint16(frame[6:]))
	q.ID, q.Version = le.Uint64(frame[8:]), le.Uint64(frame[16:])
	q.Origin = ams.Origin{Batch: le.Uint64(frame[24:]), Samples: le.Uint32(frame[32:]), Digest: le.Uint64(frame[40:])}
	r := &reader{b: frame, off: requestHeader}
	if nw > 0 {
		q.Origin.Worker = names.name(r.take(nw))
	}
	q.Tables, q.Dims, q.Dense, q.counts = q.Tables[:0], q.Dims[:0], q.Dense[:0], q.counts[:0]
	for range nt {
		name := names.name(r.take(r.u16()))
		ids, dim := r.u32(), r.u32()
		q.Tables = append(q.Tables, ams.TableRequest{Table: name})
		q.Dims = append(q.Dims, dim)
		q.counts = append(q.counts, ids)
	}
	for range nd {
		name := names.name(r.take(r.u16()))
		q.Dense = append(q.Dense, ams.DenseRequest{Name: name})
		q.counts = append(q.counts, r.u32())
	}
	r.align()
	for i := range q.Tables {
		n, dim := q.counts[i], q.Dims[i]
		if r.err != nil || n > (len(frame)-r.off)/8 || dim > len(frame) {
			return errFrame
		}
		q.Tables[i].IDs = idsOf(r.take(8 * n))
		if q.Kind == KindPush {
			if n*dim > (len(frame)-r.off)/4 {
				return errFrame
			}
			q.Tables[i].Rows = floatsOf(r.take(4 * n * dim))
		} else if dim != 0 {
			return fmt.Errorf("%w: a pull that names a dim", errFrame)
		}
		r.align()
	}
	for j := range q.Dense {
		n := q.counts[len(q.Tables)+j]
		if r.err != nil || n > (len(frame)-r.off)/4 {
			return errFrame
		}
		if q.Kind == KindPush {
			q.Dense[j].Values = floatsOf(r.take(4 * n))
		} else if n != 0 {
			return fmt.Errorf("%w: a pull that carries dense values", errFrame)
		}
		r.align()
	}
	if r.err != nil {
		return r.err
	}
	if r.off != len(frame) {
		return fmt.Errorf("%w: %d bytes after the request", errFrame, len(frame)-r.off)
	}
	return nil
}

// idsOf views b as ids, or copies them where the machine or the alignment
// does not allow a view.
func idsOf(b []byte) []uint64 {
	if v, ok := ams.IDsView(b); ok {
		return v
	}
	v, _ := ams.UnpackIDs(nil, b)
	return v
}

// floatsOf views b as float32s, or copies them (see idsOf).
func floatsOf(b []byte) []float32 {
	if v, ok := ams.FloatsView(b); ok {
		return v
	}
	v, _ := ams.UnpackFloats(nil, b)
	return v
}

// Range is a shard's range [Lo, Hi) of a dense vector.
type Range struct{ Lo, Hi int }

// ReplySize returns the bytes of a reply frame with tables' values (ids x
// dim each), the ranges of dense vectors, and an error of errBytes.
func ReplySize(values []int, ranges []Range, errBytes int) int {
	n := align8(replyHeader + errBytes + 4*len(values) + 16*len(ranges))
	for _, v := range values {
		n += align8(4 * v)
	}
	for _, r := range ranges {
		n += align8(4 * (r.Hi - r.Lo))
	}
	return n
}

// WriteReply lays out a reply to request id in b (ReplySize bytes): the
// error's bytes when errBytes is set (and then no tables or ranges), else
// the tables' values and the ranges; rows and dense receive the byte
// rooms of each table's rows and each range's values, which the caller
// fills.
func WriteReply(b []byte, id uint64, values []int, ranges []Range, errBytes []byte, rows, dense [][]byte) {
	le := binary.LittleEndian
	b[0] = byte(KindReply)
	b[1] = 0
	if errBytes != nil {
		b[1] = 1
	}
	le.PutUint16(b[2:], uint16(len(values)))
	le.PutUint16(b[4:], uint16(len(ranges)))
	le.PutUint16(b[6:], 0)
	le.PutUint64(b[8:], id)
	le.PutUint32(b[16:], uint32(len(errBytes)))
	le.PutUint32(b[20:], 0)
	off := replyHeader + copy(b[replyHeader:], errBytes)
	for _, v := range values {
		le.PutUint32(b[off:], uint32(v))
		off += 4
	}
	for _, r := range ranges {
		le.PutUint64(b[off:], uint64(r.Lo))
		le.PutUint64(b[off+8:], uint64(r.Hi))
		off += 16
	}
	end := align8(off)
	clear(b[off:end])
	off = end
	room := func(n int) []byte {
		r := b[off : off+n]
		end := align8(off + n)
		clear(b[off+n : end])
		off = end
		return r
	}
	for i, v := range values {
		rows[i] = room(4 * v)
	}
	for j, r := range ranges {
		dense[j] = room(4 * (r.Hi - r.Lo))
	}
}

// Reply is a decoded reply: its payloads are views of the frame, valid
// while the frame is. Its lists are reused by the next ParseReply.
type Reply struct {
	ID uint64
	// Err holds the error's bytes (a google.rpc.Status) of a request that
	// failed, nil when it succeeded.
	Err []byte
	// Rows holds each table's rows, packed float32s.
	Rows [][]byte
	// Ranges and Dense hold each dense vector's range and its values.
	Ranges []Range
	Dense  [][]byte
}

// ParseReply decodes frame into p. It fails, never panics, on a frame
// that is not a well-formed reply.
func ParseReply(frame []byte, p *Reply) error {
	if len(frame) < replyHeader || Kind(frame[0]) != KindReply {
		return fmt.Errorf("%w: not a reply (%d bytes)", errFrame, len(frame))
	}
	le := binary.LittleEndian
	nt, nd := int(le.Uint16(frame[2:])), int(le.Uint16(frame[4:]))
	p.ID = le.Uint64(frame[8:])
	r := &reader{b: frame, off: replyHeader}
	p.Err = nil
	if frame[1] != 0 {
		p.Err = r.take(int(le.Uint32(frame[16:])))
		if p.Err == nil {
			p.Err = []byte{}
		}
	}
	p.Rows, p.Ranges, p.Dense = p.Rows[:0], p.Ranges[:0], p.Dense[:0]
	values := r.take(4 * nt)
	for range nd {
		lo, hi := r.u64(), r.u64()
		if r.err == nil && (hi < lo || hi-lo > uint64(len(frame))) {
			r.err = errFrame
		}
		p.Ranges = append(p.Ranges, Range{Lo: int(lo), Hi: int(hi)})
	}
	r.align()
	for i := range nt {
		if r.err != nil {
			break
		}
		v := int(le.Uint32(values[4*i:]))
		if v > (len(frame)-r.off)/4 {
			return errFrame
		}
		p.Rows = append(p.Rows, r.take(4*v))
		r.align()
	}
	for _, g := range p.Ranges {
		p.Dense = append(p.Dense, r.take(4*(g.Hi-g.Lo)))
		r.align()
	}
	if r.err != nil {
		return r.err
	}
	if r.off != len(frame) {
		return fmt.Errorf("%w: %d bytes after the reply", errFrame, len(frame)-r.off)
	}
	return nil
}

// Hello returns the hello frame of ProtocolVersion (48 bytes, the size of
// a request's header, either way).
func Hello() []byte {
	b := make([]byte, requestHeader)
	b[0] = byte(KindHello)
	binary.LittleEndian.PutUint64(b[8:], ProtocolVersion)
	return b
}

// ParseHello returns the protocol version a hello frame carries.
func ParseHello(frame []byte) (uint64, error) {
	if len(frame) != requestHeader || Kind(frame[0]) != KindHello {
		return 0, fmt.Errorf("%w: not a hello (%d bytes, kind %d)", errFrame, len(frame), firstByte(frame))
	}
	return binary.LittleEndian.Uint64(frame[8:]), nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
