package scheduler

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdlgo/xps/cluster/ops"
)

// metricsCollector reports the scheduler's view of the cluster when
// Prometheus scrapes: the figures of its status page (statusData, a few
// etcd reads bounded by statusTimeout).
type metricsCollector struct {
	s     *Scheduler
	descs ops.Descs
}

// schedulerMetrics are the collector's gauges: name, help, label.
var schedulerMetrics = [][3]string{
	{"leader", "1 when this scheduler leads the cluster, else 0.", ""},
	{"cluster_version", "The cluster version (of the state this scheduler knows).", ""},
	{"cluster_state", "1 for the cluster's state (label state).", "state"},
	{"members", "Registered members, by kind.", "kind"},
	{"snapshot_seq", "Sequence number of the newest snapshot result.", ""},
	{"snapshot_seconds", "Time the newest snapshot took to write.", ""},
	{"snapshot_timestamp_seconds", "When the newest snapshot was taken (Unix time).", ""},
	{"snapshot_ok", "1 when the newest snapshot succeeded, 0 when it failed.", ""},
	{"snapshot_applied_samples", "Samples applied that the newest snapshot holds.", ""},
	{"export_seq", "Sequence number of the newest model export.", ""},
	{"export_seconds", "Time the newest export took the shards to write.", ""},
	{"export_pause_seconds", "Time the workers were paused for the newest export.", ""},
	{"export_timestamp_seconds", "When the newest export was written (Unix time).", ""},
	{"export_bytes", "Size of the newest export's files.", ""},
	{"kafka_lag", "Messages behind the ends of the topic, summed over the workers' latest reports.", ""},
	{"quarantined_records", "etcd records this scheduler quarantined (no process of the job wrote them: reported and ignored).", ""},
}

// Collector returns a Prometheus collector of the scheduler's view
// (xps_scheduler_*): leadership, cluster state and version, members, the
// newest snapshot and export and their durations, the Kafka lag.
func (s *Scheduler) Collector() prometheus.Collector {
	return &metricsCollector{s: s, descs: ops.NewDescs("scheduler", schedulerMetrics)}
}

func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) { c.descs.Describe(ch) }

func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.s.statusData(context.Background())
	emit := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	emit("leader", b2f(d.Leading))
	emit("quarantined_records", float64(c.s.Quarantined()))
	emit("cluster_version", float64(d.Version))
	if d.State != "" {
		emit("cluster_state", 1, d.State)
	}
	kinds := map[string]int{}
	for _, m := range d.Members {
		kinds[string(m.Kind)]++
	}
	for k, n := range kinds {
		emit("members", float64(n), k)
	}
	if len(d.Snapshots) > 0 {
		r := d.Snapshots[0]
		emit("snapshot_seq", float64(r.Seq))
		emit("snapshot_seconds", r.Seconds)
		emit("snapshot_timestamp_seconds", float64(r.Time.UnixNano())/1e9)
		emit("snapshot_ok", b2f(r.Error == ""))
		emit("snapshot_applied_samples", float64(r.Applied))
	}
	if len(d.Exports) > 0 {
		r := d.Exports[0]
		emit("export_seq", float64(r.Seq))
		emit("export_seconds", r.Seconds)
		emit("export_pause_seconds", r.PauseSeconds)
		emit("export_timestamp_seconds", float64(r.Time.UnixNano())/1e9)
		emit("export_bytes", float64(r.Bytes))
	}
	lag, any := 0.0, false
	for _, w := range d.Workers {
		if n := len(w.Reports); n > 0 && w.Reports[n-1].Lag >= 0 {
			lag, any = lag+float64(w.Reports[n-1].Lag), true
		}
	}
	if any {
		emit("kafka_lag", lag)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
