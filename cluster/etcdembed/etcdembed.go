package etcdembed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
)

// ErrStart is returned (wrapped) when the server fails to start or to become
// ready in time.
var ErrStart = errors.New("etcdembed: start")

// Options configures an embedded etcd server.
type Options struct {
	// Dir is the data directory; it is created if missing. Required.
	Dir string
	// Name is the etcd member name. The default value is "xps".
	Name string
	// Logger receives etcd's log entries at or above LogLevel. The default
	// value (nil) discards them.
	Logger *slog.Logger
	// LogLevel is the lowest level forwarded to Logger. The default value
	// is slog.LevelError.
	LogLevel slog.Leveler
	// ReadyTimeout bounds how long Start waits for the server to serve.
	// The default value is 30s.
	ReadyTimeout time.Duration
	// UnsafeNoFsync disables fsync: faster, loses data on a machine crash.
	// For tests. The default value is false.
	UnsafeNoFsync bool
	// ClientAddr is the host:port clients connect to. The default value is
	// "127.0.0.1:0", a free loopback port (see Endpoints).
	ClientAddr string
	// AdvertiseClientAddr is the client host:port published to the cluster
	// (e.g. "etcd-0.etcd:2379" in Kubernetes). The default value is the
	// address listened on.
	AdvertiseClientAddr string
	// PeerAddr is the host:port the member listens on for its peers. The
	// default value is "127.0.0.1:0".
	PeerAddr string
	// AdvertisePeerAddr is the peer host:port published to the other
	// members. The default value is the address listened on.
	AdvertisePeerAddr string
	// InitialCluster lists the members of a new multi-member cluster as
	// "name=http://host:port,..." (their advertised peer addresses); a data
	// directory that already holds a member ignores it. The default value
	// ("") is a single-member cluster of this member.
	InitialCluster string
	// TLS, when set, makes the member speak mutual TLS 1.3 (package
	// tlsconf): clients on https with client-cert-auth (a client must
	// present a certificate of the CA bundle; etcd takes its CommonName
	// as the user name once auth is enabled), and peers on https, where a
	// peer's certificate must chain to the CA and name the etcd role
	// (CommonName "etcd"). InitialCluster then lists https:// peer URLs.
	// The default value (zero Files) is plaintext.
	TLS tlsconf.Files
}

// EnsureDefaults fills zero fields with their default values.
func (o *Options) EnsureDefaults() {
	if o.Name == "" {
		o.Name = "xps"
	}
	if o.LogLevel == nil {
		o.LogLevel = slog.LevelError
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 30 * time.Second
	}
}

// Validate reports every problem with the options.
func (o *Options) Validate() error {
	errs := []error{o.TLS.Validate()}
	if o.Dir == "" {
		errs = append(errs, errors.New("etcdembed: Dir is required"))
	}
	if o.ReadyTimeout < 0 {
		errs = append(errs, fmt.Errorf("etcdembed: ReadyTimeout %v is negative", o.ReadyTimeout))
	}
	return errors.Join(errs...)
}

// Server is a running embedded etcd server.
type Server struct {
	e         *embed.Etcd
	endpoints []string
	closeOnce sync.Once
	closing   *atomic.Bool
}

// Start starts a single-member etcd server listening on 127.0.0.1 with
// kernel-chosen client and peer ports, and waits until it is ready, at most
// opts.ReadyTimeout and not after ctx ends.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = opts.Name
	cfg.Dir = opts.Dir
	scheme := "http"
	if !opts.TLS.IsZero() {
		scheme = "https"
		setTLS(cfg, opts.TLS)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = listenURLs(scheme, opts.ClientAddr, opts.AdvertiseClientAddr)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = listenURLs(scheme, opts.PeerAddr, opts.AdvertisePeerAddr)
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if opts.InitialCluster != "" {
		cfg.InitialCluster = opts.InitialCluster
		cfg.InitialClusterToken = "xps-etcd"
	}
	cfg.EnableGRPCGateway = false
	cfg.UnsafeNoFsync = opts.UnsafeNoFsync
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	// Once Close starts, etcd logs its listeners' shutdown as errors
	// ("setting up serving ... failed"); the gate drops those.
	closing := new(atomic.Bool)
	logger := opts.Logger
	if logger != nil {
		logger = slog.New(gateHandler{h: logger.Handler(), closing: closing})
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(membership.ZapLogger(logger, opts.LogLevel.Level()))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	timer := time.NewTimer(opts.ReadyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("%w: not ready after %v", ErrStart, opts.ReadyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("%w: %w", ErrStart, ctx.Err())
	}
	s := &Server{e: e, closing: closing}
	for _, l := range e.Clients {
		s.endpoints = append(s.endpoints, l.Addr().String())
	}
	return s, nil
}

// listenURLs returns the URLs to listen on and to advertise: listen
// defaults to a free loopback port, advertise to listen.
func listenURLs(scheme, listen, advertise string) (l, a []url.URL) {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if advertise == "" {
		advertise = listen
	}
	return []url.URL{{Scheme: scheme, Host: listen}}, []url.URL{{Scheme: scheme, Host: advertise}}
}

// setTLS sets the member's client and peer TLS from the files: TLS 1.3,
// client certificates required on both, peers of the etcd role only.
func setTLS(cfg *embed.Config, f tlsconf.Files) {
	info := transport.TLSInfo{CertFile: f.Cert, KeyFile: f.Key, TrustedCAFile: f.CA, ClientCertAuth: true}
	cfg.ClientTLSInfo = info
	cfg.PeerTLSInfo = info
	cfg.PeerTLSInfo.AllowedCNs = []string{tlsconf.RoleEtcd}
	cfg.TlsMinVersion = "TLS1.3"
}

// Endpoints returns the client addresses ("127.0.0.1:port") of the server.
func (s *Server) Endpoints() []string { return append([]string(nil), s.endpoints...) }

// Close stops the server and waits for its goroutines. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.e.Close()
	})
	return nil
}

// gateHandler forwards records to h until closing is set.
type gateHandler struct {
	h       slog.Handler
	closing *atomic.Bool
}

func (g gateHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return !g.closing.Load() && g.h.Enabled(ctx, l)
}

func (g gateHandler) Handle(ctx context.Context, r slog.Record) error {
	if g.closing.Load() {
		return nil
	}
	return g.h.Handle(ctx, r)
}

func (g gateHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return gateHandler{h: g.h.WithAttrs(as), closing: g.closing}
}

func (g gateHandler) WithGroup(name string) slog.Handler {
	return gateHandler{h: g.h.WithGroup(name), closing: g.closing}
}
