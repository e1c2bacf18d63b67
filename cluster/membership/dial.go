package membership

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// dialTimeout bounds the gRPC connection set-up of Dial.
const dialTimeout = 5 * time.Second

// reconnectMax bounds the wait between two attempts to reach etcd again
// after the connection broke. gRPC's default grows to two minutes: after
// an etcd outage of half a minute a client could wait a quarter of a
// minute more before trying again, by which time every lease it keeps
// (DefaultTTL) has expired although etcd was back. With a second, a
// member is back within a second of etcd.
const reconnectMax = time.Second

// DialCheckTimeout bounds Dial's first read: an etcd that does not answer
// within it is an error naming the endpoints, not a silent wait.
const DialCheckTimeout = 5 * time.Second

// ErrUnreachable is returned (wrapped) by Dial when etcd does not answer.
var ErrUnreachable = errors.New("membership: etcd does not answer")

// DialOption changes the client configuration Dial makes.
type DialOption func(*clientv3.Config)

// WithTLS makes Dial speak TLS with cfg (package tlsconf's client
// configuration: the server verified against the CA, the process's
// certificate presented, which an etcd with client-cert-auth takes as
// the user named by its CommonName). A nil cfg leaves plaintext.
func WithTLS(cfg *tls.Config) DialOption {
	return func(c *clientv3.Config) {
		if cfg != nil {
			c.TLS = cfg.Clone()
		}
	}
}

// Dial connects to etcd at endpoints ("host:port") and checks that the
// cluster answers a linearizable read within DialCheckTimeout (and before
// ctx ends). If not, it probes the endpoints for the protocol the client
// does not speak, within ProbeTimeout: when TLS answers a plaintext
// client, or plaintext a TLS one (WithTLS), the error wraps
// ErrTLSMismatch and says which -tls-* flags to give or drop; otherwise
// (nothing listens there, a certificate etcd refuses) it wraps
// ErrUnreachable. Both name the endpoints. The client logs warnings and
// errors to logger (nil: nowhere). The caller closes the client.
func Dial(ctx context.Context, endpoints []string, logger *slog.Logger, opts ...DialOption) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("membership: dial: no etcd endpoints")
	}
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		Logger:      ZapLogger(logger, slog.LevelError),
		Context:     context.WithoutCancel(ctx),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: reconnectMax},
			MinConnectTimeout: dialTimeout,
		})},
	}
	for _, o := range opts {
		o(&cfg)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("membership: dial %v: %w", endpoints, err)
	}
	cctx, cancel := context.WithTimeout(ctx, DialCheckTimeout)
	defer cancel()
	if _, err := cli.Get(cctx, "/xps", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		if ctx.Err() == nil {
			if err := tlsMismatch(ctx, endpoints, cfg.TLS != nil); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: no answer from %s within %v (is etcd running there?): %w",
				ErrUnreachable, strings.Join(endpoints, ","), DialCheckTimeout, err)
		}
		return nil, fmt.Errorf("membership: dial %v: %w", endpoints, err)
	}
	return cli, nil
}

// ZapLogger returns a zap logger that forwards entries at or above min to l,
// so that etcd's client and embedded server, which log through zap, share the
// process's log/slog handler. A nil l gives a no-op logger.
func ZapLogger(l *slog.Logger, min slog.Level) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{h: l.Handler(), min: min})
}

// slogCore is a zapcore.Core writing to a slog.Handler.
type slogCore struct {
	h   slog.Handler
	min slog.Level
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	s := slogLevel(l)
	return s >= c.min && c.h.Enabled(context.Background(), s)
}

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	return &slogCore{h: c.h.WithAttrs(slogAttrs(fs)), min: c.min}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(slogAttrs(fs)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// slogAttrs converts zap fields to attributes sorted by key.
func slogAttrs(fs []zapcore.Field) []slog.Attr {
	if len(fs) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fs {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]slog.Attr, len(keys))
	for i, k := range keys {
		out[i] = slog.Any(k, enc.Fields[k])
	}
	return out
}
