package job

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// FuzzProgressJSON reads arbitrary bytes as a worker's progress record,
// as the status page and the scheduler read it from etcd: no input
// panics; a record that decodes encodes to JSON (its undefined figures as
// null, never as NaN, which JSON cannot hold) that decodes to the same
// record; and a Metric decodes a number or null only, null as NaN.
func FuzzProgressJSON(f *testing.F) {
	for _, s := range []string{
		`{"worker":"worker-0","time":"2025-01-02T03:04:05Z","epoch":1,"epochs":2,"batches":7,"samples":700,` +
			`"samples_per_second":1234.5,"loss":0.5,"auc":null,"running_auc":0.7,"running_logloss":null,"test_auc":null,` +
			`"test_logloss":null,"lag":-1,"rows":9,"dram_hit_ratio":0.25}`,
		`{"loss":1e308,"auc":-0,"test_auc":"x"}`,
		`null`,
		`{"auc":null,"auc":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Metric
		if err := json.Unmarshal(b, &m); err == nil {
			var f float64
			switch {
			case string(bytes.TrimSpace(b)) == "null":
				if !math.IsNaN(float64(m)) {
					t.Fatalf("Metric %q decodes as %v, want NaN", b, m)
				}
			case json.Unmarshal(b, &f) != nil || math.Float64bits(f) != math.Float64bits(float64(m)):
				t.Fatalf("Metric %q decodes as %v; as a float64 %v", b, m, f)
			}
		}
		var p Progress
		if json.Unmarshal(b, &p) != nil {
			return
		}
		enc, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("progress %q decodes as %+v, which does not encode: %v", b, p, err)
		}
		var back Progress
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("progress %q encodes as %s, which does not decode: %v", b, enc, err)
		}
		if again, err := json.Marshal(back); err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("progress %q encodes as %s, which decodes to %+v and encodes as %s (%v)", b, enc, back, again, err)
		}
	})
}
