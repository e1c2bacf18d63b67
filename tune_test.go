package xps

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/xdlgo/xps/autotune"
	"github.com/xdlgo/xps/config"
)

// TestTuneNeedsLocal: a job that asks for autotuning on a running
// cluster is refused with the reason; one that does not is returned as
// it is.
func TestTuneNeedsLocal(t *testing.T) {
	var o config.Overrides
	o.Add("test", "train.autotune", "true")
	o.Add("test", "data.valid_samples", "100")
	cfg, err := config.Build(&o)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Tune(context.Background(), cfg, false, autotune.Options{}); !errors.Is(err, ErrTuneNotLocal) {
		t.Fatalf("autotune on a running cluster: %v", err)
	}
	cfg.Train.Autotune = false
	if got, r, err := Tune(context.Background(), cfg, false, autotune.Options{}); err != nil || r != nil || got.Train.Autotune {
		t.Fatalf("no autotune: %v %v", r, err)
	}
}

// TestResultJSONCarriesTheSearch: the JSON summary is the model's result
// with the search under "autotune".
func TestResultJSONCarriesTheSearch(t *testing.T) {
	r := Result{CTR: &CTRResult{Data: "d"}, Autotune: &autotune.Result{Metric: "auc", Stopped: 3}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	a, ok := m["autotune"].(map[string]any)
	if m["data"] != "d" || !ok || a["stopped_early"] != 3.0 {
		t.Fatalf("%s", b)
	}
}
