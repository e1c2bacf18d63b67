package stream

import (
	"context"
	"io"
	"net"
	"sync"
	"time"

	"github.com/xdlgo/xps/ams/amspb"
)

// sniffTimeout bounds the wait for a new connection's first bytes: a
// connection that sends fewer than len(Magic) bytes in time goes to gRPC
// with what it sent.
const sniffTimeout = 10 * time.Second

// Mux splits a shard's plaintext listener between gRPC and the stream's
// own TCP connections: a connection that opens with Magic is served as a
// stream (ServeConn, on its own goroutine), every other one is handed to
// gRPC, which serves the Mux as its net.Listener, with the bytes read
// from it first. So the stream needs no port of its own, and a worker
// finds it at the address it dials for gRPC. A TLS server has no Mux:
// its workers keep the stream on gRPC, encrypted.
type Mux struct {
	lis   net.Listener
	h     Handler
	pool  *amspb.BufferPool
	conns chan net.Conn // for gRPC
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup // the accepting loop, the sniffing and the streams being served
	once  sync.Once
}

// NewMux starts accepting on lis: streams are served with h, their
// frames in buffers of p (nil: a pool of its own).
func NewMux(lis net.Listener, h Handler, p *amspb.BufferPool) *Mux {
	if p == nil {
		p = &amspb.BufferPool{}
	}
	ctx, stop := context.WithCancel(context.Background())
	m := &Mux{lis: lis, h: h, pool: p, conns: make(chan net.Conn), ctx: ctx, stop: stop}
	m.wg.Add(1)
	go m.run()
	return m
}

func (m *Mux) run() {
	defer m.wg.Done()
	for {
		c, err := m.lis.Accept()
		if err != nil {
			m.Close()
			return
		}
		m.wg.Add(1)
		go m.sniff(c)
	}
}

// sniff reads a connection's first bytes and serves it as a stream or
// hands it to gRPC.
func (m *Mux) sniff(c net.Conn) {
	defer m.wg.Done()
	var b [len(Magic)]byte
	c.SetReadDeadline(time.Now().Add(sniffTimeout))
	n, err := io.ReadFull(c, b[:])
	c.SetReadDeadline(time.Time{})
	if err == nil && b == Magic {
		ServeConn(m.ctx, c, m.h, m.pool)
		return
	}
	select {
	case m.conns <- &sniffed{Conn: c, first: b[:n]}:
	case <-m.ctx.Done():
		c.Close()
	}
}

// Accept returns the next connection for gRPC.
func (m *Mux) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Close closes the listener and ends every stream connection (through
// their context); it does not wait for them: Wait does. gRPC's Stop calls
// it; so may the owner.
func (m *Mux) Close() error {
	var err error
	m.once.Do(func() {
		m.stop()
		err = m.lis.Close()
	})
	return err
}

// Wait returns once the Mux is closed and every stream it served has
// returned: a shard closes after it.
func (m *Mux) Wait() {
	<-m.ctx.Done()
	m.wg.Wait()
}

// Addr is the listener's address.
func (m *Mux) Addr() net.Addr { return m.lis.Addr() }

// sniffed is a connection whose first bytes were read by the Mux: Read
// returns them first.
type sniffed struct {
	net.Conn
	first []byte
}

func (s *sniffed) Read(p []byte) (int, error) {
	if len(s.first) > 0 {
		n := copy(p, s.first)
		s.first = s.first[n:]
		return n, nil
	}
	return s.Conn.Read(p)
}
