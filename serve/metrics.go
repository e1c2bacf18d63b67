package serve

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdlgo/xps/cluster/ops"
)

// metrics are the server's Prometheus metrics (Options.Metrics): requests
// and their latency by API and outcome, and the model served, read at each
// scrape.
type metrics struct {
	reg      prometheus.Registerer
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	model    modelCollector
}

// newMetrics registers s's metrics on reg (none if nil).
func newMetrics(s *Server, reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{reg: reg, model: modelCollector{s},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ops.Namespace, Subsystem: "serve", Name: "requests_total",
			Help: "Prediction requests, by API (http, grpc) and outcome (ok, bad_request, not_ready, error, overloaded, too_large)."}, []string{"api", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ops.Namespace, Subsystem: "serve", Name: "request_seconds",
			Help: "Latency of prediction requests, by API.", Buckets: ops.RPCBuckets}, []string{"api"}),
	}
	for i, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			for _, d := range m.collectors()[:i] {
				reg.Unregister(d)
			}
			return nil, fmt.Errorf("serve: its metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.latency, m.model}
}

// unregister withdraws the metrics from their registry (m may be nil).
func (m *metrics) unregister() {
	if m == nil {
		return
	}
	for _, c := range m.collectors() {
		m.reg.Unregister(c)
	}
}

// predict scores a request that came through api and observes it.
func (s *Server) predict(api string, req *Request) (*Response, error) {
	start := time.Now()
	resp, err := s.Predict(req)
	if m := s.metrics; m != nil {
		outcome := "ok"
		switch {
		case errors.Is(err, ErrNotReady):
			outcome = "not_ready"
		case errors.Is(err, ErrBadRequest):
			outcome = "bad_request"
		case err != nil:
			outcome = "error"
		}
		m.requests.WithLabelValues(api, outcome).Inc()
		m.latency.WithLabelValues(api).Observe(time.Since(start).Seconds())
	}
	return resp, err
}

// count counts a request of api refused before it was scored, with its
// outcome ("overloaded", "too_large", "bad_request").
func (s *Server) count(api, outcome string) {
	if m := s.metrics; m != nil {
		m.requests.WithLabelValues(api, outcome).Inc()
	}
}

// modelCollector reports the model served: its export, the samples it
// was trained on, its rows by table, and the server's memory by part.
type modelCollector struct{ s *Server }

var (
	exportDesc  = prometheus.NewDesc("xps_serve_model_export", "Sequence number of the export served (0: none loaded).", nil, nil)
	samplesDesc = prometheus.NewDesc("xps_serve_model_samples", "Samples the served model was trained on.", nil, nil)
	rowsDesc    = prometheus.NewDesc("xps_serve_model_rows", "Rows of the served model, by table.", []string{"table"}, nil)
	memoryDesc  = prometheus.NewDesc("xps_serve_memory_bytes",
		"The server's memory by part (values, tables, heap, runtime, rss; see /status and serve.Memory).", []string{"part"}, nil)
)

func (c modelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- exportDesc
	ch <- samplesDesc
	ch <- rowsDesc
	ch <- memoryDesc
}

func (c modelCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Status()
	ch <- prometheus.MustNewConstMetric(exportDesc, prometheus.GaugeValue, float64(st.Export))
	ch <- prometheus.MustNewConstMetric(samplesDesc, prometheus.GaugeValue, float64(st.Samples))
	for t, n := range st.Rows {
		ch <- prometheus.MustNewConstMetric(rowsDesc, prometheus.GaugeValue, float64(n), t)
	}
	m := st.Memory
	for _, p := range []struct {
		part  string
		bytes int64
	}{{"values", m.Values}, {"tables", m.Tables}, {"heap", m.Heap}, {"runtime", m.Runtime}, {"rss", m.RSS}} {
		ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, float64(p.bytes), p.part)
	}
}
