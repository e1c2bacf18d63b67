package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdlgo/xps/cluster/ops"
	"github.com/xdlgo/xps/cluster/tlsconf"
)

// Logger returns a text logger on stderr at the named level (debug, info,
// warn, error).
func Logger(level string) (*slog.Logger, error) { return LoggerTo(os.Stderr, level) }

// LoggerTo returns a text logger writing to w at the named level (debug,
// info, warn, error).
func LoggerTo(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad -log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// SignalContext returns a context cancelled on SIGINT or SIGTERM, with a
// *Signal as its cause (see Cause). After the first signal the default
// handling is back: a second Ctrl-C ends a process that is slow to stop.
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(&Signal{Sig: s})
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// Signal is the cause of a SignalContext's end: the process was asked to
// stop.
type Signal struct{ Sig os.Signal }

func (s *Signal) Error() string {
	name := s.Sig.String()
	switch s.Sig {
	case os.Interrupt:
		name = "SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		name = "SIGTERM"
	}
	return "stopped by " + name
}

// ExitCode is the status of a process stopped by the signal: 128 plus
// its number, as a shell reports it (130 for SIGINT).
func (s *Signal) ExitCode() int {
	if n, ok := s.Sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// Cause returns, when ctx (a SignalContext) ended by a signal, that
// signal (a *Signal, one line) instead of err: whatever failed then
// failed because the process was asked to stop, and the cascade of
// "context canceled" under err says nothing more. Otherwise it returns
// err.
func Cause(ctx context.Context, err error) error {
	var s *Signal
	if err != nil && errors.As(context.Cause(ctx), &s) {
		return s
	}
	return err
}

// Endpoints splits a comma-separated host:port list, dropping empties.
func Endpoints(s string) []string { return SplitList(s) }

// SetGCPercent sets the garbage collector's target percentage (a main's
// -gc-percent) unless the environment's GOGC is set, which wins.
func SetGCPercent(pct int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(pct)
	}
}

// SplitList splits a comma-separated list (paths, endpoints), trimming
// blanks and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Fatal reports err to stderr (Report) and exits with Report's status.
func Fatal(prog string, err error) { os.Exit(Report(os.Stderr, prog, err)) }

// Report prints FatalLine(prog, err) to w and returns the status a main
// exits with: 2 for a bad command line (an error matching ErrUsage; the
// line Hint(prog) follows), a *Signal's ExitCode when err is one (see
// Cause), else 1.
func Report(w io.Writer, prog string, err error) int {
	fmt.Fprintln(w, FatalLine(prog, err))
	var s *Signal
	switch {
	case errors.Is(err, ErrUsage):
		fmt.Fprintln(w, Hint(prog))
		return 2
	case errors.As(err, &s):
		return s.ExitCode()
	}
	return 1
}

// FatalLine is "prog: err", or err alone when it already starts with
// "prog: " (the error of a package named as the program: "worker: no
// data", not "worker: worker: no data").
func FatalLine(prog string, err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, prog+": ") {
		return msg
	}
	return prog + ": " + msg
}

// StartCPUProfile writes a CPU profile to path until the returned function
// is called.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// Profiles are a main's -cpuprofile and -memprofile: a CPU profile of
// the run, and a profile of every heap allocation of it.
type Profiles struct{ CPU, Mem string }

// Bind registers -cpuprofile and -memprofile on fs.
func (p *Profiles) Bind(fs *flag.FlagSet) {
	fs.StringVar(&p.CPU, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&p.Mem, "memprofile", "", "write a profile of every heap allocation of the run to this file "+
		"(runtime.MemProfileRate 1: slow; go tool pprof -sample_index=alloc_objects)")
}

// Start starts the profiles asked for; stop ends them and writes the
// memory profile.
func (p *Profiles) Start() (stop func() error, err error) {
	stopCPU := func() {}
	if p.CPU != "" {
		if stopCPU, err = StartCPUProfile(p.CPU); err != nil {
			return nil, err
		}
	}
	stopMem := func() error { return nil }
	if p.Mem != "" {
		if stopMem, err = StartMemProfile(p.Mem); err != nil {
			stopCPU()
			return nil, err
		}
	}
	return func() error {
		stopCPU()
		return stopMem()
	}, nil
}

// StartMemProfile records every heap allocation (runtime.MemProfileRate
// 1: slow, for attributing allocations by count) until the returned
// function is called, which writes the allocation profile to path (go
// tool pprof -sample_index=alloc_objects). The profile counts from the
// process's start; the rate applies from now on.
func StartMemProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("memory profile: %w", err)
	}
	runtime.MemProfileRate = 1
	return func() error {
		runtime.GC() // the profile is of the last completed GC cycle
		err := pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("memory profile: %w", err)
		}
		return nil
	}, nil
}

// Proc is what every long-running main shares: the -log-level,
// -log-format and -http flags, the logger they make (on every line: the
// program, its member id, the OS pid and, once SetVersion says, the
// cluster version), and the
// operations endpoint (package cluster/ops) when -http is set, and the TLS
// identity of -tls-ca, -tls-cert and -tls-key.
type Proc struct {
	Level, Format, HTTP string
	// TLSFiles are the -tls-ca, -tls-cert and -tls-key files: all three
	// or none.
	TLSFiles tlsconf.Files

	// TLS is the process's TLS identity (package tlsconf), loaded by Start
	// from TLSFiles; nil when TLS is off (no -tls-* flag), and then its
	// Server and Client configurations are nil too.
	TLS *tlsconf.Config

	// Log is the process's logger, set by Start.
	Log *slog.Logger
	// Ops is the operations endpoint, nil when -http is empty.
	Ops *ops.Server

	version *atomic.Pointer[func() uint64] // SetVersion's, made by Start
}

// Bind adds the shared flags to fs with the given default level.
func (p *Proc) Bind(fs *flag.FlagSet, level string) {
	fs.StringVar(&p.Level, "log-level", level, "log level: debug, info, warn or error")
	fs.StringVar(&p.Format, "log-format", "text", "log format: text or json (one object per line)")
	fs.StringVar(&p.HTTP, "http", "", `operations endpoint host:port: /metrics (Prometheus), /healthz, /readyz ("" off)`)
	fs.StringVar(&p.TLSFiles.CA, "tls-ca", "", "mutual TLS: the CA bundle (PEM) peers' certificates must chain to; with -tls-cert and -tls-key (default off)")
	fs.StringVar(&p.TLSFiles.Cert, "tls-cert", "", "mutual TLS: this process's certificate (PEM), its role in the Subject's OU")
	fs.StringVar(&p.TLSFiles.Key, "tls-key", "", "mutual TLS: the certificate's private key (PEM)")
}

// Start loads the TLS identity, makes the logger (writing to w) and
// starts the operations endpoint; Close stops it.
func (p *Proc) Start(w io.Writer, prog, id string) error {
	var err error
	if p.TLS, err = tlsconf.Load(p.TLSFiles); err != nil {
		return fmt.Errorf("-tls-ca, -tls-cert, -tls-key: %w", err)
	}
	if p.TLS != nil && p.TLS.Worker != "" && p.TLS.Worker != id {
		return fmt.Errorf("-tls-cert: the certificate %s is %s's, this process is %s (-worker-index): give each worker its own (README, \"One identity per worker\")",
			p.TLSFiles.Cert, p.TLS.Worker, id)
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(p.Level)); err != nil {
		return fmt.Errorf("bad -log-level %q: %w", p.Level, err)
	}
	o := &slog.HandlerOptions{Level: l}
	var h slog.Handler
	switch p.Format {
	case "text", "":
		h = slog.NewTextHandler(w, o)
	case "json":
		h = slog.NewJSONHandler(w, o)
	default:
		return fmt.Errorf("bad -log-format %q: want text or json", p.Format)
	}
	attrs := []slog.Attr{slog.String("proc", prog), slog.Int("pid", os.Getpid())}
	if id != "" {
		attrs = append(attrs, slog.String("id", id))
	}
	p.version = new(atomic.Pointer[func() uint64])
	p.Log = slog.New(versionHandler{Handler: h.WithAttrs(attrs), version: p.version})
	if p.TLS != nil {
		p.Log.Info("mutual TLS on", "role", p.TLS.Role, "cert", p.TLSFiles.Cert)
	}
	if p.HTTP == "" {
		return nil
	}
	if p.Ops, err = ops.Start(p.HTTP, p.Log); err != nil {
		return err
	}
	p.Log.Info("operations endpoint", "addr", p.Ops.Addr())
	return nil
}

// Ready marks the process ready (no-op without -http).
func (p *Proc) Ready() {
	if p.Ops != nil {
		p.Ops.SetReady()
	}
}

// ReadyUntil marks the process ready until ctx ends (a signal): then not
// ready, before the process finishes its work and stops.
func (p *Proc) ReadyUntil(ctx context.Context) {
	if p.Ops == nil {
		return
	}
	p.Ops.SetReady()
	context.AfterFunc(ctx, func() { p.Ops.SetNotReady("stopping") })
}

// NotReady marks the process not ready, e.g. on SIGTERM before it stops.
func (p *Proc) NotReady(reason string) {
	if p.Ops != nil {
		p.Ops.SetNotReady(reason)
	}
}

// OpsAddr is the operations endpoint's address, "" without -http.
func (p *Proc) OpsAddr() string {
	if p.Ops == nil {
		return ""
	}
	return p.Ops.Addr()
}

// Close stops the operations endpoint.
func (p *Proc) Close() {
	if p.Ops != nil {
		p.Ops.Close() //nolint:errcheck // exiting
	}
}

// Metrics is the operations endpoint's metrics registry, nil without
// -http.
func (p *Proc) Metrics() prometheus.Registerer {
	if p.Ops == nil {
		return nil
	}
	return p.Ops.Registry
}
