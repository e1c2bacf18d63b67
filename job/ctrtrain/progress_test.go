package ctrtrain

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/xdlgo/xps/job"
)

// TestOnProgress: without a progress writer, OnProgress alone gets the
// reports (samples growing, the shards' rows counted) and one report per
// evaluation, with the test figures the result holds.
func TestOnProgress(t *testing.T) {
	_, cl := startCluster(t, 2)
	groups := genGroups(t, 3000, 1)
	cfg := pipelineConfig(true)
	cfg.Train.ProgressEvery = time.Nanosecond // a report after every batch
	var reports []job.Progress
	tr := newTrainer(t, cl, Options{Config: cfg, Shape: genShape, Train: memOpen(groups, true), Test: groups[:200],
		Name: "w", OnProgress: func(p job.Progress) { reports = append(reports, p) }})
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) < 2 {
		t.Fatalf("%d reports; want one per batch and one for the evaluation", len(reports))
	}
	var last int64
	for _, p := range reports[:len(reports)-1] {
		if p.Worker != "w" || p.Samples < last || p.Rows <= 0 || math.IsNaN(p.Loss) {
			t.Fatalf("report %+v after %d samples: want worker w, samples not falling, rows > 0, a loss", p, last)
		}
		last = p.Samples
	}
	eval := reports[len(reports)-1]
	if eval.TestAUC != float64(res.TestAUC) || eval.Samples != res.Samples {
		t.Errorf("evaluation report %+v; want test AUC %v after %d samples", eval, res.TestAUC, res.Samples)
	}
}
