package cli

import (
	"crypto/x509/pkix"
	"errors"
	"flag"
	"io"
	"strings"
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

// TestWorkerCertificateNamesTheWorker: a process started with a worker's
// own certificate (CN worker-1) must be that worker; any other id is an
// error naming both, before anything starts.
func TestWorkerCertificateNamesTheWorker(t *testing.T) {
	ca := tlstest.NewCA(t, "dev")
	f := ca.IssueSubject(t, pkix.Name{CommonName: "worker-1", OrganizationalUnit: []string{tlsconf.RoleWorker}})
	start := func(id string) (*Proc, error) {
		var p Proc
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		p.Bind(fs, "info")
		if err := fs.Parse([]string{"-tls-ca", f.CA, "-tls-cert", f.Cert, "-tls-key", f.Key}); err != nil {
			t.Fatal(err)
		}
		err := p.Start(io.Discard, "worker", id)
		t.Cleanup(p.Close)
		return &p, err
	}
	if p, err := start("worker-1"); err != nil || p.TLS.Worker != "worker-1" {
		t.Fatalf("worker-1 with its certificate: %+v, %v", p.TLS, err)
	}
	if _, err := start("worker-0"); err == nil || !strings.Contains(err.Error(), "worker-1's") || !strings.Contains(err.Error(), "worker-0") {
		t.Fatalf("worker-0 with worker-1's certificate: %v, want an error naming both", err)
	}
}
