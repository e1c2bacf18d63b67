package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Handler returns the server's HTTP/JSON API:
//
//	POST /predict   a Request as JSON (strict: see decodeRequest);
//	                answers a Response (400 for a request that cannot be
//	                scored or is over a limit of Options.Limits, 413 for a
//	                body over MaxBodyBytes, 503 before a model is loaded
//	                and, with Retry-After, while MaxInFlight requests are
//	                served)
//	GET  /healthz   200 once a model is loaded, 503 before
//	GET  /status    the served export, its trained samples and rows per
//	                table, as JSON
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /predict", s.handlePredict)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if seq, _ := s.Version(); seq == 0 {
			http.Error(w, ErrNotReady.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, s.Status())
	})
	return mux
}

// Handler returns the Set's HTTP/JSON API, the Server's (see
// Server.Handler) for the model a request names:
//
//	POST /predict?model=NAME   NAME's Predict; without ?model, the only
//	                           model or the one named "default"; 404 for
//	                           a model the Set does not serve
//	GET  /healthz              200 once every model is loaded, 503 before
//	GET  /status               SetStatus: every model's Status by name
//	GET  /status?model=NAME    NAME's Status
func (s *Set) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /predict", func(w http.ResponseWriter, r *http.Request) {
		srv, done, err := s.enter(r.URL.Query().Get("model"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		defer done()
		srv.handlePredict(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		var waiting []string
		for name, st := range s.Status().Models {
			if st.Export == 0 {
				waiting = append(waiting, name)
			}
		}
		if len(waiting) > 0 {
			slices.Sort(waiting)
			http.Error(w, fmt.Sprintf("%v: %s", ErrNotReady, strings.Join(waiting, ", ")), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("model")
		if name == "" {
			writeJSON(w, s.Status())
			return
		}
		srv, done, err := s.enter(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		defer done()
		writeJSON(w, srv.Status())
	})
	return mux
}

func (s *Server) handlePredict(w http.ResponseWriter, r *http.Request) {
	release := s.acquire(r.ContentLength)
	if release == nil {
		s.count("http", "overloaded")
		w.Header().Set("Retry-After", "1")
		http.Error(w, ErrOverloaded.Error(), http.StatusServiceUnavailable)
		return
	}
	defer release()
	lim := s.opts.Limits.MaxBodyBytes
	if r.ContentLength > lim {
		s.count("http", "too_large")
		http.Error(w, fmt.Sprintf("serve: the body's %d bytes are over the limit, %d", r.ContentLength, lim), http.StatusRequestEntityTooLarge)
		return
	}
	req, err := decodeRequest(http.MaxBytesReader(w, r.Body, lim), r.ContentLength)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		s.count("http", "too_large")
		http.Error(w, fmt.Sprintf("serve: the body is over the limit, %d bytes", lim), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		s.count("http", "bad_request")
		http.Error(w, fmt.Sprintf("serve: bad request: %v", err), http.StatusBadRequest)
		return
	}
	resp, err := s.predict("http", req)
	switch {
	case errors.Is(err, ErrNotReady):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, ErrBadRequest):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		writeJSON(w, resp)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

// Status is what GET /status answers.
type Status struct {
	Store   string         `json:"store"`
	Export  uint64         `json:"export"`
	Full    uint64         `json:"full"`
	Samples int64          `json:"samples"`
	Rows    map[string]int `json:"rows,omitempty"`
	// Memory is the server's memory by part (see Memory).
	Memory Memory `json:"memory"`
	// Error is why the last look at the store applied nothing (an export
	// refused: corrupt, unlinked, over MaxBytes), "" when it succeeded.
	Error string `json:"error,omitempty"`
}

// Status returns the served version and its size.
func (s *Server) Status() Status {
	st := Status{Store: s.opts.Store, Memory: s.memory()}
	if e := s.lastErr.Load(); e != nil {
		st.Error = *e
	}
	r := s.cur.Load()
	if r == nil {
		return st
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	st.Export, st.Full, st.Samples, st.Rows = r.seq, r.full, r.samples, r.rows()
	return st
}
