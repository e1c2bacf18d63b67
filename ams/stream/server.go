package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// The stream's gRPC names: one bidirectional method of its own service
// beside the AMS service, on the shard's server and port.
const (
	ServiceName = "xps.ams.v1.AMSData"
	FullMethod  = "/" + ServiceName + "/Stream"
)

// serveParallel is how many requests of one stream a shard serves at
// once: a worker's next pulls go on while its last push is applied. A
// stream whose requests are all being served is not read further, and
// gRPC's flow control holds its worker's sends (back-pressure).
const serveParallel = 4

var streamDesc = grpc.StreamDesc{StreamName: "Stream", ServerStreams: true, ClientStreams: true}

// Handler serves a shard's data plane; package ams/shard implements it.
// Its methods fail with the shard's own errors (sentinels of package ams),
// which the stream carries to the worker as statuses of the error table
// (amspb.ToStatus). The request's payloads are views of its frame, valid
// until the method returns.
type Handler interface {
	// Pull answers a pull: it gives the reply's shape to w.Begin (each
	// table's ids x dim, each vector's range), fills the rows and values
	// Begin returns, and returns nil.
	Pull(ctx context.Context, q *Request, w *ReplyWriter) error
	// Push applies a push (q.Tables' Rows and q.Dense's Values are its
	// gradients) once for its batch (q.Origin).
	Push(ctx context.Context, q *Request) error
}

// Register serves h on gs as the stream data plane. gs must use amspb's
// codec (amspb.ServerOptions), in whose pool frames arrive; replies are
// built in buffers of p (nil: a pool of its own), best the codec's too.
func Register(gs *grpc.Server, h Handler, p *amspb.BufferPool) {
	if p == nil {
		p = &amspb.BufferPool{}
	}
	desc := grpc.ServiceDesc{ServiceName: ServiceName, HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{streamDesc}}
	desc.Streams[0].Handler = func(_ any, ss grpc.ServerStream) error {
		return amspb.ToStatus((&server{t: &grpcTransport{s: ss}, ctx: ss.Context(), h: h, pool: p}).serve())
	}
	gs.RegisterService(&desc, struct{}{})
}

// ServeConn serves h on a TCP connection of the stream's own, whose Magic
// has been read (Mux), until the worker closes it or it breaks; replies
// are built in buffers of p, frames read into them. It closes c.
func ServeConn(ctx context.Context, c net.Conn, h Handler, p *amspb.BufferPool) error {
	t := newTCPTransport(c, p)
	defer t.close()
	stop := context.AfterFunc(ctx, t.close)
	defer stop()
	return (&server{t: t, ctx: ctx, h: h, pool: p}).serve()
}

// server serves one stream.
type server struct {
	t    transport
	ctx  context.Context
	h    Handler
	pool *amspb.BufferPool

	sendMu  sync.Mutex // serialises sends
	sendErr error      // the first failed send, under sendMu
}

// serve answers the hello, then reads requests and hands them to
// serveParallel goroutines until the worker closes the stream or it
// breaks.
func (s *server) serve() error {
	if err := s.hello(); err != nil {
		return err
	}
	type req struct {
		buf  *[]byte
		pool *amspb.BufferPool
	}
	reqs := make(chan req, serveParallel)
	var wg sync.WaitGroup
	for range serveParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var q Request
			names := Names{}
			w := ReplyWriter{pool: s.pool}
			for r := range reqs {
				reply := s.serveOne(s.ctx, *r.buf, &q, names, &w)
				r.pool.Put(r.buf)
				s.send(reply)
			}
		}()
	}
	var err error
	for {
		var r req
		if r.buf, r.pool, err = s.t.recv(); err != nil {
			break
		}
		reqs <- r
	}
	close(reqs)
	wg.Wait()
	if errors.Is(err, io.EOF) || status.Code(err) == codes.Unavailable {
		return nil // the worker closed or dropped the stream
	}
	return err
}

// send sends a reply frame, or drops it once a send failed.
func (s *server) send(reply *[]byte) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.sendErr == nil {
		s.sendErr = s.t.send(reply, s.pool)
	} else {
		s.pool.Put(reply)
	}
}

// hello reads the worker's hello and answers with the shard's; a worker
// of another protocol version gets ams.ErrProtocol after it (so that it
// can name both versions).
func (s *server) hello() error {
	buf, pool, err := s.t.recv()
	if err != nil {
		return err
	}
	v, err := ParseHello(*buf)
	pool.Put(buf)
	if err != nil {
		return fmt.Errorf("%w: %w", ams.ErrProtocol, err)
	}
	b := Hello()
	if err := s.t.send(&b, nil); err != nil {
		return err
	}
	if v != ProtocolVersion {
		return fmt.Errorf("%w: the worker speaks data plane protocol %d, this shard %d: run one build on both", ams.ErrProtocol, v, ProtocolVersion)
	}
	return nil
}

// serveOne serves one request frame and returns its reply frame.
func (s *server) serveOne(ctx context.Context, frame []byte, q *Request, names Names, w *ReplyWriter) *[]byte {
	var id uint64
	if len(frame) >= 16 {
		id = binary.LittleEndian.Uint64(frame[8:])
	}
	err := ParseRequest(frame, q, names)
	if err == nil {
		switch q.Kind {
		case KindPull:
			w.id = id
			if err = s.h.Pull(ctx, q, w); err == nil {
				if b, err2 := w.finish(); err2 == nil {
					return b
				} else {
					err = err2
				}
			}
			w.drop()
		case KindPush:
			if err = s.h.Push(ctx, q); err == nil {
				b := getFrame(s.pool, ReplySize(nil, nil, 0))
				WriteReply(*b, id, nil, nil, nil, nil, nil)
				return b
			}
		default:
			err = fmt.Errorf("%w: %w: a frame of kind %d", ams.ErrBadRequest, errFrame, q.Kind)
		}
	}
	return s.errorReply(id, err)
}

// errorReply returns the reply frame of a request that failed with err.
func (s *server) errorReply(id uint64, err error) *[]byte {
	st, _ := status.FromError(amspb.ToStatus(err))
	eb, merr := proto.Marshal(st.Proto())
	if merr != nil {
		eb = []byte(err.Error()) // not a status: the worker reports the frame's bytes
	}
	b := getFrame(s.pool, ReplySize(nil, nil, len(eb)))
	WriteReply(*b, id, nil, nil, eb, nil, nil)
	return b
}

// ReplyWriter builds the reply to a pull in a buffer of the server's
// pool; a Handler's Pull calls Begin once.
type ReplyWriter struct {
	pool   *amspb.BufferPool
	id     uint64
	buf    *[]byte
	rows   [][]byte
	dense  [][]byte
	rowsF  [][]float32
	denseF [][]float32
	copied bool // the float views are copies (a big-endian machine): finish packs them
}

// Begin lays out the reply: values[i] row values (ids x dim) of the
// request's table i, and ranges[j] of its vector j. It returns the rooms,
// as float32s, of each table's rows (row k for the table's k-th id) and
// each vector's range, which the caller fills.
func (w *ReplyWriter) Begin(values []int, ranges []Range) (rows, dense [][]float32) {
	w.drop()
	w.buf = getFrame(w.pool, ReplySize(values, ranges, 0))
	w.rows = grow(w.rows, len(values))
	w.dense = grow(w.dense, len(ranges))
	WriteReply(*w.buf, w.id, values, ranges, nil, w.rows, w.dense)
	w.rowsF, w.denseF = grow(w.rowsF, len(values)), grow(w.denseF, len(ranges))
	w.copied = false
	for i, b := range w.rows {
		w.rowsF[i] = w.view(b)
	}
	for j, b := range w.dense {
		w.denseF[j] = w.view(b)
	}
	return w.rowsF, w.denseF
}

// view returns b's room as float32s: b itself, or a copy to pack at finish.
func (w *ReplyWriter) view(b []byte) []float32 {
	if v, ok := ams.FloatsView(b); ok {
		return v
	}
	w.copied = true
	return make([]float32, len(b)/4)
}

// finish returns the reply's frame, which the writer gives up.
func (w *ReplyWriter) finish() (*[]byte, error) {
	if w.buf == nil {
		return nil, fmt.Errorf("ams stream: a pull answered without a reply (Handler.Pull did not call Begin)")
	}
	if w.copied {
		for i, b := range w.rows {
			ams.PutFloats(b, w.rowsF[i])
		}
		for j, b := range w.dense {
			ams.PutFloats(b, w.denseF[j])
		}
	}
	b := w.buf
	w.buf = nil
	clear(w.rowsF)
	clear(w.denseF)
	return b, nil
}

// drop gives an unfinished reply's buffer back.
func (w *ReplyWriter) drop() {
	if w.buf != nil {
		w.pool.Put(w.buf)
		w.buf = nil
	}
}

// grow returns s with length n, reusing its array.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// minFrameCap is the least capacity of a frame's buffer: gRPC gives a sent
// buffer back to its pool only above mem.BufferPoolingThreshold (1 KiB),
// so a small frame (a push's reply) takes a buffer large enough to come
// back, instead of a fresh one every time.
const minFrameCap = 2 << 10

// getFrame returns a buffer of p of n bytes for a frame to send.
func getFrame(p *amspb.BufferPool, n int) *[]byte {
	b := p.Get(max(n, minFrameCap))
	*b = (*b)[:n]
	return b
}
