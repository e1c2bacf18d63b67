package pullbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/ams/stream"
)

// Table is the name of the benchmark's table.
const Table = "emb"

// ServerOptions configure Start.
type ServerOptions struct {
	AMSAddr string // shard gRPC listen address (default 127.0.0.1:0)
	TCPAddr string // raw TCP listen address (default 127.0.0.1:0)
	Rows    int    // resident rows (default 1<<20)
	Dim     int    // row width (default 16)
	Stripes int    // shard stripe owners (default: shard's default)
}

// Server is a running shard and TCP responder.
type Server struct {
	sh   *shard.Shard
	gs   *grpc.Server
	amsL net.Listener
	mux  *stream.Mux // the shard's port split between gRPC and the data plane's TCP streams
	tcpL net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	conn map[net.Conn]struct{}
	done bool
}

// Start starts the shard (declaring and filling the table) and the TCP
// responder.
func Start(opts ServerOptions) (*Server, error) {
	if opts.AMSAddr == "" {
		opts.AMSAddr = "127.0.0.1:0"
	}
	if opts.TCPAddr == "" {
		opts.TCPAddr = "127.0.0.1:0"
	}
	if opts.Rows <= 0 {
		opts.Rows = 1 << 20
	}
	if opts.Dim <= 0 {
		opts.Dim = 16
	}
	sh := shard.New(shard.Options{ID: "ams-0", Stripes: opts.Stripes})
	spec := ams.TableSpec{Name: Table, Dim: opts.Dim, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.01}}
	if _, err := sh.Declare(ams.DefaultVersion, []ams.TableSpec{spec}, nil); err != nil {
		sh.Close()
		return nil, fmt.Errorf("pullbench: %w", err)
	}
	const step = 1 << 16
	ids := make([]uint64, step)
	rows := make([]float32, step*opts.Dim)
	for lo := 0; lo < opts.Rows; lo += step {
		n := min(step, opts.Rows-lo)
		for i := range n {
			ids[i] = uint64(lo + i)
		}
		req := []ams.TableRequest{{Table: Table, IDs: ids[:n], Rows: rows[:n*opts.Dim]}}
		if err := sh.Pull(ams.DefaultVersion, req, true); err != nil {
			sh.Close()
			return nil, fmt.Errorf("pullbench: fill: %w", err)
		}
	}
	s := &Server{sh: sh, gs: shard.NewGRPCServer(sh), conn: map[net.Conn]struct{}{}}
	var err error
	if s.amsL, err = net.Listen("tcp", opts.AMSAddr); err != nil {
		sh.Close()
		return nil, fmt.Errorf("pullbench: %w", err)
	}
	if s.tcpL, err = net.Listen("tcp", opts.TCPAddr); err != nil {
		s.amsL.Close()
		sh.Close()
		return nil, fmt.Errorf("pullbench: %w", err)
	}
	s.wg.Add(2)
	s.mux = stream.NewMux(s.amsL, shard.StreamHandler(sh), nil)
	go func() { defer s.wg.Done(); s.gs.Serve(s.mux) }()
	go func() { defer s.wg.Done(); s.acceptTCP() }()
	return s, nil
}

// AMSAddr is the shard's address.
func (s *Server) AMSAddr() string { return s.amsL.Addr().String() }

// TCPAddr is the TCP responder's address.
func (s *Server) TCPAddr() string { return s.tcpL.Addr().String() }

// Close stops both servers and waits for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.done = true
	for c := range s.conn {
		c.Close()
	}
	s.mu.Unlock()
	s.gs.Stop()
	s.mux.Close()
	s.mux.Wait()
	s.tcpL.Close()
	s.wg.Wait()
	return s.sh.Close()
}

func (s *Server) acceptTCP() {
	for {
		c, err := s.tcpL.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conn[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			serveTCP(c)
			s.mu.Lock()
			delete(s.conn, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// maxTCPBytes bounds one request or reply of the TCP protocol.
const maxTCPBytes = 1 << 30

// serveTCP answers requests on c until it fails or closes.
func serveTCP(c net.Conn) {
	var hdr [16]byte
	var req, reply []byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		nreq, nrep := binary.LittleEndian.Uint64(hdr[:8]), binary.LittleEndian.Uint64(hdr[8:])
		if nreq > maxTCPBytes || nrep > maxTCPBytes {
			return
		}
		if uint64(cap(req)) < nreq {
			req = make([]byte, nreq)
		}
		if _, err := io.ReadFull(c, req[:nreq]); err != nil {
			return
		}
		if uint64(cap(reply)) < nrep {
			reply = make([]byte, nrep)
		}
		if _, err := c.Write(reply[:nrep]); err != nil {
			return
		}
	}
}

// RunOptions configure Run.
type RunOptions struct {
	AMSAddr  string        // the server's shard
	TCPAddr  string        // the server's TCP responder
	Rows     int           // the server's resident rows (ids are drawn below it)
	Dim      int           // the server's row width
	IDs      int           // ids per pull (default 50,000)
	InFlight int           // requests in flight (default 1)
	Duration time.Duration // how long each side runs (default 5s)
}

// Result is one side's figure.
type Result struct {
	Path       string  `json:"path"` // "ams" or "tcp"
	InFlight   int     `json:"in_flight"`
	Requests   int     `json:"requests"`
	ReplyBytes int     `json:"reply_bytes"` // per request
	Seconds    float64 `json:"seconds"`
	BytesPerS  float64 `json:"bytes_per_second"`
	MsPerReq   float64 `json:"ms_per_request"` // mean latency
}

func (o *RunOptions) defaults() {
	if o.Rows <= 0 {
		o.Rows = 1 << 20
	}
	if o.Dim <= 0 {
		o.Dim = 16
	}
	if o.IDs <= 0 {
		o.IDs = 50000
	}
	if o.InFlight <= 0 {
		o.InFlight = 1
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
}

// RunAMS pulls o.IDs random rows per request from the shard, o.InFlight
// requests at a time over one client (one connection).
func RunAMS(ctx context.Context, o RunOptions) (Result, error) {
	o.defaults()
	m, err := ams.NewShardMap(ams.DefaultVersion, 64, []string{"ams-0"}, []string{o.AMSAddr})
	if err != nil {
		return Result{}, fmt.Errorf("pullbench: %w", err)
	}
	c, err := client.New(m)
	if err != nil {
		return Result{}, fmt.Errorf("pullbench: %w", err)
	}
	defer c.Close()
	if err := c.Declare(ctx, []ams.TableSpec{{Name: Table, Dim: o.Dim, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.01}}}, nil); err != nil {
		return Result{}, fmt.Errorf("pullbench: %w (was the server started with the same -dim?)", err)
	}
	one := func(rng *rand.Rand, ids []uint64, rows []float32) error {
		for i := range ids {
			ids[i] = rng.Uint64N(uint64(o.Rows))
		}
		return c.Pull(ctx, []client.Table{{Name: Table, IDs: ids, Rows: rows}}, nil, false)
	}
	return drive(o, "ams", o.IDs*o.Dim*4, func(g int) (func() error, error) {
		rng := rand.New(rand.NewPCG(uint64(g), 7))
		ids, rows := make([]uint64, o.IDs), make([]float32, o.IDs*o.Dim)
		if err := one(rng, ids, rows); err != nil { // warm the connection and the stream
			return nil, err
		}
		return func() error { return one(rng, ids, rows) }, nil
	})
}

// drive runs o.InFlight goroutines calling their request function until
// o.Duration has passed, and sums what they did.
func drive(o RunOptions, path string, replyBytes int, mk func(g int) (func() error, error)) (Result, error) {
	fns := make([]func() error, o.InFlight)
	for g := range fns {
		f, err := mk(g)
		if err != nil {
			return Result{}, fmt.Errorf("pullbench: %s: %w", path, err)
		}
		fns[g] = f
	}
	var mu sync.Mutex
	var firstErr error
	reqs := 0
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(o.Duration)
	for _, f := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for time.Now().Before(deadline) {
				if err := f(); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				n++
			}
			mu.Lock()
			reqs += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return Result{}, fmt.Errorf("pullbench: %s: %w", path, firstErr)
	}
	return Result{Path: path, InFlight: o.InFlight, Requests: reqs, ReplyBytes: replyBytes, Seconds: secs,
		BytesPerS: float64(reqs) * float64(replyBytes) / secs,
		MsPerReq:  secs * 1000 * float64(o.InFlight) / float64(max(reqs, 1))}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// RunTCP asks the TCP responder for replies of the pull's size with
// requests of the pull's request size (8 bytes per id), o.InFlight
// pipelined on one connection.
func RunTCP(ctx context.Context, o RunOptions) (Result, error) {
	o.defaults()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", o.TCPAddr)
	if err != nil {
		return Result{}, fmt.Errorf("pullbench: tcp: %w", err)
	}
	defer c.Close()
	nreq, nrep := o.IDs*8, o.IDs*o.Dim*4
	msg := make([]byte, 16+nreq)
	binary.LittleEndian.PutUint64(msg[:8], uint64(nreq))
	binary.LittleEndian.PutUint64(msg[8:16], uint64(nrep))
	// A writer sends while fewer than InFlight replies are outstanding; the
	// caller's goroutine reads the replies in order.
	slots := make(chan struct{}, o.InFlight)
	stop := make(chan struct{})
	werr := make(chan error, 1)
	sent := 0
	go func() {
		defer close(werr)
		for {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			if _, err := c.Write(msg); err != nil {
				werr <- err
				return
			}
			sent++
		}
	}()
	buf := make([]byte, nrep)
	start := time.Now()
	deadline := start.Add(o.Duration)
	got := 0
	var rerr error
	for time.Now().Before(deadline) {
		if _, rerr = io.ReadFull(c, buf); rerr != nil {
			break
		}
		got++
		<-slots
	}
	close(stop)
	err = <-werr                    // the writer has stopped: sent is final
	for rerr == nil && got < sent { // drain what is in flight
		if _, rerr = io.ReadFull(c, buf); rerr == nil {
			got++
		}
	}
	secs := time.Since(start).Seconds()
	if err = errors.Join(err, rerr); err != nil {
		return Result{}, fmt.Errorf("pullbench: tcp: %w", err)
	}
	return Result{Path: "tcp", InFlight: o.InFlight, Requests: got, ReplyBytes: nrep, Seconds: secs,
		BytesPerS: float64(got) * float64(nrep) / secs,
		MsPerReq:  secs * 1000 * float64(o.InFlight) / float64(max(got, 1))}, nil
}
