package membership

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/tlstest"
)

// listen accepts on a loopback port until the test ends, calling serve
// with each connection in turn, and returns the address. Connections are
// closed when the test ends.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn // the accepting goroutine's until done
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			serve(c)
		}
	}()
	return l.Addr().String()
}

// mute is a server that accepts connections and says nothing.
func mute(t *testing.T) string { return listen(t, func(net.Conn) {}) }

// tlsServer is a listener serving mutual TLS 1.3 with an etcd
// certificate, as etcd with client-cert-auth does: it completes
// handshakes and closes.
func tlsServer(t *testing.T) string {
	cfg := tlstest.NewCA(t, "dev").Config(t, tlsconf.RoleEtcd).Server()
	return listen(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		tls.Server(c, cfg).Handshake() //nolint:errcheck // the client ends it
		c.Close()
	})
}

// h2cServer is a plaintext gRPC server (HTTP/2 without TLS), as a
// plaintext etcd is.
func h2cServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(l) }() //nolint:errcheck // ends with Stop
	t.Cleanup(func() { srv.Stop(); <-done })
	return l.Addr().String()
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestProbe: the probes tell a TLS server, a plaintext HTTP/2 server and
// a port nothing listens on apart, and a server that says nothing holds
// them until their context's deadline only.
func TestProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tlsAt, h2At, nobody, silent := tlsServer(t), h2cServer(t), freeAddr(t), mute(t)
	for _, tc := range []struct {
		addr         string
		tls, plainH2 bool
	}{
		{tlsAt, true, false},
		{h2At, false, true},
		{nobody, false, false},
	} {
		if got := speaksTLS(ctx, tc.addr); got != tc.tls {
			t.Errorf("speaksTLS(%s) = %v, want %v", tc.addr, got, tc.tls)
		}
		if got := speaksPlaintextH2(ctx, tc.addr); got != tc.plainH2 {
			t.Errorf("speaksPlaintextH2(%s) = %v, want %v", tc.addr, got, tc.plainH2)
		}
	}
	// A server that never answers holds a probe until its deadline only.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	begun := time.Now()
	if speaksTLS(short, silent) || speaksPlaintextH2(short, silent) {
		t.Error("a mute server answered")
	}
	if took := time.Since(begun); took > 2*time.Second {
		t.Errorf("probing a mute server took %v, want its deadline", took)
	}
}

// TestTLSMismatchMessage: tlsMismatch names the endpoints that speak the
// other protocol and the flags to give or drop, nothing for a port where
// nothing listens, and ends within ProbeTimeout.
func TestTLSMismatchMessage(t *testing.T) {
	ctx := context.Background()
	tlsAt, h2At, nobody, silent := tlsServer(t), h2cServer(t), freeAddr(t), mute(t)
	err := tlsMismatch(ctx, []string{nobody, "https://" + tlsAt}, false)
	if want := "membership: TLS mismatch with etcd: etcd at https://" + tlsAt + " speaks TLS: give -tls-ca, -tls-cert and -tls-key"; !errors.Is(err, ErrTLSMismatch) || err.Error() != want {
		t.Errorf("plaintext client at TLS: %v, want %q", err, want)
	}
	err = tlsMismatch(ctx, []string{h2At}, true)
	if !errors.Is(err, ErrTLSMismatch) || !strings.Contains(err.Error(), "etcd at "+h2At+" speaks plaintext, not TLS: drop -tls-ca, -tls-cert and -tls-key") {
		t.Errorf("TLS client at plaintext: %v", err)
	}
	for _, clientTLS := range []bool{false, true} {
		begun := time.Now()
		if err := tlsMismatch(ctx, []string{nobody, silent, "unix:///tmp/x.sock"}, clientTLS); err != nil {
			t.Errorf("nothing or a mute server (client TLS %v): %v, want nil", clientTLS, err)
		}
		if took := time.Since(begun); took > ProbeTimeout+time.Second {
			t.Errorf("probing a mute server took %v, want at most ProbeTimeout %v", took, ProbeTimeout)
		}
	}
	if err := tlsMismatch(ctx, []string{h2At}, false); err != nil {
		t.Errorf("plaintext client at plaintext: %v, want nil", err)
	}
	if err := tlsMismatch(ctx, []string{tlsAt}, true); err != nil {
		t.Errorf("TLS client at TLS: %v, want nil", err)
	}
}
