package stream

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// frameHeader is a TCP frame's length prefix.
func frameHeader(n int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }

// TestTCPFrameHoldsWhatArrived: a peer that announces a frame of nearly
// ams.MaxMessageBytes and sends 1 KiB of it makes the reader allocate
// about eagerFrame, not the length announced (before, the whole length:
// a header of 5 bytes per connection held 160 MB of a shard); the frame
// fails when the peer goes.
func TestTCPFrameHoldsWhatArrived(t *testing.T) {
	server, peer := net.Pipe()
	tr := newTCPTransport(server, &amspb.BufferPool{})
	defer tr.close()
	done := make(chan error, 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		_, _, err := tr.recv()
		done <- err
	}()
	// net.Pipe is synchronous: each Write returns once the reader took it.
	if _, err := peer.Write(frameHeader(ams.MaxMessageBytes - 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Write(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*eagerFrame {
		t.Errorf("a frame announced at %d bytes with 1 KiB sent allocated %d bytes, want at most %d", ams.MaxMessageBytes-1, got, 2*eagerFrame)
	}
	peer.Close()
	if err := <-done; err == nil {
		t.Fatal("a frame cut short was read")
	}
}

// TestTCPLargeFrameRoundTrip: frames around and past eagerFrame, their
// buffers grown as they are read, arrive whole and in order.
func TestTCPLargeFrameRoundTrip(t *testing.T) {
	server, peer := net.Pipe()
	pool := &amspb.BufferPool{}
	tr, out := newTCPTransport(server, pool), newTCPTransport(peer, nil)
	defer tr.close()
	defer out.close()
	sizes := []int{0, 1, eagerFrame - 1, eagerFrame, eagerFrame + 1, 3*eagerFrame + 12345}
	frames := make([][]byte, len(sizes))
	for i, n := range sizes {
		frames[i] = make([]byte, n)
		for j := range frames[i] {
			frames[i][j] = byte(rand.Uint32())
		}
	}
	go func() {
		for _, f := range frames {
			b := append([]byte(nil), f...)
			if err := out.send(&b, nil); err != nil {
				return
			}
		}
	}()
	for i, want := range frames {
		b, p, err := tr.recv()
		if err != nil {
			t.Fatalf("frame %d (%d bytes): %v", i, sizes[i], err)
		}
		if !bytes.Equal(*b, want) {
			t.Fatalf("frame %d (%d bytes) arrived as %d different bytes", i, sizes[i], len(*b))
		}
		p.Put(b)
	}
}
