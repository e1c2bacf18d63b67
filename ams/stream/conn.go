package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// Sink receives the reply to a pull, on the stream's receiving goroutine
// while the caller waits for it: it copies the rows and values it wants
// out of the reply, whose payloads are views of the frame.
type Sink interface {
	Deliver(*Reply) error
}

// Conn is a worker's stream to one shard over a gRPC connection: requests
// of any number of callers go out on one stream, each tagged with an id,
// and a receiving goroutine hands each reply to its caller. The stream is
// opened by the first call and again by the first call after it broke;
// the calls in flight on a stream that breaks fail with its error (gRPC's
// UNAVAILABLE, ams.ErrUnavailable for the client), and are not sent again
// by the Conn: a caller that retries a push sends it again with its
// origin, and the shard refuses a batch it already applied
// (ams.ErrDuplicatePush). A Conn is safe for concurrent use.
type Conn struct {
	cc   grpc.ClientConnInterface
	pool *amspb.BufferPool // the frames it sends
	addr string            // the shard's address for a TCP stream of its own ("": none)
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	tcp  bool // try the TCP stream when opening (cleared, under mu, once it failed)

	ids   atomic.Uint64
	mu    sync.Mutex // guards cur and opening it
	cur   *link      // the open stream, or nil
	calls sync.Pool  // *waiter
}

// NewConn returns a Conn over cc, whose codec must be amspb's
// (amspb.DialOptions); frames are built in buffers of pool. With addr
// set (the shard's plaintext address, the one cc dials) the Conn opens
// its stream on a TCP connection of its own to addr (Magic, then the
// frames), and falls back to a gRPC stream on cc for good the first time
// that fails (a shard that serves TLS, or does not split its port with a
// Mux). Never give addr for a connection that must be encrypted.
func NewConn(cc grpc.ClientConnInterface, pool *amspb.BufferPool, addr string) *Conn {
	c := &Conn{cc: cc, pool: pool, addr: addr, tcp: addr != "", dial: (&net.Dialer{Timeout: tcpDialTimeout}).DialContext}
	c.calls.New = func() any { return &waiter{done: make(chan error, 1)} }
	return c
}

// Frame returns a buffer of n bytes for a request frame, which the caller
// fills (RequestWriter) and gives to Do.
func (c *Conn) Frame(n int) *[]byte { return getFrame(c.pool, n) }

// NextID returns a fresh request id.
func (c *Conn) NextID() uint64 { return c.ids.Add(1) }

// Transport names the transport of the open stream: "tcp" (a TCP
// connection of its own), "grpc", or "" when none is open.
func (c *Conn) Transport() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return ""
	}
	switch c.cur.t.(type) {
	case *tcpTransport:
		return "tcp"
	}
	return "grpc"
}

// link is one open stream.
type link struct {
	t      transport
	sendMu sync.Mutex // serialises sends

	mu      sync.Mutex // guards pending and err
	pending map[uint64]*waiter
	err     error // why the stream broke; no call joins it after
}

// waiter is a call in flight.
type waiter struct {
	sink Sink
	done chan error
}

// Do sends the request frame (a buffer of Pool, with id, which it gives
// up) and waits for its reply, which it hands to sink (nil: the reply of
// a push, which carries nothing). It returns the error the shard failed
// the request with (a gRPC status of the error table), the stream's error,
// or the context's. A call whose context ends before its reply arrives
// returns at once unless the reply is being delivered, which it waits
// for; its reply is dropped. Sending waits on gRPC's flow control, not on
// the context: a shard that does not read holds its worker's sends.
func (c *Conn) Do(ctx context.Context, id uint64, frame *[]byte, sink Sink) error {
	if err := ctx.Err(); err != nil {
		c.pool.Put(frame)
		return err
	}
	l, err := c.link(ctx)
	if err != nil {
		c.pool.Put(frame)
		return err
	}
	w := c.calls.Get().(*waiter)
	w.sink = sink
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		c.pool.Put(frame)
		c.calls.Put(w)
		return l.err
	}
	l.pending[id] = w
	l.mu.Unlock()
	l.sendMu.Lock()
	err = l.t.send(frame, c.pool)
	l.sendMu.Unlock()
	if err != nil {
		c.fail(l, err)
	}
	select {
	case err = <-w.done:
	case <-ctx.Done():
		l.mu.Lock()
		_, waiting := l.pending[id]
		delete(l.pending, id)
		l.mu.Unlock()
		if !waiting { // taken by the receiver: wait for its delivery
			<-w.done
		}
		err = ctx.Err()
	}
	w.sink = nil
	c.calls.Put(w)
	return err
}

// link returns the open stream, opening one (and exchanging hellos) when
// there is none; ctx bounds the opening.
func (c *Conn) link(ctx context.Context) (*link, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil {
		return c.cur, nil
	}
	t, err := c.open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	l := &link{t: t, pending: map[uint64]*waiter{}}
	c.cur = l
	go c.receive(l)
	return l, nil
}

// tcpDialTimeout bounds the dial and the hello of a TCP stream: a shard
// that does not answer in time is reached over gRPC instead.
const tcpDialTimeout = 10 * time.Second

// open opens a transport and exchanges hellos on it: a TCP stream of its
// own while that is to be tried, else a gRPC stream.
func (c *Conn) open(ctx context.Context) (transport, error) {
	if c.tcp {
		t, spoke, err := c.openTCP(ctx)
		if err == nil || !spoke || ctx.Err() != nil {
			return t, err
		}
		c.tcp = false // connected, but not to a stream: gRPC from now on
	}
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	s, err := c.cc.NewStream(sctx, &streamDesc, FullMethod)
	if err != nil {
		cancel()
		return nil, err
	}
	t := &grpcTransport{s: s, cancel: cancel}
	if err := hello(t); err != nil {
		cancel()
		return nil, err
	}
	return t, nil
}

// openTCP dials the shard's address, sends Magic and exchanges hellos.
// A shard that cannot be reached fails it with UNAVAILABLE (the next call
// tries again); connected is true when the connection was made, so that a
// failure is the shard's answer (it serves no TCP stream).
func (c *Conn) openTCP(ctx context.Context) (t transport, connected bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, tcpDialTimeout)
	defer cancel()
	nc, err := c.dial(dctx, "tcp", c.addr)
	if err != nil {
		return nil, false, unavailable(err)
	}
	tt := newTCPTransport(nc, c.pool)
	stop := context.AfterFunc(dctx, tt.close)
	defer stop()
	magic := Magic
	if _, err = nc.Write(magic[:]); err == nil {
		err = hello(tt)
	}
	if err != nil || !stop() {
		tt.close()
		return nil, true, errors.Join(err, dctx.Err())
	}
	return tt, true, nil
}

// hello sends the worker's hello and checks the shard's.
func hello(t transport) error {
	b := Hello()
	err := t.send(&b, nil)
	buf, pool, rerr := t.recv() // after a failed send, the shard's reason
	if rerr != nil {
		err = rerr
	} else if err != nil {
		pool.Put(buf)
	}
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return fmt.Errorf("%w: the shard has no stream data plane (%s): it is an older build; run one build on workers and shards", ams.ErrProtocol, ServiceName)
		}
		return err
	}
	v, err := ParseHello(*buf)
	pool.Put(buf)
	if err != nil {
		return fmt.Errorf("%w: %w", ams.ErrProtocol, err)
	}
	if v != ProtocolVersion {
		return fmt.Errorf("%w: the shard speaks data plane protocol %d, this worker %d: run one build on both", ams.ErrProtocol, v, ProtocolVersion)
	}
	return nil
}

// receive reads l's replies and hands each to its caller until the
// stream breaks, then fails the calls still waiting.
func (c *Conn) receive(l *link) {
	var r Reply
	for {
		buf, pool, err := l.t.recv()
		if err != nil {
			c.fail(l, err)
			return
		}
		if err := ParseReply(*buf, &r); err != nil {
			pool.Put(buf)
			c.fail(l, fmt.Errorf("%w: %w", ams.ErrProtocol, err))
			return
		}
		l.mu.Lock()
		w := l.pending[r.ID]
		delete(l.pending, r.ID)
		l.mu.Unlock()
		if w != nil {
			w.done <- deliver(&r, w.sink)
		}
		pool.Put(buf)
	}
}

// deliver returns the error a reply carries, or hands it to sink.
func deliver(r *Reply, sink Sink) error {
	if r.Err != nil {
		var st spb.Status
		if err := proto.Unmarshal(r.Err, &st); err != nil {
			return fmt.Errorf("%w: a reply's error that is not a status (%q)", ams.ErrProtocol, r.Err)
		}
		return status.ErrorProto(&st)
	}
	if sink == nil {
		return nil
	}
	return sink.Deliver(r)
}

// fail ends l with err: the calls waiting on it get err, and the next
// call opens a new stream.
func (c *Conn) fail(l *link, err error) {
	c.mu.Lock()
	if c.cur == l {
		c.cur = nil
	}
	c.mu.Unlock()
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	waiting := l.pending
	l.pending = map[uint64]*waiter{}
	l.mu.Unlock()
	for _, w := range waiting {
		w.done <- err
	}
	l.t.close()
}

// Close ends the open stream, failing the calls in flight with
// ams.ErrClosed.
func (c *Conn) Close() error {
	c.mu.Lock()
	l := c.cur
	c.mu.Unlock()
	if l != nil {
		c.fail(l, errors.Join(ams.ErrClosed, errors.New("ams stream: the worker closed its stream")))
	}
	return nil
}
