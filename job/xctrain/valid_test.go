package xctrain

import (
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/tracker"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestEarlyStoppingKeepsBest is the Bibtex story of issue 27 on a small
// generated set: the SLIDE model overfits (validation P@1 peaks, then
// falls), the job stops early and ends on the best model, layer included:
// validated again it scores the best P@1 exactly, and the final test
// evaluation is the one after the best epoch (dense inference: sparse
// inference depends on hash tables drawn anew after the restore).
func TestEarlyStoppingKeepsBest(t *testing.T) {
	ctx := testutil.JobCtx(t)
	dir := t.TempDir()
	train := writeXC(t, dir, "train.txt", smallWorld, 0, 500)
	test := writeXC(t, dir, "test.txt", smallWorld, 1, 1000)
	valid := writeXC(t, dir, "valid.txt", smallWorld, 2, 1000)
	cfg := smallConfig()
	// Patience 1: the first validation that does not beat the best stops
	// the job. With 3 this layer's P@1 (HOGWILD training, whose course
	// follows the machine's timing) once beat its best at least every
	// third epoch for all 40, and the job never stopped early.
	cfg.Train.Epochs, cfg.Train.Patience, cfg.Train.ProgressEvery = 40, 1, time.Hour
	cfg.Model.Output.LearningRate = 0.02
	cfg.Snapshot = snapshot.Policy{Store: t.TempDir(), Every: -1, Keep: 1}
	cfg = withJob(cfg, []string{train}, []string{test}, 1)
	cfg.Job.Valid = []string{valid}
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/xctrain-early-stop", Config: cfg})
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
	best, vs := res.Best, res.Valid
	if best == nil || res.Ended == "" || len(vs) < 3 {
		t.Fatalf("best %+v, ended on best %q, %d validations: want an early stop on the best model", best, res.Ended, len(vs))
	}
	kept := vs[len(vs)-1]
	if kept.When != tracker.KeptModel || kept.Dense == nil || kept.Dense.P1 != best.Value {
		t.Fatalf("the last validation (%s) has %v, want the kept model's P@1, the best %v (%s)", kept.When, kept.Dense, best.Value, best.When)
	}
	var atBest *Eval
	for i, e := range res.Evals {
		if e.When == best.When {
			atBest = &res.Evals[i]
		}
	}
	last := res.Evals[len(res.Evals)-1]
	if atBest == nil || last.Dense == nil || atBest.Dense == nil || *last.Dense != *atBest.Dense {
		t.Fatalf("the final test evaluation %v is not the one after %s (%v)", last.Dense, best.When, atBest)
	}
	if res.Model == nil || res.Epochs >= cfg.Train.Epochs {
		t.Fatalf("saved model %+v after %d epochs: want one saved after an early stop", res.Model, res.Epochs)
	}
	t.Logf("best P@1 %.4f after %s; %s", best.Value, best.When, res.Ended)
}
