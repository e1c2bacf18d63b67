package netdelay

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Relay forwards connections accepted on a listener to Target with Delay.
type Relay struct {
	Target string
	Delay  time.Duration

	bytes atomic.Int64 // relayed, both ways

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	lis    []net.Listener
	closed bool
	wg     sync.WaitGroup
}

// Serve relays the connections of lis until Close.
func (r *Relay) Serve(lis net.Listener) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return lis.Close()
	}
	r.lis = append(r.lis, lis)
	r.mu.Unlock()
	for {
		c, err := lis.Accept()
		if err != nil {
			r.wg.Wait()
			if r.isClosed() {
				return nil
			}
			return err
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.relay(c)
		}()
	}
}

func (r *Relay) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Bytes returns the bytes relayed so far, both ways.
func (r *Relay) Bytes() int64 { return r.bytes.Load() }

// Close ends the relay and every connection it holds.
func (r *Relay) Close() {
	r.mu.Lock()
	r.closed = true
	for _, l := range r.lis {
		l.Close()
	}
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
}

func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	if r.conns == nil {
		r.conns = map[net.Conn]struct{}{}
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, c)
	c.Close()
}

// relay joins in to a new connection to Target.
func (r *Relay) relay(in net.Conn) {
	if !r.track(in) {
		return
	}
	defer r.untrack(in)
	var d net.Dialer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	out, err := d.DialContext(ctx, "tcp", r.Target)
	cancel()
	if err != nil || !r.track(out) {
		return
	}
	defer r.untrack(out)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.pipe(out, in) }()
	go func() { defer wg.Done(); r.pipe(in, out) }()
	wg.Wait()
}

// chunk is bytes read at a time.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst, each chunk Delay after it was read.
func (r *Relay) pipe(dst, src net.Conn) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b: b[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var err error
	for c := range q {
		if err != nil {
			continue // drain the reader
		}
		time.Sleep(time.Until(c.at.Add(r.Delay)))
		var n int
		n, err = dst.Write(c.b)
		r.bytes.Add(int64(n))
	}
	if tc, ok := dst.(*net.TCPConn); ok && err == nil {
		tc.CloseWrite()
	} else {
		dst.Close()
	}
}
