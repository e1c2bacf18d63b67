package netdelay

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRelayDelaysAndKeepsBytes: an echo server behind the relay returns
// every byte in order, no sooner than twice the delay after it was sent
// (once each way), and Close ends everything.
func TestRelayDelaysAndKeepsBytes(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const delay = 30 * time.Millisecond
	r := &Relay{Target: echo.Addr().String(), Delay: delay}
	served := make(chan error, 1)
	go func() { served <- r.Serve(lis) }()
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 1<<20)
	for i := range msg {
		msg[i] = byte(rand.IntN(256))
	}
	start := time.Now()
	go func() { c.Write(msg); c.(*net.TCPConn).CloseWrite() }()
	got, err := io.ReadAll(c)
	took := time.Since(start)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo through the relay: %d bytes (want %d), %v", len(got), len(msg), err)
	}
	if b := r.Bytes(); b != 2*int64(len(msg)) {
		t.Fatalf("Bytes() = %d after echoing %d bytes", b, len(msg))
	}
	if took < 2*delay {
		t.Fatalf("a round trip took %v, under twice the delay %v", took, delay)
	}
	c.Close()
	r.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
}
