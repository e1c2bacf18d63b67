package cli

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// versionHandler adds the cluster version the process serves, when it
// has one, to every record: the version is read when the record is
// handled (it changes with restores), from the function SetVersion gave.
type versionHandler struct {
	slog.Handler
	version *atomic.Pointer[func() uint64]
}

func (h versionHandler) Handle(ctx context.Context, r slog.Record) error {
	if f := h.version.Load(); f != nil && !hasAttr(r, "version") { // a line naming a version keeps its own
		if v := (*f)(); v > 0 {
			r.AddAttrs(slog.Uint64("version", v))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h versionHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return versionHandler{Handler: h.Handler.WithAttrs(as), version: h.version}
}

func (h versionHandler) WithGroup(name string) slog.Handler {
	return versionHandler{Handler: h.Handler.WithGroup(name), version: h.version}
}

// SetVersion makes every later log line carry version=v(), the cluster
// version the process serves, when v() > 0 (0: none yet). Call it after
// Start.
func (p *Proc) SetVersion(v func() uint64) {
	if p.version != nil { // nil before Start: no logger to add it to
		p.version.Store(&v)
	}
}

// hasAttr reports whether the record carries an attribute of that key.
func hasAttr(r slog.Record, key string) bool {
	has := false
	r.Attrs(func(a slog.Attr) bool {
		has = a.Key == key
		return !has
	})
	return has
}
