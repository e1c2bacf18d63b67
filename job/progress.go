package job

import "time"

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
}
