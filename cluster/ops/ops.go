package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric of the platform.
const Namespace = "xps"

// Server is a running operations endpoint.
type Server struct {
	// Registry holds the process's metrics; register collectors on it.
	Registry *prometheus.Registry

	ln     net.Listener
	srv    *http.Server
	mux    *http.ServeMux
	notOK  atomic.Pointer[string] // nil: ready
	done   chan struct{}
	closed sync.Once
}

// NewRegistry returns a registry with the Go runtime and process
// collectors, the base of every process's metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Start listens on addr (host:port; port 0 picks a free one) and serves
// the endpoints until Close. It is not ready until SetReady.
func Start(addr string, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ops: listen on %s: %w", addr, err)
	}
	s := &Server{Registry: NewRegistry(), ln: ln, mux: http.NewServeMux(), done: make(chan struct{})}
	s.SetNotReady("starting")
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("ops endpoint stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handle adds a handler, e.g. a status page at "GET /".
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// SetReady makes /readyz answer 200.
func (s *Server) SetReady() { s.notOK.Store(nil) }

// SetNotReady makes /readyz answer 503 with the reason.
func (s *Server) SetNotReady(reason string) { s.notOK.Store(&reason) }

// Ready reports whether /readyz answers 200.
func (s *Server) Ready() bool { return s.notOK.Load() == nil }

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if r := s.notOK.Load(); r != nil {
		http.Error(w, "not ready: "+*r, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// Close stops serving, giving requests in flight up to 2s. It is
// idempotent.
func (s *Server) Close() error {
	var err error
	s.closed.Do(func() {
		s.SetNotReady("stopping")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err = s.srv.Shutdown(ctx); err != nil {
			err = s.srv.Close()
		}
		<-s.done
	})
	return err
}
