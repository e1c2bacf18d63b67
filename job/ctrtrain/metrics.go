package ctrtrain

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdlgo/xps/cluster/ops"
	"github.com/xdlgo/xps/job"
)

// ProgressMetrics registers a worker's training metrics on reg and returns
// the job.Options.OnProgress that updates them from each report:
//
//	xps_worker_samples_trained_total   samples trained (rate() is the training rate)
//	xps_worker_samples_per_second      the rate since the previous report
//	xps_worker_epoch                   the epoch being trained
//	xps_worker_loss                    the running training loss of the epoch
//	xps_worker_auc{kind}               window, running (progressive) and test AUC
//	xps_worker_logloss{kind}           running and test log loss
//	xps_worker_kafka_lag               messages behind the partitions' ends
//	xps_worker_shard_rows              rows the shards hold, over every table
//
// An undefined figure (NaN) leaves its gauge unchanged.
func ProgressMetrics(reg prometheus.Registerer) func(job.Progress) {
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ops.Namespace, Subsystem: "worker", Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	vec := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ops.Namespace, Subsystem: "worker", Name: name, Help: help}, []string{"kind"})
		reg.MustRegister(g)
		return g
	}
	trained := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ops.Namespace, Subsystem: "worker", Name: "samples_trained_total",
		Help: "Samples trained by this worker (an attempt after a rollback counts again what it re-trains)."})
	reg.MustRegister(trained)
	rate := gauge("samples_per_second", "Training rate since the previous progress report.")
	epoch := gauge("epoch", "The epoch being trained.")
	loss := gauge("loss", "Running training loss of the epoch.")
	auc := vec("auc", "AUC: window (training predictions since the previous report), running (progressive, the whole run) and test.")
	logloss := vec("logloss", "Log loss: running (progressive) and test.")
	lag := gauge("kafka_lag", "Messages behind the ends of the worker's Kafka partitions.")
	rows := gauge("shard_rows", "Rows the shards hold, over every table.")
	var (
		mu   sync.Mutex
		last int64
	)
	set := func(g prometheus.Gauge, v float64) {
		if !math.IsNaN(v) {
			g.Set(v)
		}
	}
	setKind := func(g *prometheus.GaugeVec, kind string, v float64) {
		if !math.IsNaN(v) { // no series of a figure never defined
			g.WithLabelValues(kind).Set(v)
		}
	}
	return func(p job.Progress) {
		mu.Lock()
		if d := p.Samples - last; d > 0 {
			trained.Add(float64(d))
		} else if d < 0 { // a new attempt counts from 0
			trained.Add(float64(p.Samples))
		}
		last = p.Samples
		mu.Unlock()
		set(rate, p.SamplesPerSecond)
		if p.Epoch > 0 {
			epoch.Set(float64(p.Epoch))
		}
		set(loss, p.Loss)
		setKind(auc, "window", p.AUC)
		setKind(auc, "running", p.RunningAUC)
		setKind(auc, "test", p.TestAUC)
		setKind(logloss, "running", p.RunningLogLoss)
		setKind(logloss, "test", p.TestLogLoss)
		if p.Lag >= 0 {
			lag.Set(float64(p.Lag))
		}
		if p.Rows >= 0 {
			rows.Set(float64(p.Rows))
		}
	}
}
