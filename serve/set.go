package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"
)

// Model is one model of a Set: its name in requests and where it comes
// from, with its own limits.
type Model struct {
	// Name is the model's name in requests (POST /predict?model=NAME, the
	// gRPC request's model field): letters, digits, '.', '_' and '-'.
	Name string `yaml:"name"`
	// Store is its export store (Options.Store). Two models may not share
	// one: each follows its own chain.
	Store string `yaml:"store"`
	// Limits bound its requests and its requests in flight
	// (Options.Limits); zero fields take the Set's (SetOptions.Defaults).
	Limits Limits `yaml:"limits"`
	// MaxBytes bounds its tables' memory (Options.MaxBytes); 0 takes the
	// Set's.
	MaxBytes int64 `yaml:"max_bytes"`
}

// SetOptions configure a Set.
type SetOptions struct {
	// Models are the models served, each under its name.
	Models []Model
	// File is a models file, read instead of Models (see ReadModels for
	// its format); Run reads it again every Poll and applies what
	// changed: a model added is loaded, then served; a model removed is
	// drained (its requests in flight end, new ones are answered 404),
	// then dropped; a model whose entry changed is loaded anew beside the
	// old, then switched in. A file that cannot be used (unreadable,
	// invalid, a model that does not load) changes nothing: the error is
	// logged and in SetStatus, and the models served stay.
	File string
	// Defaults are every model's options but its Store: Poll, Logger (to
	// which each model's logs add model=NAME), Metrics (to which each
	// model's metrics add the label model=NAME), and the Limits and
	// MaxBytes for what a model leaves zero.
	Defaults Options
}

// ErrUnknownModel is wrapped by the error of a request for a model the
// Set does not serve (HTTP 404, gRPC NOT_FOUND).
var ErrUnknownModel = errors.New("serve: no such model")

// Set serves several models in one process, each by its own Server under
// its name: requests name their model, each model follows its own
// export chain with its own limits and memory bound, and a delta or a
// reload of one never pauses the others (each has its own replica and
// lock). A Set of one model answers requests that name none.
type Set struct {
	opts SetOptions

	mu     sync.RWMutex
	models map[string]*entry
	// fileErr is why the models file's last change was not applied.
	fileErr string

	// reloading serializes Reload; it guards fileSum, the models file's
	// contents last read.
	reloading sync.Mutex
	fileSum   string
	runCtx    context.Context // Run's; under mu
	runs      sync.WaitGroup  // the models' Run and drains
}

// entry is one model served: its server and the requests in it.
type entry struct {
	spec Model
	srv  *Server
	// reqs counts the requests in srv: Add under Set.mu held for reading
	// while the entry is in Set.models, Wait after it left them.
	reqs sync.WaitGroup
	stop context.CancelFunc // ends srv.Run; nil before Set.Run
}

// NewSet loads every model of opts (Models, or those of File): an error
// if the models are not valid (ValidateModels) or any cannot be loaded.
func NewSet(opts SetOptions) (*Set, error) {
	if opts.Defaults.Store != "" {
		return nil, errors.New("serve: SetOptions.Defaults.Store is set: each Model names its store")
	}
	if opts.Defaults.Poll <= 0 {
		opts.Defaults.Poll = time.Second
	}
	if opts.Defaults.Logger == nil {
		opts.Defaults.Logger = slog.Default()
	}
	s := &Set{opts: opts, models: map[string]*entry{}}
	specs := opts.Models
	if opts.File != "" {
		if len(specs) > 0 {
			return nil, errors.New("serve: both Models and a models file: give one")
		}
		var err error
		if specs, s.fileSum, err = ReadModels(opts.File); err != nil {
			return nil, err
		}
	}
	if err := s.apply(specs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// validName is what a model's name may hold.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidateModels reports every problem with models at once: none, a name
// that is not valid or given twice, a missing store or one given to two
// models, negative limits or MaxBytes.
func ValidateModels(models []Model) error {
	if len(models) == 0 {
		return errors.New("serve: no model to serve")
	}
	var errs []error
	names, stores := map[string]bool{}, map[string]string{}
	for i, m := range models {
		switch {
		case !validName.MatchString(m.Name):
			errs = append(errs, fmt.Errorf("serve: model %d: name %q: want 1 to 64 letters, digits, '.', '_' or '-'", i, m.Name))
		case names[m.Name]:
			errs = append(errs, fmt.Errorf("serve: model %q is named twice", m.Name))
		}
		names[m.Name] = true
		key := storeKey(m.Store)
		switch other, ok := stores[key]; {
		case m.Store == "":
			errs = append(errs, fmt.Errorf("serve: model %q has no store", m.Name))
		case ok:
			errs = append(errs, fmt.Errorf("serve: models %q and %q share the store %s: each model follows its own chain (export each model to a store of its own)", other, m.Name, m.Store))
		default:
			stores[key] = m.Name
		}
		if err := m.Limits.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("serve: model %q: %w", m.Name, err))
		}
		if m.MaxBytes < 0 {
			errs = append(errs, fmt.Errorf("serve: model %q: max_bytes %d is negative", m.Name, m.MaxBytes))
		}
	}
	return errors.Join(errs...)
}

// storeKey is a store's location as compared between models: a local
// path cleaned and absolute.
func storeKey(loc string) string {
	if strings.Contains(loc, "://") {
		return strings.TrimRight(loc, "/")
	}
	if abs, err := filepath.Abs(loc); err == nil {
		return abs
	}
	return filepath.Clean(loc)
}

// options returns the options of m's server: the Set's defaults with m's
// store, its limits over the defaults' field by field, its logger and no
// metrics (registered when m is switched in: see apply).
func (s *Set) options(m Model) Options {
	o := s.opts.Defaults
	o.Store, o.Metrics = m.Store, nil
	o.Logger = o.Logger.With("model", m.Name)
	o.Limits = m.Limits.over(o.Limits)
	if m.MaxBytes != 0 {
		o.MaxBytes = m.MaxBytes
	}
	return o
}

// apply makes specs the models served: the models new or changed are
// loaded first (an error, after which nothing changed, if one cannot
// be), then switched in together; the models gone or replaced are
// drained and dropped in the background.
func (s *Set) apply(specs []Model) error {
	if err := ValidateModels(specs); err != nil {
		return err
	}
	s.mu.RLock()
	old := maps.Clone(s.models)
	s.mu.RUnlock()
	built := map[string]*Server{}
	for _, m := range specs {
		if e, ok := old[m.Name]; ok && e.spec == m {
			continue
		}
		srv, err := New(s.options(m))
		if err != nil {
			for _, b := range built {
				b.Close()
			}
			return fmt.Errorf("serve: model %q: %w", m.Name, err)
		}
		built[m.Name] = srv
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := map[string]bool{}
	for _, m := range specs {
		keep[m.Name] = built[m.Name] == nil
	}
	for name, e := range s.models {
		if !keep[name] {
			delete(s.models, name)
			s.drop(e)
		}
	}
	for _, m := range specs {
		if srv := built[m.Name]; srv != nil {
			s.models[m.Name] = s.switchIn(m, srv)
		}
	}
	s.fileErr = ""
	return nil
}

// switchIn returns the entry of model m served by srv: its metrics
// registered under the label model=NAME (a failure is logged: the model
// serves without them), its Run started when the Set runs. The caller
// holds mu, the model's old entry (if any) dropped.
func (s *Set) switchIn(m Model, srv *Server) *entry {
	e := &entry{spec: m, srv: srv}
	if reg := s.opts.Defaults.Metrics; reg != nil {
		var err error
		if srv.metrics, err = newMetrics(srv, prometheus.WrapRegistererWith(prometheus.Labels{"model": m.Name}, reg)); err != nil {
			srv.opts.Logger.Error("serving the model without its metrics", "err", err)
		}
	}
	if s.runCtx != nil {
		s.start(e)
	}
	srv.opts.Logger.Info("model switched in", "store", m.Store)
	return e
}

// start runs e's server until its stop or the Set's Run ends. The caller
// holds mu, s.runCtx set.
func (s *Set) start(e *entry) {
	ctx, stop := context.WithCancel(s.runCtx)
	e.stop = stop
	s.runs.Go(func() { e.srv.Run(ctx) })
}

// drop drains entry e, already out of s.models (no new request finds
// it): its metrics are withdrawn and its updates stopped at once, then
// its requests in flight end and its server is closed. The caller holds
// mu.
func (s *Set) drop(e *entry) {
	e.srv.metrics.unregister()
	if e.stop != nil {
		e.stop()
	}
	s.runs.Go(func() {
		e.reqs.Wait()
		e.srv.Close()
		e.srv.opts.Logger.Info("model dropped after its requests ended")
	})
}

// Run applies each model's new exports every Poll, and the models file's
// changes, until ctx ends; then it waits for the models' updates and
// drains to end.
func (s *Set) Run(ctx context.Context) {
	s.mu.Lock()
	s.runCtx = ctx
	for _, e := range s.models {
		s.start(e)
	}
	s.mu.Unlock()
	defer s.runs.Wait()
	if s.opts.File == "" {
		<-ctx.Done()
		return
	}
	every(ctx, s.opts.Defaults.Poll, func() {
		s.Reload() //nolint:errcheck // logged and in Status
	})
}

// Reload applies the models file if it changed since it was last read
// (Run calls it every Poll; a caller may too, on a signal say): the error of a change refused is logged once and kept in
// SetStatus.FileError, and the models served stay.
func (s *Set) Reload() error {
	if s.opts.File == "" {
		return errors.New("serve: the Set has no models file")
	}
	s.reloading.Lock()
	defer s.reloading.Unlock()
	specs, sum, err := ReadModels(s.opts.File)
	if err == nil && sum == s.fileSum {
		return nil
	}
	if err == nil {
		s.fileSum = sum // tried once per change, whatever comes of it
		err = s.apply(specs)
	}
	if err != nil {
		s.mu.Lock()
		changed := s.fileErr != err.Error()
		s.fileErr = err.Error()
		s.mu.Unlock()
		if changed {
			s.opts.Defaults.Logger.Error("models file refused: the models served stay", "file", s.opts.File, "err", err)
		}
	}
	return err
}

// Close drops every model: requests in flight end, then the servers are
// closed. Call it after Run returned.
func (s *Set) Close() error {
	s.mu.Lock()
	for name, e := range s.models {
		delete(s.models, name)
		s.drop(e)
	}
	s.mu.Unlock()
	s.runs.Wait()
	return nil
}

// enter finds the model a request names ("": the only model, or the one
// named "default") and counts the request in it until done is called.
func (s *Set) enter(name string) (srv *Server, done func(), err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.models[name]
	if name == "" {
		if e, ok = s.models["default"]; !ok && len(s.models) == 1 {
			e, ok = s.models[s.names()[0]]
		}
		if !ok {
			return nil, nil, fmt.Errorf("%w: name one of %s (?model=NAME)", ErrUnknownModel, strings.Join(s.names(), ", "))
		}
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q (this server serves %s)", ErrUnknownModel, name, strings.Join(s.names(), ", "))
	}
	e.reqs.Add(1)
	return e.srv, e.reqs.Done, nil
}

// names returns the models' names, sorted; the caller holds mu.
func (s *Set) names() []string {
	return slices.Sorted(maps.Keys(s.models))
}

// Server returns the server of model name ("": as a request naming none)
// and the func to call when done with it: the model is not dropped
// before.
func (s *Set) Server(name string) (*Server, func(), error) { return s.enter(name) }

// SetStatus is what a Set's GET /status answers: each model's Status by
// name (each Memory's values and tables are the model's; its heap,
// runtime and rss the process's, shared by the models), and the models
// file's error.
type SetStatus struct {
	Models map[string]Status `json:"models"`
	// File is the models file; FileError why its last change was not
	// applied ("" when it was).
	File      string `json:"file,omitempty"`
	FileError string `json:"file_error,omitempty"`
}

// Status returns the Set's models' status.
func (s *Set) Status() SetStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := SetStatus{Models: map[string]Status{}, File: s.opts.File, FileError: s.fileErr}
	for name, e := range s.models {
		st.Models[name] = e.srv.Status()
	}
	return st
}

// ReadModels reads a models file (SetOptions.File): YAML (or JSON) of the
// form
//
//	models:
//	  - name: ctr
//	    store: /exports/ctr
//	  - name: ctr-exp
//	    store: hdfs://namenode:9000/exports/ctr-exp
//	    max_bytes: 2147483648       # Model.MaxBytes
//	    limits: {max_in_flight: 4}  # Model.Limits, the -max-* flags' names
//
// decoded strictly (an unknown key is an error) and validated
// (ValidateModels); a relative local store is taken from the file's
// directory. It returns the models and the file's contents.
func ReadModels(path string) ([]Model, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("serve: models file: %w", err)
	}
	var f struct {
		Models []Model `yaml:"models"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, "", fmt.Errorf("serve: models file %s: %w", path, err)
	}
	for i, m := range f.Models {
		if m.Store != "" && !strings.Contains(m.Store, "://") && !filepath.IsAbs(m.Store) {
			f.Models[i].Store = filepath.Join(filepath.Dir(path), m.Store)
		}
	}
	if err := ValidateModels(f.Models); err != nil {
		return nil, "", fmt.Errorf("serve: models file %s: %w", path, err)
	}
	return f.Models, string(b), nil
}

// StoreFlag is the serve command's -store flag, which may be repeated:
// each value LOC (a model named "default") or NAME=LOC adds a model.
type StoreFlag []Model

func (f *StoreFlag) String() string {
	var parts []string
	for _, m := range *f {
		parts = append(parts, m.Name+"="+m.Store)
	}
	return strings.Join(parts, " ")
}

// Set adds the model of v (flag.Value).
func (f *StoreFlag) Set(v string) error {
	name, loc, ok := strings.Cut(v, "=")
	if !ok || !validName.MatchString(name) || strings.Contains(name, "/") {
		name, loc = "default", v
	}
	if loc == "" {
		return fmt.Errorf("%q: want LOC or NAME=LOC", v)
	}
	*f = append(*f, Model{Name: name, Store: loc})
	return nil
}
