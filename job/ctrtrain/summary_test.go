package ctrtrain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestSummaryUndefinedFigures runs a job whose test set has one class: its
// test AUC is undefined, and the JSON summary says null and why (it failed
// to encode before), as does the text summary, which also counts the
// malformed line skipped. A run that trains no sample (every epoch done
// before) has undefined progressive figures, which encode too.
func TestSummaryUndefinedFigures(t *testing.T) {
	lc, cl := startCluster(t, 1)
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	train := write("train.libffm", "1 0:a:1 1:b:1\n0 0:c:1 1:d:1\n1 0:a:1 1:x:oops\n1 0:a:1 1:d:1\n0 0:c:1 1:b:1\n")
	test := write("test.libffm", "1 0:a:1 1:b:1\n1 0:c:1 1:d:1\n")
	cfg := withJob(smallConfig(), []string{train}, []string{test})
	cfg.Train.Epochs, cfg.Train.OnError = 1, "skip"
	ctx := testutil.JobCtx(t)
	res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 4 || res.Skipped != 1 || res.TestSamples != 2 || res.TestAUC.Defined() || res.TestAUCNote != noteTestOneClass {
		t.Fatalf("result %+v, want 4 samples, 1 skipped, an undefined AUC on 2 test samples", res.Result)
	}
	var text strings.Builder
	res.WriteSummary(&text)
	for _, want := range []string{": trained 4 samples (1 epoch) in ", "; skipped 1 malformed line\n",
		": test AUC undefined (one class), logloss "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, text.String())
		}
	}
	t.Logf("summary:\n%s", text.String())
	if strings.Contains(text.String(), "NaN") {
		t.Errorf("the summary prints NaN:\n%s", text.String())
	}
	var got struct {
		TestAUC     *float64 `json:"test_auc"`
		TestLogLoss *float64 `json:"test_logloss"`
		TestAUCNote string   `json:"test_auc_note"`
		Evals       []struct {
			AUC     *float64 `json:"auc"`
			AUCNote string   `json:"auc_note"`
		} `json:"evals"`
	}
	decodeSummary(t, res, &got)
	if got.TestAUC != nil || got.TestLogLoss == nil || got.TestAUCNote != "the test set has one class: AUC is undefined" ||
		len(got.Evals) != 1 || got.Evals[0].AUC != nil || got.Evals[0].AUCNote != got.TestAUCNote {
		t.Fatalf("JSON summary %+v, want a null test AUC with its note", got)
	}

	// Every epoch was done before: the run trains nothing, and evaluates.
	d, err := LoadData(job.Options{Config: cfg}, []reader.FileSplit{{Path: train}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrainer(t, cl, Options{Config: cfg, Shape: d.Shape, Test: d.Test, Train: d.FromStart(),
		Start: Checkpoint{Epoch: 1, EpochDone: true}})
	r, err := tr.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Progressive
	if r.Samples != 0 || p.Samples != 0 || p.AUC.Defined() || p.LogLoss.Defined() || p.AUCNote != noteNoProgressive || r.TestSamples != 2 {
		t.Fatalf("result %+v, want no sample trained, undefined progressive figures, and an evaluation", r)
	}
	var prog struct {
		Progressive map[string]any `json:"progressive"`
	}
	decodeSummary(t, JobResult{Result: r}, &prog)
	if pa, ok := prog.Progressive["auc"]; !ok || pa != nil || prog.Progressive["logloss"] != nil || prog.Progressive["auc_note"] != noteNoProgressive {
		t.Fatalf("JSON progressive %v, want null figures with their note", prog.Progressive)
	}
}

// decodeSummary encodes res as the worker's -json does and decodes it into
// v.
func decodeSummary(t *testing.T, res JobResult, v any) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("the summary does not encode: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}
