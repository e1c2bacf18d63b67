package ctrtrain

import (
	"math"
	"strings"
	"testing"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/tracker"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestEarlyStoppingKeepsBest trains a model that overfits a small
// training set (its validation logloss falls, then rises) with patience
// 2: the job stops early, rolls the cluster back to the pinned snapshot
// of the best validation, and ends on it. The kept model is the best one:
// validated again it scores the best figure exactly, and the job saves it
// as its final model.
func TestEarlyStoppingKeepsBest(t *testing.T) {
	ctx := testutil.JobCtx(t)
	cfg := overfitConfig(t)
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
	checkKeptBest(t, res, cfg)
}

// TestEarlyStoppingSeveralWorkers: the first worker validates and rolls
// the cluster back; the second, training on, is rolled back with it and
// ends with the kept model too.
func TestEarlyStoppingSeveralWorkers(t *testing.T) {
	ctx := testutil.JobCtx(t)
	cfg := overfitConfig(t)
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/early-stop-workers", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	res := runWorkers(t, ctx, 2, 0, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	r := res[0]
	if r.Best == nil || r.Ended == "" || len(r.Valid) < 4 || r.Valid[len(r.Valid)-1].When != tracker.KeptModel {
		t.Fatalf("worker 0: best %+v, ended on best %q, %d validations: want an early stop on the kept model", r.Best, r.Ended, len(r.Valid))
	}
	// The other worker trains on between the best validation and the
	// pinned snapshot: the kept model is that snapshot, near the
	// validated one, not it exactly.
	t.Logf("best logloss %.4f after %s; the kept model's %.4f; %s", r.Best.Value, r.Best.When, float64(r.Valid[len(r.Valid)-1].LogLoss), r.Ended)
	if res[1].Best != nil || res[1].TestAUC != res[0].TestAUC {
		t.Fatalf("worker 1: best %+v, test AUC %v; want no validation of its own and worker 0's final AUC %v",
			res[1].Best, res[1].TestAUC, res[0].TestAUC)
	}
}

// overfitConfig is a job that overfits its small training set: the
// validation logloss falls, then rises; patience 2, a snapshot store.
func overfitConfig(t *testing.T) config.Config {
	cfg := smallConfig()
	cfg.Data.TrainSamples, cfg.Data.ValidSamples = 1500, 3000
	cfg.Train.Epochs, cfg.Train.Patience, cfg.Train.ValidMetric = 30, 2, config.MetricLogLoss
	cfg.Model.Hidden = []int{64, 32}
	cfg.Model.Tables[0].Dim = 16
	cfg.Model.Tables[0].Optimizer.LR = 0.5
	cfg.Model.DenseOptimizer.LR = 0.01
	cfg.Snapshot = snapshot.Policy{Store: t.TempDir(), Every: -1, Keep: 1}
	return cfg
}

// checkKeptBest checks that res, the first worker's, ended early on the
// best model of its validations.
func checkKeptBest(t *testing.T, res JobResult, cfg config.Config) {
	t.Helper()
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

// TestHoldoutIsNeverTrained: with job.holdout 5 on two files shared by 2
// workers (shuffled through windows), the first worker validates on the
// groups reader.HeldOut holds out of every file, and the workers train
// every other sample, once per epoch: the two add up to the data.
func TestHoldoutIsNeverTrained(t *testing.T) {
	ctx := testutil.JobCtx(t)
	dir := t.TempDir()
	const perFile = 3000
	train := writeGenFiles(t, dir, 8, 2, perFile)
	var held int64
	for _, p := range train {
		src, err := reader.OpenFiles([]reader.FileSplit{{Path: p}}, reader.LibFFM, reader.StopOnBad)
		if err != nil {
			t.Fatal(err)
		}
		n, _, err := reader.Digest(ctx, reader.Holdout(src, 5, true))
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		held += n
	}
	cfg := withWorkers(withJob(smallConfig(), train, nil), 2)
	cfg.Train.Format, cfg.Job.Holdout = "libffm", 5
	cfg.Model.Fields = genConfig(8).Fields
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/holdout-test", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	res := startWorkers(t, ctx, 2, 0, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()}, nil)()
	trained := res[0].Samples + res[1].Samples
	if want := int64(cfg.Train.Epochs) * (2*perFile - held); held < 400 || trained != want {
		t.Fatalf("%d samples held out of %d; trained %d, want %d", held, 2*perFile, trained, want)
	}
	if len(res[0].Valid) == 0 || int64(res[0].Valid[0].Samples) != held {
		t.Fatalf("validations %+v, want each of the %d held-out samples", res[0].Valid, held)
	}
}
