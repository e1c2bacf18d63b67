package stream_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/stream"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo is a Handler whose pull answers each id with dim values id+k, and
// whose push records its gradients' sum; a pull of a table named "block"
// waits for release first, and one named "fail" fails.
type echo struct {
	dim     int
	release chan struct{}
	started chan struct{}
	mu      sync.Mutex
	pushed  float64
}

func (e *echo) Pull(ctx context.Context, q *stream.Request, w *stream.ReplyWriter) error {
	values := make([]int, len(q.Tables))
	for i, t := range q.Tables {
		switch t.Table {
		case "block":
			e.started <- struct{}{}
			<-e.release
		case "fail":
			return errors.Join(ams.ErrUnknownTable, errors.New(`"fail"`))
		}
		values[i] = len(t.IDs) * e.dim
	}
	rows, _ := w.Begin(values, nil)
	for i, t := range q.Tables {
		for k, id := range t.IDs {
			for d := range e.dim {
				rows[i][k*e.dim+d] = float32(id) + float32(d)
			}
		}
	}
	return nil
}

func (e *echo) Push(ctx context.Context, q *stream.Request) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range q.Tables {
		for _, g := range t.Rows {
			e.pushed += float64(g)
		}
	}
	return nil
}

// proxy forwards TCP connections to target and can cut them all, as a
// network that resets them.
type proxy struct {
	lis    net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { lis.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(s, c); s.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, s); c.Close() }()
	}
}

// cut closes every connection through the proxy.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// serve serves h (nil: no stream service, as an older build) and what
// register adds over gRPC on loopback behind a proxy, with a Mux for TCP
// streams when tcp is set, and returns a Conn to it that tries a TCP
// stream when tcp is set.
func serve(t *testing.T, h stream.Handler, register func(*grpc.Server), tcp bool) (*stream.Conn, *proxy) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &amspb.BufferPool{}
	gs := grpc.NewServer(amspb.ServerOptions(p)...)
	if h != nil {
		stream.Register(gs, h, nil)
	}
	if register != nil {
		register(gs)
	}
	var gl net.Listener = lis
	if tcp && h != nil {
		m := stream.NewMux(lis, h, nil)
		gl = m
		t.Cleanup(m.Wait)
	}
	go gs.Serve(gl)
	t.Cleanup(gs.Stop)
	px := newProxy(t, lis.Addr().String())
	cc, err := grpc.NewClient(px.lis.Addr().String(), append(amspb.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	addr := ""
	if tcp {
		addr = px.lis.Addr().String()
	}
	c := stream.NewConn(cc, &amspb.BufferPool{}, addr)
	t.Cleanup(func() { c.Close(); cc.Close() })
	return c, px
}

// eachTransport runs f over a gRPC stream and over a TCP stream, and
// checks that each ran on its transport.
func eachTransport(t *testing.T, f func(t *testing.T, tcp bool) *stream.Conn) {
	for _, tcp := range []bool{false, true} {
		name := map[bool]string{false: "grpc", true: "tcp"}[tcp]
		t.Run(name, func(t *testing.T) {
			if c := f(t, tcp); c.Transport() != name && c.Transport() != "" {
				t.Fatalf("the stream ran on %q", c.Transport())
			}
		})
	}
}

func serveEcho(t *testing.T, e *echo, tcp bool) (*stream.Conn, *proxy) {
	return serve(t, e, nil, tcp)
}

// rowsSink copies a pull's first table's rows.
type rowsSink struct{ rows []float32 }

func (s *rowsSink) Deliver(r *stream.Reply) error {
	var err error
	s.rows, err = ams.UnpackFloats(s.rows[:0], r.Rows[0])
	return err
}

// pull pulls ids of table over c into sink.
func pull(ctx context.Context, c *stream.Conn, table string, ids []uint64, sink *rowsSink) error {
	h := stream.RequestHeader{Kind: stream.KindPull, ID: c.NextID(), Version: 1}
	tm := []stream.TableMeta{{Name: table, IDs: len(ids)}}
	buf := c.Frame(stream.RequestSize(&h, tm, nil))
	var w stream.RequestWriter
	if err := w.Begin(*buf, &h, tm, nil); err != nil {
		return err
	}
	w.Table(ids, 0)
	return c.Do(ctx, h.ID, buf, sink)
}

// TestConcurrentCalls: calls of many goroutines share one stream, and each
// gets its own reply (the replies' ids route them).
func TestConcurrentCalls(t *testing.T) { eachTransport(t, testConcurrentCalls) }

func testConcurrentCalls(t *testing.T, tcp bool) *stream.Conn {
	e := &echo{dim: 3}
	c, _ := serveEcho(t, e, tcp)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sink rowsSink
			for i := range 200 {
				ids := []uint64{uint64(g*1000 + i), uint64(g*1000 + i + 7)}
				if err := pull(ctx, c, "emb", ids, &sink); err != nil {
					errs <- err
					return
				}
				for k, id := range ids {
					if sink.rows[k*3+2] != float32(id)+2 {
						errs <- errors.New("a reply of another call")
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return c
}

// TestErrorReply: a request the shard fails gets the shard's error back
// as a status of the error table, and the stream goes on.
func TestErrorReply(t *testing.T) { eachTransport(t, testErrorReply) }

func testErrorReply(t *testing.T, tcp bool) *stream.Conn {
	c, _ := serveEcho(t, &echo{dim: 1}, tcp)
	var sink rowsSink
	err := pull(context.Background(), c, "fail", []uint64{1}, &sink)
	if !errors.Is(amspb.FromStatus(err), ams.ErrUnknownTable) {
		t.Fatalf("pull of a failing table: %v", err)
	}
	if err := pull(context.Background(), c, "emb", []uint64{4}, &sink); err != nil || sink.rows[0] != 4 {
		t.Fatalf("the pull after it: %v %v", sink.rows, err)
	}
	return c
}

// TestResetFailsCallsInFlight: a connection reset by the network fails
// the calls in flight with UNAVAILABLE (none is sent again by the Conn),
// and a later call opens a new stream once gRPC has reconnected.
func TestResetFailsCallsInFlight(t *testing.T) { eachTransport(t, testResetFailsCallsInFlight) }

func testResetFailsCallsInFlight(t *testing.T, tcp bool) *stream.Conn {
	e := &echo{dim: 1, release: make(chan struct{}), started: make(chan struct{}, 1)}
	c, px := serveEcho(t, e, tcp)
	ctx := context.Background()
	var sink rowsSink
	if err := pull(ctx, c, "emb", []uint64{1}, &sink); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pull(ctx, c, "block", []uint64{2}, &rowsSink{}) }()
	<-e.started
	px.cut()
	err := <-done
	close(e.release)
	if status.Code(err) != codes.Unavailable || !errors.Is(amspb.FromStatus(err), ams.ErrUnavailable) {
		t.Fatalf("a call in flight on a reset stream: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, "a new stream after the reset", func() bool {
		err = pull(ctx, c, "emb", []uint64{5}, &sink)
		if err != nil && status.Code(err) != codes.Unavailable {
			t.Fatalf("a call after the reset: %v", err)
		}
		return err == nil
	})
	if err != nil || sink.rows[0] != 5 {
		t.Fatalf("no new stream after the reset: %v", err)
	}
	return c
}

// TestCancelWhileWaiting: a call whose context ends returns the context's
// error; its reply, when it comes, is dropped, and the stream goes on.
func TestCancelWhileWaiting(t *testing.T) { eachTransport(t, testCancelWhileWaiting) }

func testCancelWhileWaiting(t *testing.T, tcp bool) *stream.Conn {
	e := &echo{dim: 1, release: make(chan struct{}), started: make(chan struct{}, 1)}
	c, _ := serveEcho(t, e, tcp)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sink := &rowsSink{}
	go func() { done <- pull(ctx, c, "block", []uint64{2}, sink) }()
	<-e.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled call: %v", err)
	}
	close(e.release)
	var next rowsSink
	if err := pull(context.Background(), c, "emb", []uint64{9}, &next); err != nil || next.rows[0] != 9 {
		t.Fatalf("the call after: %v", err)
	}
	if sink.rows != nil {
		t.Fatalf("a canceled call's sink got %v", sink.rows)
	}
	return c
}

// TestOlderShard: a shard without the stream service (an older build)
// fails the first call with ams.ErrProtocol, naming the cause.
func TestOlderShard(t *testing.T) {
	c, _ := serve(t, nil, func(gs *grpc.Server) { amspb.RegisterAMSServer(gs, amspb.UnimplementedAMSServer{}) }, true)
	err := pull(context.Background(), c, "emb", []uint64{1}, &rowsSink{})
	if !errors.Is(err, ams.ErrProtocol) {
		t.Fatalf("a pull from an older shard: %v", err)
	}
}

// TestOtherVersion: a shard answers a hello of another protocol version
// with ams.ErrProtocol, as a worker does a shard's.
func TestOtherVersion(t *testing.T) {
	// The shard's side: a hello of version 99.
	_, px := serveEcho(t, &echo{dim: 1}, false)
	cc, err := grpc.NewClient(px.lis.Addr().String(), append(amspb.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, stream.FullMethod)
	if err != nil {
		t.Fatal(err)
	}
	hello := stream.Hello()
	hello[8] = 99
	if err := s.SendMsg(&amspb.Raw{Buf: &hello}); err != nil {
		t.Fatal(err)
	}
	var in amspb.Raw
	if err := s.RecvMsg(&in); err != nil { // the shard's hello, to name its version
		t.Fatal(err)
	}
	if v, err := stream.ParseHello(*in.Buf); err != nil || v != stream.ProtocolVersion {
		t.Fatalf("the shard's hello: %d, %v", v, err)
	}
	err = s.RecvMsg(&in)
	if !errors.Is(amspb.FromStatus(err), ams.ErrProtocol) {
		t.Fatalf("a hello of version 99: %v", err)
	}
	// The worker's side: a shard that answers with version 99.
	w, _ := serve(t, nil, func(gs *grpc.Server) {
		gs.RegisterService(&grpc.ServiceDesc{ServiceName: stream.ServiceName, HandlerType: (*any)(nil),
			Streams: []grpc.StreamDesc{{StreamName: "Stream", ServerStreams: true, ClientStreams: true,
				Handler: func(_ any, ss grpc.ServerStream) error {
					var in amspb.Raw
					if err := ss.RecvMsg(&in); err != nil {
						return err
					}
					b := stream.Hello()
					b[8] = 99
					return ss.SendMsg(&amspb.Raw{Buf: &b})
				}}}}, struct{}{})
	}, false)
	if err := pull(context.Background(), w, "emb", []uint64{1}, &rowsSink{}); !errors.Is(err, ams.ErrProtocol) {
		t.Fatalf("a pull from a shard of version 99: %v", err)
	}
}

// TestFallsBackToGRPC: a worker that tries a TCP stream on a shard that
// serves none (no Mux: a TLS shard, or one in a test) goes on over gRPC.
func TestFallsBackToGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(amspb.ServerOptions(&amspb.BufferPool{})...)
	stream.Register(gs, &echo{dim: 2}, nil)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), append(amspb.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	c := stream.NewConn(cc, &amspb.BufferPool{}, lis.Addr().String())
	t.Cleanup(func() { c.Close(); cc.Close() })
	var sink rowsSink
	if err := pull(context.Background(), c, "emb", []uint64{3}, &sink); err != nil || sink.rows[1] != 4 {
		t.Fatalf("a pull: %v %v", sink.rows, err)
	}
	if c.Transport() != "grpc" {
		t.Fatalf("the stream ran on %q", c.Transport())
	}
}

// TestMuxSplitsThePort: through one Mux, a TCP stream is served, gRPC
// calls reach the gRPC server, and a connection that sends less than
// Magic and hangs up leaves both working.
func TestMuxSplitsThePort(t *testing.T) {
	c, px := serve(t, &echo{dim: 1}, func(gs *grpc.Server) { amspb.RegisterAMSServer(gs, amspb.UnimplementedAMSServer{}) }, true)
	short, err := net.Dial("tcp", px.lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	short.Write([]byte("XPS"))
	short.Close()
	var sink rowsSink
	if err := pull(context.Background(), c, "emb", []uint64{6}, &sink); err != nil || sink.rows[0] != 6 || c.Transport() != "tcp" {
		t.Fatalf("a pull through the Mux: %v %v on %q", sink.rows, err, c.Transport())
	}
	cc, err := grpc.NewClient(px.lis.Addr().String(), append(amspb.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, err = amspb.NewAMSClient(cc).Stats(context.Background(), &amspb.StatsRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("a gRPC call through the Mux: %v, want the server's UNIMPLEMENTED", err)
	}
}
