package job

import (
	"encoding/json"
	"fmt"
	"time"
)

// Progress is a worker's report on its training, made every
// train.progress_every (the figures of its progress line) and after each
// evaluation on the test set. Figures that are undefined (an AUC of a
// window with one class, a test set not evaluated yet) are NaN.
type Progress struct {
	// Worker is the worker's member name; Time when the report was made.
	Worker string    `json:"worker"`
	Time   time.Time `json:"time"`
	// Epoch is the epoch being trained, of Epochs.
	Epoch  int `json:"epoch"`
	Epochs int `json:"epochs"`
	// Batches and Samples trained so far in this attempt.
	Batches int64 `json:"batches"`
	Samples int64 `json:"samples"`
	// SamplesPerSecond since the previous report.
	SamplesPerSecond float64 `json:"samples_per_second"`
	// Loss is the running training loss of the epoch.
	Loss float64 `json:"loss"`
	// AUC is the progressive AUC of the training predictions since the
	// previous report; RunningAUC and RunningLogLoss those of the run.
	AUC            float64 `json:"auc"`
	RunningAUC     float64 `json:"running_auc"`
	RunningLogLoss float64 `json:"running_logloss"`
	// TestAUC and TestLogLoss are the latest evaluation's.
	TestAUC     float64 `json:"test_auc"`
	TestLogLoss float64 `json:"test_logloss"`
	// Lag is the source's lag (Kafka: messages behind the partitions'
	// ends), -1 without one.
	Lag int64 `json:"lag"`
	// Rows and RowBytes the shards hold, over every table, with the
	// counters of admission, expiry and the budget; -1 when the shards did
	// not answer in time.
	Rows        int64 `json:"rows"`
	RowBytes    int64 `json:"row_bytes"`
	NotAdmitted int64 `json:"not_admitted"`
	Expired     int64 `json:"expired"`
	Evicted     int64 `json:"evicted"`
	// ColdRows are the rows of tiered tables on disk, and HitRatio the
	// share of their lookups that found the row in DRAM (both 0 without
	// a tiered table).
	ColdRows int64   `json:"cold_rows"`
	HitRatio float64 `json:"dram_hit_ratio"`
	// Valid is the validation this report was made for (a report made
	// right after the model was scored on the validation set), nil in
	// the others.
	Valid *Validation `json:"valid,omitempty"`
}

// Validation is a figure of the model on the validation set: when it was
// taken ("epoch 2", "batch 300"), by which metric (train.valid_metric),
// and its value (always defined: a validation that gives no figure ends
// the job).
type Validation struct {
	When   string  `json:"when"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
}

// progressJSON is Progress with its float figures as Metrics, so that an
// undefined one (NaN, ±Inf) is null in JSON; the embedded fields are
// Progress's, shadowed by the Metrics of the same names.
type progressJSON struct {
	progressFields
	SamplesPerSecond Metric `json:"samples_per_second"`
	Loss             Metric `json:"loss"`
	AUC              Metric `json:"auc"`
	RunningAUC       Metric `json:"running_auc"`
	RunningLogLoss   Metric `json:"running_logloss"`
	TestAUC          Metric `json:"test_auc"`
	TestLogLoss      Metric `json:"test_logloss"`
}

// progressFields has Progress's fields without its methods.
type progressFields Progress

// MarshalJSON encodes p as a JSON object, an undefined figure (NaN) as
// null: the record a worker publishes for the status page
// (controlplane.PutProgress).
func (p Progress) MarshalJSON() ([]byte, error) {
	return json.Marshal(progressJSON{progressFields: progressFields(p),
		SamplesPerSecond: Metric(p.SamplesPerSecond), Loss: Metric(p.Loss), AUC: Metric(p.AUC),
		RunningAUC: Metric(p.RunningAUC), RunningLogLoss: Metric(p.RunningLogLoss),
		TestAUC: Metric(p.TestAUC), TestLogLoss: Metric(p.TestLogLoss)})
}

// UnmarshalJSON decodes what MarshalJSON encodes, null as NaN.
func (p *Progress) UnmarshalJSON(b []byte) error {
	var j progressJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Progress(j.progressFields)
	p.SamplesPerSecond, p.Loss, p.AUC = float64(j.SamplesPerSecond), float64(j.Loss), float64(j.AUC)
	p.RunningAUC, p.RunningLogLoss = float64(j.RunningAUC), float64(j.RunningLogLoss)
	p.TestAUC, p.TestLogLoss = float64(j.TestAUC), float64(j.TestLogLoss)
	return nil
}

// EpochsText is how a summary names n epochs trained: "1 epoch", "3
// epochs", or "a stream" for a stream (which has no epochs).
func EpochsText(n int, stream bool) string {
	switch {
	case stream:
		return "a stream"
	case n == 1:
		return "1 epoch"
	}
	return fmt.Sprintf("%d epochs", n)
}
