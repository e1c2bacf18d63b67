package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxRequestBytes bounds a request body.
const maxRequestBytes = 8 << 20

// Handler returns the server's HTTP/JSON API:
//
//	POST /predict   a Request as JSON; answers a Response (400 for a
//	                request that cannot be scored, 503 before a model is
//	                loaded)
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

func (s *Server) handlePredict(w http.ResponseWriter, r *http.Request) {
	var req Request
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, fmt.Sprintf("serve: bad request: %v", err), http.StatusBadRequest)
		return
	}
	resp, err := s.predict("http", &req)
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
}

// Status returns the served version and its size.
func (s *Server) Status() Status {
	st := Status{Store: s.opts.Store}
	r := s.cur.Load()
	if r == nil {
		return st
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	st.Export, st.Full, st.Samples, st.Rows = r.seq, r.full, r.samples, r.rows()
	return st
}
