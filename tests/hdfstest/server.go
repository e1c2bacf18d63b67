package hdfstest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Server is a running namenode and datanode pair. Its methods are safe for
// concurrent use.
type Server struct {
	opts  Options
	nnLn  net.Listener
	dnLn  net.Listener
	nn    *namenode
	store *blockStore
	done  chan struct{} // closed by Close

	wg sync.WaitGroup // accept loops and connection handlers

	mu struct {
		sync.Mutex
		closed bool
		conns  map[net.Conn]struct{} // open connections, closed by Close
	}
}

// Start listens on opts.Addr (namenode) and opts.DatanodeAddr (datanode)
// and serves both until Close.
func Start(opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	dnLn, err := net.Listen("tcp", opts.DatanodeAddr)
	if err != nil {
		return nil, fmt.Errorf("hdfstest: datanode listen: %w", err)
	}
	nnLn, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		dnLn.Close()
		return nil, fmt.Errorf("hdfstest: namenode listen: %w", err)
	}
	tcp := dnLn.Addr().(*net.TCPAddr)
	ip := tcp.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	id := randomHex(16)
	dnID := datanodeID{
		ip:        ip.String(),
		host:      opts.DatanodeHostname,
		port:      uint32(tcp.Port),
		uuid:      fmt.Sprintf("%s-%s-%s-%s-%s", id[:8], id[8:12], id[12:16], id[16:20], id[20:]),
		storageID: "DS-" + randomHex(8),
	}
	poolID := fmt.Sprintf("BP-%d-%s-%d", time.Now().UnixNano()%1e9, dnID.ip, time.Now().UnixMilli())

	s := &Server{opts: opts, nnLn: nnLn, dnLn: dnLn, store: newBlockStore(), done: make(chan struct{})}
	s.mu.conns = map[net.Conn]struct{}{}
	s.nn = newNamenode(&s.opts, s.store, dnID, poolID)
	dn := &datanode{logf: opts.Logf, store: s.store, poolID: poolID}

	s.wg.Add(2)
	go s.serve(nnLn, "namenode", s.nn.serveConn)
	go s.serve(dnLn, "datanode", dn.serveConn)
	return s, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

// NamenodeAddr returns the namenode's address, "host:port", to put in
// hdfs.ClientOptions.Addresses.
func (s *Server) NamenodeAddr() string { return s.nnLn.Addr().String() }

// DatanodeAddr returns the address the datanode listens on.
func (s *Server) DatanodeAddr() string { return s.dnLn.Addr().String() }

// DatanodeXferAddr returns the address the namenode advertises for the
// datanode (what clients dial).
func (s *Server) DatanodeXferAddr() string {
	return net.JoinHostPort(s.nn.dn.ip, strconv.Itoa(int(s.nn.dn.port)))
}

// Close stops both listeners, closes every open connection and waits for
// every goroutine the Server started. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.mu.closed = true
	close(s.done)
	conns := make([]net.Conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	err := errors.Join(s.nnLn.Close(), s.dnLn.Close())
	for _, c := range conns {
		c.Close()
	}
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("hdfstest: close: %w", err)
	}
	return nil
}

// serve accepts connections on ln and runs handle on each in its own
// goroutine, until ln is closed.
func (s *Server) serve(ln net.Listener, name string, handle func(net.Conn)) {
	defer s.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: wait and retry, as
			// net/http does.
			s.opts.Logf("hdfstest: %s accept: %v; retrying in %v", name, err, backoff)
			t := time.NewTimer(backoff)
			select {
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if !s.track(c) {
			c.Close()
			return
		}
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			defer c.Close()
			handle(c)
		}()
	}
}

// track registers c and counts its handler in wg; it fails once Close has
// begun.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.mu.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.conns, c)
}

// Block describes one block of a file.
type Block struct {
	ID       uint64
	GenStamp uint64
	Offset   int64 // of the block's first byte in the file
	Length   int64 // committed length; 0 while the block is being written
}

// Blocks returns the blocks of the file at path, in order. It fails with an
// error matching ErrNotExist if path is not a file.
func (s *Server) Blocks(path string) ([]Block, error) {
	lbs, err := s.nn.fileBlocks(path)
	if err != nil {
		return nil, fmt.Errorf("hdfstest: blocks of %s: %w", path, err)
	}
	out := make([]Block, len(lbs))
	for i, lb := range lbs {
		out[i] = Block{ID: lb.id, GenStamp: lb.genStamp, Offset: int64(lb.offset), Length: int64(lb.numBytes)}
	}
	return out, nil
}

// CorruptBlock flips the bits of one byte in the middle of the stored
// replica of the file's block number index (0-based), leaving the stored
// checksums alone, so that a client reading that byte sees a checksum
// mismatch. It fails with an error matching ErrNotExist if there is no
// such block or replica.
func (s *Server) CorruptBlock(path string, index int) error {
	blocks, err := s.Blocks(path)
	if err != nil {
		return err
	}
	if index < 0 || index >= len(blocks) {
		return fmt.Errorf("hdfstest: corrupt %s: block %d of %d: %w", path, index, len(blocks), ErrNotExist)
	}
	if err := s.store.corrupt(blocks[index].ID); err != nil {
		return fmt.Errorf("hdfstest: corrupt %s block %d: %w", path, index, err)
	}
	return nil
}
