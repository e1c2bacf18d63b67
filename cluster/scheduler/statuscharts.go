package scheduler

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/xdlgo/xps/cluster/ops/plot"
	"github.com/xdlgo/xps/job"
)

// chart is one curve panel of the page: an inline <svg> element, or a note
// saying why there is none.
type chart struct {
	ID, Title, Note string
	SVG             template.HTML
}

// curve is a figure of the reports drawn as one series per worker; Suffix
// names the series after the worker's name when a chart draws several
// figures.
type curve struct {
	Suffix string
	Get    func(job.Progress) float64
}

// chartSpecs are the page's charts, in order.
var chartSpecs = []struct {
	id, title, ylabel string
	curves            []curve
	optional          bool // left out when no worker has a point
}{
	{"throughput", "Throughput", "samples/s", []curve{{"", func(p job.Progress) float64 { return p.SamplesPerSecond }}}, false},
	{"loss", "Training loss (running, of the epoch)", "log loss", []curve{{"", func(p job.Progress) float64 { return p.Loss }}}, false},
	{"auc", "AUC: window (since the last report), running (the run), test", "AUC", []curve{
		{" window", func(p job.Progress) float64 { return p.AUC }},
		{" running", func(p job.Progress) float64 { return p.RunningAUC }},
		{" test", func(p job.Progress) float64 { return p.TestAUC }}}, false},
	{"lag", "Kafka lag", "messages behind", []curve{{"", func(p job.Progress) float64 {
		if p.Lag < 0 {
			return math.NaN()
		}
		return float64(p.Lag)
	}}}, true},
}

// statusCharts draws the workers' reports: x is the time since the oldest
// report shown (seconds, or minutes past 10 minutes); undefined figures
// (NaN: no AUC of one class, no test set evaluated yet) are no points.
func statusCharts(d *statusData) []chart {
	var t0 time.Time
	for _, h := range d.Workers {
		if len(h.Reports) > 0 && (t0.IsZero() || h.Reports[0].Time.Before(t0)) {
			t0 = h.Reports[0].Time
		}
	}
	scale, unit := 1.0, "seconds"
	if d.Now.Sub(t0) > 10*time.Minute {
		scale, unit = 60, "minutes"
	}
	xlabel := fmt.Sprintf("%s since %s", unit, t0.UTC().Format("15:04:05 UTC"))
	var out []chart
	for _, spec := range chartSpecs {
		var series []plot.Series
		for _, h := range d.Workers {
			for _, c := range spec.curves {
				s := plot.Series{Name: h.Name + c.Suffix}
				for _, p := range h.Reports {
					if y := c.Get(p); defined(y) {
						s.X, s.Y = append(s.X, p.Time.Sub(t0).Seconds()/scale), append(s.Y, y)
					}
				}
				if len(s.X) > 0 {
					series = append(series, s)
				}
			}
		}
		c := chart{ID: spec.id, Title: spec.title}
		switch {
		case len(series) == 0 && spec.optional:
			continue
		case len(series) == 0:
			c.Note = "no progress reports yet"
		default:
			var b strings.Builder
			f := plot.Figure{Width: 900, PanelHeight: 280, Panels: []plot.Panel{{XLabel: xlabel, YLabel: spec.ylabel, Series: series}}}
			if err := f.WriteSVGElement(&b); err != nil {
				c.Note = err.Error()
				break
			}
			c.SVG = template.HTML(b.String()) // plot escapes every text it writes
		}
		out = append(out, c)
	}
	return out
}
