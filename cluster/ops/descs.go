package ops

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Descs are the descriptions of a collector's metrics, by short name:
// what a collector that reads its figures at scrape time emits with
// prometheus.MustNewConstMetric.
type Descs map[string]*prometheus.Desc

// NewDescs describes the metrics <Namespace>_<subsystem>_<name> of rows
// of name, help and comma-separated label names ("": none).
func NewDescs(subsystem string, rows [][3]string) Descs {
	d := Descs{}
	for _, r := range rows {
		var labels []string
		if r[2] != "" {
			labels = strings.Split(r[2], ",")
		}
		d[r[0]] = prometheus.NewDesc(prometheus.BuildFQName(Namespace, subsystem, r[0]), r[1], labels, nil)
	}
	return d
}

// Describe sends every description, as a prometheus.Collector's Describe.
func (d Descs) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range d {
		ch <- desc
	}
}
