package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/tlsconf"
)

// CA is a test certificate authority.
type CA struct {
	// Name is the CA's common name.
	Name string
	// CertFile is its certificate's PEM file (a CA bundle of one).
	CertFile string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	dir      string
	serial   atomic.Int64
}

// NewCA makes a CA named name whose files live in a temporary directory of
// the test.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"xps test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Name: name, cert: cert, key: key, dir: t.TempDir()}
	ca.serial.Store(1)
	ca.CertFile = filepath.Join(ca.dir, "ca.crt")
	writePEM(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Issue makes a certificate of the role (Subject OU and CN), valid for
// localhost, 127.0.0.1 and names (DNS names or IP addresses), for server
// and client use, and returns its files with the CA's bundle.
func (ca *CA) Issue(t testing.TB, role string, names ...string) tlsconf.Files {
	t.Helper()
	return ca.IssueSubject(t, pkix.Name{CommonName: role, OrganizationalUnit: []string{role}, Organization: []string{"xps test"}}, names...)
}

// IssueSubject is Issue with a subject of the caller's.
func (ca *CA) IssueSubject(t testing.TB, subject pkix.Name, names ...string) tlsconf.Files {
	t.Helper()
	key := newKey(t)
	n := ca.serial.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(n),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	for _, name := range names {
		if ip := net.ParseIP(name); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, name)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(ca.dir, big.NewInt(n).String()+"-"+subject.CommonName)
	f := tlsconf.Files{CA: ca.CertFile, Cert: base + ".crt", Key: base + ".key"}
	writePEM(t, f.Cert, "CERTIFICATE", der)
	writePEM(t, f.Key, "PRIVATE KEY", keyDER)
	return f
}

// Config issues a certificate of the role and loads it.
func (ca *CA) Config(t testing.TB, role string) *tlsconf.Config {
	t.Helper()
	c, err := tlsconf.Load(ca.Issue(t, role))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
