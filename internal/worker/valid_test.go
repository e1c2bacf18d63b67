package worker

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/testutil"
	"github.com/xdlgo/xps/internal/tracker"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/snapshot"
)

// TestEarlyStoppingKeepsBest trains a model that overfits a small
// training set (its validation logloss falls, then rises) with patience
// 2: the job stops early, rolls the cluster back to the pinned snapshot
// of the best validation, and ends on it. The kept model is the best one:
// validated again it scores the best figure exactly, and the job saves it
// as its final model.
func TestEarlyStoppingKeepsBest(t *testing.T) {
	ctx := testutil.Ctx(t, 4*time.Minute)
	cfg := smallConfig()
	cfg.Data.TrainSamples, cfg.Data.ValidSamples = 1500, 3000
	cfg.Train.Epochs, cfg.Train.Patience, cfg.Train.ValidMetric = 30, 2, config.MetricLogLoss
	cfg.Model.Hidden = []int{64, 32}
	cfg.Model.Tables[0].Dim = 16
	cfg.Model.Tables[0].Optimizer.LR = 0.5
	cfg.Model.DenseOptimizer.LR = 0.01
	store := t.TempDir()
	cfg.Snapshot = snapshot.Policy{Store: store, Every: -1, Keep: 1}
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/early-stop-test", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	var progress strings.Builder
	res, err := RunJob(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &progress})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	best, valid := res.Best, res.Valid
	if best == nil || res.Ended == "" || len(valid) < 4 {
		t.Fatalf("best %+v, ended on best %q, %d validations: want an early stop on the best model", best, res.Ended, len(valid))
	}
	kept := valid[len(valid)-1]
	if kept.When != tracker.KeptModel || float64(kept.LogLoss) != best.Value {
		t.Fatalf("the last validation (%s) has logloss %v, want the kept model's, the best %v (%s)", kept.When, kept.LogLoss, best.Value, best.When)
	}
	rose := false
	for _, v := range valid[:len(valid)-1] {
		if float64(v.LogLoss) < best.Value {
			t.Fatalf("validation after %s has logloss %v below the kept best %v", v.When, v.LogLoss, best.Value)
		}
		rose = rose || float64(v.LogLoss) > best.Value && v.When != best.When && !math.IsNaN(float64(v.LogLoss))
	}
	if !rose || valid[len(valid)-2].When == best.When {
		t.Fatalf("the validation logloss never rose after the best (%s): %+v", best.When, valid)
	}
	if res.Epochs == cfg.Train.Epochs {
		t.Errorf("the job trained all %d epochs: it did not stop early", res.Epochs)
	}
	var atBest []Eval
	for _, e := range res.Evals {
		if e.When == best.When {
			atBest = append(atBest, e)
		}
	}
	if last := res.Evals[len(res.Evals)-1]; last.When != "final" || len(atBest) != 1 || last.AUC != atBest[0].AUC || res.TestAUC != last.AUC {
		t.Fatalf("the final test evaluation (%s: AUC %v) is not the one after %s (%d of them)", last.When, last.AUC, best.When, len(atBest))
	}
	if res.Model == nil {
		t.Fatal("the job saved no final model")
	}
	t.Logf("best logloss %.4f after %s; stopped: %s; final model snapshot %d", best.Value, best.When, res.Ended, res.Model.Seq)
}
