package membership

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ProbeTimeout bounds the probe Dial makes of the endpoints after its
// first read failed (see Dial), for all endpoints together.
const ProbeTimeout = 2 * time.Second

// ErrTLSMismatch is returned (wrapped) by Dial when etcd does not answer
// because the client and etcd disagree on TLS: a plaintext client (no
// -tls-* flags) at an etcd that speaks TLS, or a TLS client at an etcd
// that speaks plaintext. The error names the endpoints and what to do.
var ErrTLSMismatch = errors.New("membership: TLS mismatch with etcd")

// h2Preface is what an HTTP/2 client sends first without TLS, as gRPC
// does to a plaintext etcd: the connection preface and an empty SETTINGS
// frame. A plaintext HTTP/2 server answers with a SETTINGS frame.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// h2Settings is the frame type of an HTTP/2 SETTINGS frame.
const h2Settings = 0x4

// tlsMismatch probes endpoints (at most ProbeTimeout, not after ctx ends)
// for the protocol the client does not speak: with clientTLS false,
// whether a TLS handshake is answered; with it true, whether a plaintext
// HTTP/2 preface is. It returns an error wrapping ErrTLSMismatch naming
// those that answer it, or nil when none does (nothing listens there, or
// the client's protocol is the server's and something else failed).
func tlsMismatch(ctx context.Context, endpoints []string, clientTLS bool) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	probe := speaksTLS
	if clientTLS {
		probe = speaksPlaintextH2
	}
	answered := make([]bool, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		addr, ok := tcpAddr(ep)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answered[i] = probe(ctx, addr)
		}()
	}
	wg.Wait()
	var addrs []string
	for i, a := range answered {
		if a {
			addrs = append(addrs, endpoints[i])
		}
	}
	switch {
	case len(addrs) == 0:
		return nil
	case clientTLS:
		return fmt.Errorf("%w: etcd at %s speaks plaintext, not TLS: drop -tls-ca, -tls-cert and -tls-key, or serve etcd with TLS",
			ErrTLSMismatch, strings.Join(addrs, ","))
	default:
		return fmt.Errorf("%w: etcd at %s speaks TLS: give -tls-ca, -tls-cert and -tls-key",
			ErrTLSMismatch, strings.Join(addrs, ","))
	}
}

// tcpAddr is the host:port of an etcd endpoint ("host:port",
// "http://host:port", "https://host:port"); false for another scheme
// (unix sockets).
func tcpAddr(ep string) (string, bool) {
	if !strings.Contains(ep, "://") {
		return ep, true
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return u.Host, true
}

// errProbed ends a probe's TLS handshake once the server has shown its
// certificate: nothing more is needed, nor sent.
var errProbed = errors.New("membership: probe: the server speaks TLS")

// speaksTLS reports whether the server at addr answers a TLS handshake:
// it shows a certificate (not verified: the probe only detects TLS and
// sends nothing over it), completes the handshake or sends a TLS alert.
func speaksTLS(ctx context.Context, addr string) bool {
	conn, err := dialProbe(ctx, addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	var shown bool
	tc := tls.Client(conn, &tls.Config{ //nolint:gosec // detection only: nothing is sent over the connection
		InsecureSkipVerify: true,
		VerifyConnection: func(tls.ConnectionState) error {
			shown = true
			return errProbed
		},
	})
	err = tc.HandshakeContext(ctx)
	var alert tls.AlertError
	return shown || err == nil || errors.As(err, &alert)
}

// speaksPlaintextH2 reports whether the server at addr answers a
// plaintext HTTP/2 preface with a SETTINGS frame, as a plaintext etcd
// does (a TLS server closes the connection: that is no TLS record).
func speaksPlaintextH2(ctx context.Context, addr string) bool {
	conn, err := dialProbe(ctx, addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, h2Preface); err != nil {
		return false
	}
	var hdr [9]byte // length (3), type, flags, stream id (4)
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return false
	}
	return hdr[3] == h2Settings
}

// dialProbe opens a TCP connection to addr whose reads and writes end
// with ctx's deadline.
func dialProbe(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl) //nolint:errcheck // a failed probe is a "no"
	}
	return conn, nil
}
