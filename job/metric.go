package job

import (
	"encoding/json"
	"math"
)

// Metric is a figure of a model's summary that may be undefined: the AUC
// of a test set of one class, the loss of no sample. Undefined is NaN or
// ±Inf, which JSON numbers cannot hold (encoding/json fails on them), so a
// Metric encodes them as null, and decodes null as NaN; a defined Metric
// encodes as a float64 does. A summary that holds a Metric says why it is
// undefined in a note beside it.
type Metric float64

// Defined reports whether m is a number: neither NaN nor infinite.
func (m Metric) Defined() bool {
	f := float64(m)
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

// MarshalJSON encodes m as a JSON number, or null when it is undefined.
func (m Metric) MarshalJSON() ([]byte, error) {
	if !m.Defined() {
		return []byte("null"), nil
	}
	return json.Marshal(float64(m))
}

// UnmarshalJSON decodes a JSON number, or null as NaN.
func (m *Metric) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = Metric(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*m = Metric(f)
	return nil
}
