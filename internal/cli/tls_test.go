package cli

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/tlstest"
)

// TestTLSFlags: -tls-ca, -tls-cert and -tls-key load the process's
// identity together; none leaves TLS off; some but not all is an error
// naming the three flags.
func TestTLSFlags(t *testing.T) {
	f := tlstest.NewCA(t, "dev").Issue(t, tlsconf.RoleWorker)
	start := func(args ...string) (*Proc, error) {
		var p Proc
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		p.Bind(fs, "info")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := p.Start(io.Discard, "test", "")
		t.Cleanup(p.Close)
		return &p, err
	}
	p, err := start("-tls-ca", f.CA, "-tls-cert", f.Cert, "-tls-key", f.Key)
	if err != nil || p.TLS == nil || p.TLS.Role != tlsconf.RoleWorker {
		t.Fatalf("all three flags: %+v, %v; want the worker's identity", p.TLS, err)
	}
	if p, err := start(); err != nil || p.TLS != nil || p.TLS.Client() != nil {
		t.Fatalf("no flag: %+v, %v; want TLS off", p.TLS, err)
	}
	if _, err := start("-tls-cert", f.Cert, "-tls-key", f.Key); !errors.Is(err, tlsconf.ErrConfig) {
		t.Fatalf("no -tls-ca: %v, want tlsconf.ErrConfig", err)
	}
}
