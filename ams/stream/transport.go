package stream

import (
	"bufio"
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

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// transport moves the frames of one stream each way: a gRPC stream, or a
// TCP connection of the stream's own (tcpTransport). send is called by one
// goroutine at a time, recv by one goroutine.
type transport interface {
	// send writes a frame, a buffer of pool (nil: no pool's), which it
	// gives up: it goes back to pool once written.
	send(frame *[]byte, pool *amspb.BufferPool) error
	// recv returns the next frame, in a buffer of the pool it returns;
	// the caller puts it back there when done.
	recv() (*[]byte, *amspb.BufferPool, error)
	// close ends the transport; a recv waiting returns.
	close()
}

// grpcTransport is a gRPC stream (either side's) carrying frames as
// amspb.Raw messages.
type grpcTransport struct {
	s      grpc.Stream
	cancel context.CancelFunc // the client's stream; nil on the server's side
	out    amspb.Raw          // the message being sent (sends are serialised)
	in     amspb.Raw
}

func (g *grpcTransport) send(frame *[]byte, pool *amspb.BufferPool) error {
	g.out = amspb.Raw{Buf: frame, Pool: pool}
	err := g.s.SendMsg(&g.out)
	g.out = amspb.Raw{}
	if errors.Is(err, io.EOF) {
		// The other side ended the stream; its status is what RecvMsg
		// returns, which the receiving side reports.
		return status.Error(codes.Unavailable, "ams stream: the shard ended the stream")
	}
	return err
}

func (g *grpcTransport) recv() (*[]byte, *amspb.BufferPool, error) {
	if err := g.s.RecvMsg(&g.in); err != nil {
		return nil, nil, err
	}
	return g.in.Buf, g.in.Pool, nil
}

func (g *grpcTransport) close() {
	if g.cancel != nil {
		g.cancel()
	}
}

// Magic opens a TCP connection of the stream's own on a shard's port,
// where the shard's listener (Mux) tells it from gRPC's HTTP/2 preface.
var Magic = [8]byte{'X', 'P', 'S', 'D', 'A', 'T', 'A', '1'}

// tcpTransport carries frames on a TCP connection, each one after its
// length (4 bytes, little-endian): no HTTP/2 framing, a frame read from
// the socket straight into a pooled buffer.
type tcpTransport struct {
	conn net.Conn
	r    *bufio.Reader
	pool *amspb.BufferPool // what recv reads into
	hdr  [4]byte           // send's length
	rhdr [4]byte           // recv's length (a field: a local would escape to the heap)
	iov  [2][]byte         // the length and the frame of a send
	bufs net.Buffers       // iov's, consumed by its WriteTo
	once sync.Once
}

// eagerFrame is the most of a frame recv takes a buffer for before the
// frame's bytes arrive: a larger frame's buffer doubles as its bytes are
// read, so a peer that announces a frame of up to ams.MaxMessageBytes and
// sends less (or nothing) makes a shard hold eagerFrame, or twice what it
// sent, on each connection, not the length it announced. Frames of the
// data plane's batches are smaller, read into one buffer as before.
const eagerFrame = 4 << 20

// tcpReadBuffer is the reader's buffer: lengths and small frames come
// through it, a large frame's bytes straight from the socket.
const tcpReadBuffer = 64 << 10

func newTCPTransport(c net.Conn, pool *amspb.BufferPool) *tcpTransport {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &tcpTransport{conn: c, r: bufio.NewReaderSize(c, tcpReadBuffer), pool: pool}
}

func (t *tcpTransport) send(frame *[]byte, pool *amspb.BufferPool) error {
	binary.LittleEndian.PutUint32(t.hdr[:], uint32(len(*frame)))
	t.iov = [2][]byte{t.hdr[:], *frame}
	t.bufs = t.iov[:] // WriteTo consumes the slice, not the array
	_, err := t.bufs.WriteTo(t.conn)
	if pool != nil {
		pool.Put(frame)
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

func (t *tcpTransport) recv() (*[]byte, *amspb.BufferPool, error) {
	if _, err := io.ReadFull(t.r, t.rhdr[:]); err != nil {
		return nil, nil, unavailable(err)
	}
	n := int(binary.LittleEndian.Uint32(t.rhdr[:]))
	if n > ams.MaxMessageBytes {
		return nil, nil, status.Errorf(codes.ResourceExhausted, "ams stream: a frame of %d bytes, more than %d (ams.MaxMessageBytes)", n, ams.MaxMessageBytes)
	}
	// The buffer grows with the bytes read (doubling past eagerFrame),
	// so a frame announced large holds only about what its peer has sent.
	b, got := t.pool.Get(min(n, eagerFrame)), 0
	for {
		if _, err := io.ReadFull(t.r, (*b)[got:]); err != nil {
			t.pool.Put(b)
			return nil, nil, unavailable(err)
		}
		if got = len(*b); got == n {
			return b, t.pool, nil
		}
		more := t.pool.Get(min(n, 2*got))
		copy(*more, *b)
		t.pool.Put(b)
		b = more
	}
}

func (t *tcpTransport) close() { t.once.Do(func() { t.conn.Close() }) }

// unavailable makes a connection's error the status gRPC gives a broken
// stream, so that both transports fail a call alike (ams.ErrUnavailable).
func unavailable(err error) error {
	return status.Error(codes.Unavailable, fmt.Sprintf("ams stream: %v", err))
}
