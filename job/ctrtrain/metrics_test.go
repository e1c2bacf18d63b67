package ctrtrain

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/xdlgo/xps/job"
)

// TestProgressMetrics: reports move the counter by the samples trained
// (a new attempt counting from 0 adds what it trains again) and set the
// gauges; an undefined figure leaves its gauge alone.
func TestProgressMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	on := ProgressMetrics(reg)
	nan := math.NaN()
	on(job.Progress{Samples: 1000, SamplesPerSecond: 500, Epoch: 1, Loss: 0.5, AUC: 0.7, RunningAUC: 0.69, RunningLogLoss: 0.45, TestAUC: nan, TestLogLoss: nan, Lag: 12, Rows: 99})
	if n, _ := testutil.GatherAndCount(reg, "xps_worker_logloss"); n != 1 {
		t.Errorf("%d log loss series before any evaluation; want 1 (running): no test series before it is defined", n)
	}
	on(job.Progress{Samples: 3000, SamplesPerSecond: 1000, Epoch: 1, Loss: 0.4, AUC: nan, RunningAUC: 0.7, RunningLogLoss: 0.44, TestAUC: 0.75, TestLogLoss: 0.4, Lag: -1, Rows: -1})
	on(job.Progress{Samples: 500, SamplesPerSecond: nan, Loss: nan, AUC: nan, RunningAUC: nan, RunningLogLoss: nan, TestAUC: nan, TestLogLoss: nan, Lag: -1, Rows: -1})
	want := `
# HELP xps_worker_samples_trained_total Samples trained by this worker (an attempt after a rollback counts again what it re-trains).
# TYPE xps_worker_samples_trained_total counter
xps_worker_samples_trained_total 3500
# HELP xps_worker_auc AUC: window (training predictions since the previous report), running (progressive, the whole run) and test.
# TYPE xps_worker_auc gauge
xps_worker_auc{kind="running"} 0.7
xps_worker_auc{kind="test"} 0.75
xps_worker_auc{kind="window"} 0.7
# HELP xps_worker_kafka_lag Messages behind the ends of the worker's Kafka partitions.
# TYPE xps_worker_kafka_lag gauge
xps_worker_kafka_lag 12
# HELP xps_worker_samples_per_second Training rate since the previous progress report.
# TYPE xps_worker_samples_per_second gauge
xps_worker_samples_per_second 1000
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "xps_worker_samples_trained_total", "xps_worker_auc",
		"xps_worker_kafka_lag", "xps_worker_samples_per_second"); err != nil {
		t.Error(err)
	}
}
