package job

import (
	"encoding/json"
	"math"
	"testing"
)

// TestMetricJSON checks that undefined metrics encode as null (encoding/json
// fails on a NaN float64) and come back undefined, and defined ones encode
// as float64s do.
func TestMetricJSON(t *testing.T) {
	type figures struct {
		AUC  Metric   `json:"auc"`
		Loss Metric   `json:"loss"`
		Inf  Metric   `json:"inf"`
		Opt  *Metric  `json:"opt,omitempty"`
		All  []Metric `json:"all"`
	}
	half := Metric(0.5)
	in := figures{AUC: Metric(math.NaN()), Loss: 0.6931471805599453, Inf: Metric(math.Inf(-1)), Opt: &half,
		All: []Metric{1e-7, Metric(math.Inf(1))}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"auc":null,"loss":0.6931471805599453,"inf":null,"opt":0.5,"all":[1e-7,null]}`
	if string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
	if fb, _ := json.Marshal([]float64{0.6931471805599453, 1e-7}); string(fb) != `[0.6931471805599453,1e-7]` {
		t.Fatalf("float64s encode as %s: the want above is stale", fb)
	}
	var out figures
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.AUC.Defined() || out.Inf.Defined() || out.All[1].Defined() || out.Loss != in.Loss || *out.Opt != 0.5 || out.All[0] != 1e-7 {
		t.Fatalf("decoded %+v", out)
	}
	if err := json.Unmarshal([]byte(`{"auc":"x"}`), &out); err == nil {
		t.Fatal("a string decoded as a Metric")
	}
}
