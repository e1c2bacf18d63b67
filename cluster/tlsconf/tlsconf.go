package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// The roles a certificate may name (its Subject's OrganizationalUnit).
const (
	RoleScheduler = "scheduler"
	RoleAMS       = "ams"
	RoleWorker    = "worker"
	RoleServe     = "serve"
	RoleEtcd      = "etcd"
	RoleAdmin     = "admin"
)

// Roles lists every role.
var Roles = []string{RoleScheduler, RoleAMS, RoleWorker, RoleServe, RoleEtcd, RoleAdmin}

var (
	// ErrConfig is returned (wrapped) when the files cannot make a
	// configuration: missing, unreadable, not PEM, a key that does not
	// match the certificate, or a certificate without a known role.
	ErrConfig = errors.New("tlsconf: bad TLS configuration")
	// ErrNoRole is returned (wrapped) by PeerRole when the peer presented
	// no verified certificate or its certificate names no known role.
	ErrNoRole = errors.New("tlsconf: no role")
)

// Files names the PEM files of a component's identity. The zero Files is
// "TLS off".
type Files struct {
	// CA is the bundle of CA certificates that peers' certificates must
	// chain to.
	CA string
	// Cert is the component's certificate (and any intermediates).
	Cert string
	// Key is the certificate's private key.
	Key string
}

// IsZero reports whether no file is named.
func (f Files) IsZero() bool { return f == Files{} }

// Validate reports an error unless all three files are named or none is.
func (f Files) Validate() error {
	if f.IsZero() || (f.CA != "" && f.Cert != "" && f.Key != "") {
		return nil
	}
	return fmt.Errorf("%w: give all of the CA bundle, the certificate and the key, or none (got ca=%q cert=%q key=%q)",
		ErrConfig, f.CA, f.Cert, f.Key)
}

// Config is a loaded identity: the CA pool, the certificate and its role.
type Config struct {
	// Files are the files it was loaded from (etcd's embedded server reads
	// them itself).
	Files Files
	// Role is the role the component's own certificate names.
	Role string
	// Worker is the worker the certificate names, if it is a worker's of
	// its own (WorkerOf): that worker's name, "worker-3".
	Worker string
	pool   *x509.CertPool
	cert   tls.Certificate
}

// Load reads and checks the files: the CA bundle must hold at least one
// certificate, the key must match the certificate, and the certificate
// must chain to the bundle and name a role. Zero Files give a nil Config
// (TLS off) and no error.
func Load(f Files) (*Config, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.IsZero() {
		return nil, nil
	}
	ca, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("%w: CA bundle: %w", ErrConfig, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%w: CA bundle %s holds no PEM certificate", ErrConfig, f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s and key %s: %w", ErrConfig, f.Cert, f.Key, err)
	}
	leaf := cert.Leaf
	var inter []*x509.Certificate
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter = append(inter, c)
		}
	}
	if err := verifyChain(pool, leaf, inter, x509.ExtKeyUsageAny); err != nil {
		return nil, fmt.Errorf("%w: certificate %s does not chain to the CA bundle %s: %w", ErrConfig, f.Cert, f.CA, err)
	}
	role, err := RoleOf(leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s: %w", ErrConfig, f.Cert, err)
	}
	return &Config{Files: f, Role: role, Worker: WorkerOf(leaf), pool: pool, cert: cert}, nil
}

// Server returns the configuration of a server: it presents the
// certificate, requires a client certificate that chains to the CA
// bundle, and speaks TLS 1.3 at least. A nil Config returns nil.
func (c *Config) Server() *tls.Config {
	if c == nil {
		return nil
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    c.pool,
	}
}

// Client returns the configuration of a client: it verifies the server
// against the CA bundle (and its name against the address dialled),
// presents the certificate, and speaks TLS 1.3 at least. A nil Config
// returns nil.
func (c *Config) Client() *tls.Config {
	if c == nil {
		return nil
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.cert},
		RootCAs:      c.pool,
	}
}

// PeerClient returns the configuration of a client of another worker (a
// SLIDE job's share, job/xctrain): as Client, but the server is verified
// by the identity its certificate names instead of the address dialled
// (a worker advertises the address it is reached at, often a pod's IP
// that no certificate names): its chain must verify against the CA
// bundle for server use, its role must be worker, and, when worker is not
// "", the worker it names (WorkerOf) must be that one. A nil Config
// returns nil.
func (c *Config) PeerClient(worker string) *tls.Config {
	cfg := c.Client()
	if cfg == nil {
		return nil
	}
	// Go verifies the chain and the name together; the name is not what
	// identifies a worker, so VerifyConnection verifies both the chain
	// and the identity instead, on every handshake.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return c.verifyWorker(cs, worker) }
	return cfg
}

// verifyWorker checks the server of a handshake cs for PeerClient.
func (c *Config) verifyWorker(cs tls.ConnectionState, worker string) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%w: the peer presented no certificate", ErrNoRole)
	}
	leaf := cs.PeerCertificates[0]
	if err := verifyChain(c.pool, leaf, cs.PeerCertificates[1:], x509.ExtKeyUsageServerAuth); err != nil {
		return fmt.Errorf("tlsconf: the peer's certificate %q: %w", leaf.Subject, err)
	}
	switch role, err := RoleOf(leaf); {
	case err != nil:
		return err
	case role != RoleWorker:
		return fmt.Errorf("%w: the peer's certificate %q is of role %q, not a worker's", ErrNoRole, leaf.Subject, role)
	case worker != "" && WorkerOf(leaf) != worker:
		return fmt.Errorf("%w: the peer's certificate %q is not %s's", ErrNoRole, leaf.Subject, worker)
	}
	return nil
}

// verifyChain verifies that leaf, with the intermediates inter, chains to
// a CA of pool for usage.
func verifyChain(pool *x509.CertPool, leaf *x509.Certificate, inter []*x509.Certificate, usage x509.ExtKeyUsage) error {
	ip := x509.NewCertPool()
	for _, c := range inter {
		ip.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: ip, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// CallerState returns the TLS state of the caller of a gRPC call (its
// server handler's ctx), or false when the call did not come over TLS.
func CallerState(ctx context.Context) (tls.ConnectionState, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return tls.ConnectionState{}, false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	return info.State, ok
}

// RoleOf returns the role a certificate names: the one OrganizationalUnit
// of its Subject that is a known role.
func RoleOf(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return "", fmt.Errorf("%w: no certificate", ErrNoRole)
	}
	var role string
	for _, ou := range cert.Subject.OrganizationalUnit {
		if !slices.Contains(Roles, ou) {
			continue
		}
		if role != "" && role != ou {
			return "", fmt.Errorf("%w: certificate %q names two roles, %q and %q", ErrNoRole, cert.Subject, role, ou)
		}
		role = ou
	}
	if role == "" {
		return "", fmt.Errorf("%w: certificate %q names no role (its Subject's OU is none of %v)", ErrNoRole, cert.Subject, Roles)
	}
	return role, nil
}

// PeerRole returns the role of the peer of a connection from the
// certificate the handshake verified (never an unverified one).
func PeerRole(cs tls.ConnectionState) (string, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", fmt.Errorf("%w: the peer presented no verified certificate", ErrNoRole)
	}
	return RoleOf(cs.VerifiedChains[0][0])
}

// PeerWorker returns the worker a connection's peer is, when its verified
// certificate names one: role worker and a CommonName of its own (the
// worker's name, "worker-3"), not the role's ("worker", the identity every
// worker shares). A shard takes such a worker's pushes and checkpoints
// only under that name (ams/shard). It returns "" for any other peer.
func PeerWorker(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return ""
	}
	return WorkerOf(cs.VerifiedChains[0][0])
}

// WorkerOf returns the worker a certificate names: its CommonName when
// its role is worker and the CommonName is not the role's own (the
// shared identity), else "".
func WorkerOf(cert *x509.Certificate) string {
	if role, err := RoleOf(cert); err != nil || role != RoleWorker || cert.Subject.CommonName == RoleWorker {
		return ""
	}
	return cert.Subject.CommonName
}

// ServerOptions returns the gRPC server options of c: mutual-TLS
// credentials (Server). A nil Config returns none (plaintext).
func ServerOptions(c *Config) []grpc.ServerOption {
	if c == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(c.Server()))}
}

// DialOptions returns the gRPC dial options of c: mutual-TLS credentials
// (Client). A nil Config returns none (the caller's default).
func DialOptions(c *Config) []grpc.DialOption {
	if c == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(c.Client()))}
}
