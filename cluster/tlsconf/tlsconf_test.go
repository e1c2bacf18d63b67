package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/tlstest"
)

// handshake runs a TLS handshake between a server and a client config on
// loopback and returns the server's view of the connection and each side's
// error. The server writes one byte once its handshake succeeds, so that
// the client sees the server's verdict on its certificate (in TLS 1.3 it
// comes after the client's own handshake).
func handshake(t *testing.T, srv, cli *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	type result struct {
		cs  tls.ConnectionState
		err error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := lis.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		s := tls.Server(conn, srv)
		conn.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck // a test bound
		err = s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		done <- result{s.ConnectionState(), err}
	}()
	conn, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck // a test bound
	c := tls.Client(conn, cli)
	cerr := c.Handshake()
	if cerr == nil {
		_, cerr = c.Read(make([]byte, 1))
	}
	r := <-done
	return r.cs, r.err, cerr
}

func TestMutualTLSRoles(t *testing.T) {
	ca := tlstest.NewCA(t, "dev")
	other := tlstest.NewCA(t, "foreign")
	server := ca.Config(t, tlsconf.RoleAMS)
	if server.Role != tlsconf.RoleAMS {
		t.Fatalf("role %q, want ams", server.Role)
	}
	for _, role := range []string{tlsconf.RoleWorker, tlsconf.RoleScheduler, tlsconf.RoleAdmin} {
		cli := ca.Config(t, role).Client()
		cli.ServerName = "localhost"
		cs, serr, cerr := handshake(t, server.Server(), cli)
		if serr != nil || cerr != nil {
			t.Fatalf("%s: handshake: server %v, client %v", role, serr, cerr)
		}
		if got, err := tlsconf.PeerRole(cs); err != nil || got != role {
			t.Fatalf("PeerRole = %q, %v; want %q", got, err, role)
		}
		if cs.Version != tls.VersionTLS13 {
			t.Fatalf("version %x, want TLS 1.3", cs.Version)
		}
	}
	// No certificate: refused by the server.
	noCert := &tls.Config{RootCAs: ca.Config(t, tlsconf.RoleWorker).Client().RootCAs, ServerName: "localhost", MinVersion: tls.VersionTLS13}
	if _, serr, _ := handshake(t, server.Server(), noCert); serr == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	// A certificate of another CA: refused by the server.
	foreign := other.Config(t, tlsconf.RoleWorker).Client()
	foreign.RootCAs = noCert.RootCAs
	foreign.ServerName = "localhost"
	if _, serr, _ := handshake(t, server.Server(), foreign); serr == nil {
		t.Fatal("a client with a certificate of another CA was accepted")
	}
	// A server of another CA: refused by the client.
	cli := ca.Config(t, tlsconf.RoleWorker).Client()
	cli.ServerName = "localhost"
	if _, _, cerr := handshake(t, other.Config(t, tlsconf.RoleAMS).Server(), cli); cerr == nil {
		t.Fatal("the client accepted a server of another CA")
	}
}

func TestLoadErrors(t *testing.T) {
	ca := tlstest.NewCA(t, "dev")
	other := tlstest.NewCA(t, "foreign")
	good := ca.Issue(t, tlsconf.RoleWorker)
	if c, err := tlsconf.Load(tlsconf.Files{}); c != nil || err != nil {
		t.Fatalf("zero files: %v, %v; want TLS off", c, err)
	}
	var off *tlsconf.Config
	if off.Server() != nil || off.Client() != nil || tlsconf.ServerOptions(off) != nil || tlsconf.DialOptions(off) != nil {
		t.Fatal("a nil Config must mean TLS off")
	}
	noRole := ca.IssueSubject(t, pkix.Name{CommonName: "x", OrganizationalUnit: []string{"nobody"}})
	twoRoles := ca.IssueSubject(t, pkix.Name{CommonName: "x", OrganizationalUnit: []string{"worker", "scheduler"}})
	foreign := other.Issue(t, tlsconf.RoleWorker)
	for name, f := range map[string]tlsconf.Files{
		"only cert":      {Cert: good.Cert},
		"no key":         {CA: good.CA, Cert: good.Cert},
		"missing CA":     {CA: good.CA + ".missing", Cert: good.Cert, Key: good.Key},
		"CA not PEM":     {CA: good.Key + "x", Cert: good.Cert, Key: good.Key},
		"key mismatch":   {CA: good.CA, Cert: good.Cert, Key: foreign.Key},
		"other CA":       {CA: good.CA, Cert: foreign.Cert, Key: foreign.Key},
		"no role":        noRole,
		"two roles":      twoRoles,
		"cert as CA PEM": {CA: good.Key, Cert: good.Cert, Key: good.Key},
	} {
		if _, err := tlsconf.Load(f); !errors.Is(err, tlsconf.ErrConfig) {
			t.Errorf("%s: Load = %v, want ErrConfig", name, err)
		}
	}
	if _, err := tlsconf.PeerRole(tls.ConnectionState{}); !errors.Is(err, tlsconf.ErrNoRole) {
		t.Fatalf("PeerRole of no certificate = %v, want ErrNoRole", err)
	}
}
