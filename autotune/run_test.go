package autotune

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/ctrtrain"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/tests/testutil"
)

// smallJob is a job on a little generated data with a validation set.
func smallJob(t *testing.T) config.Config {
	var c config.Config
	c.Model.Hidden = []int{16, 8}
	c.Train.BatchSize, c.Train.Epochs = 64, 2
	c.Train.Autotune = true
	c.Data = config.DataConfig{TrainSamples: 4000, TestSamples: 1000, ValidSamples: 1000,
		Config: datagen.Config{Fields: 6, UserFields: 2, Vocab: 300, MeanBag: 2}}
	c.Autotune.Trials = 3
	c.Autotune.Output = filepath.Join(t.TempDir(), "winner.yaml")
	return c
}

// TestRunSmall: a search of 3 settings (the job's own and 2 drawn) in one
// round of 5,333 samples each (2 runs of 8,000 shared by 3), the winner the best of them by
// validation AUC, written as a YAML file that builds to the winner's
// configuration with autotune off.
func TestRunSmall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race build runs one search (TestRunResumes): the trials' code is the same")
	}
	var progress testutil.Buffer
	res, err := Run(testutil.JobCtx(t), Options{Sources: []config.Source{smallJob(t)}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Log(progress.String())
	if res.Plan.Rounds != 1 || res.Plan.First != 5333 || len(res.Trials) != 3 || res.Stopped != 3 {
		t.Fatalf("plan %+v, %d trials, %d stopped early", res.Plan, len(res.Trials), res.Stopped)
	}
	best := res.Trials[0]
	for _, tr := range res.Trials {
		if !tr.Figure.Defined() || tr.Trained < tr.Samples-64 || tr.Trained > tr.Samples+3*64 {
			t.Fatalf("trial %+v", tr)
		}
		if tr.Figure > best.Figure {
			best = tr
		}
	}
	if res.Winner.String() != best.Settings.String() || res.Figure != best.Figure || res.Searched < 3*5270 {
		t.Fatalf("winner %s %v, best trial %+v; searched %d", res.Winner, res.Figure, best, res.Searched)
	}
	written, err := config.Load(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if written.Train.Autotune || !strings.Contains(progress.String(), "the winner is setting") {
		t.Fatalf("the written configuration autotunes again, or no winner line:\n%s", progress.String())
	}
	a, _ := written.Marshal()
	b, _ := res.Config.Marshal()
	if string(a) != string(b) {
		t.Fatalf("the written file builds to\n%s\nthe winner's configuration is\n%s", a, b)
	}
}

// TestTrialsNeverReadTheTestSet: a search over files whose job.test names
// a file that does not exist runs every trial and chooses its winner (no
// trial read the test set), and the winner's configuration keeps the
// test set for the job that trains it. Without job.valid the trials
// validate on a tenth of the training groups held out (job.holdout),
// which the winner's job keeps. Kinds are searched too: the winner's
// kind brings its own defaults.
func TestTrialsNeverReadTheTestSet(t *testing.T) {
	if raceEnabled {
		t.Skip("the race build runs one search (TestRunResumes): the trials' code is the same")
	}
	dir := t.TempDir()
	write := func(name string, seed uint64, n int) string {
		gen, err := datagen.New(datagen.Config{Fields: 6, UserFields: 2, Vocab: 300, MeanBag: 2, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := gen.WriteLibFFM(f, n); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var c config.Config
	c.Job.Train = []string{write("train.libffm", 1, 4000)}
	c.Job.Test = []string{filepath.Join(dir, "absent.libffm")}
	c.Train.BatchSize, c.Train.Autotune = 64, true
	c.Autotune = config.AutotuneConfig{Trials: 4, Budget: "6x", Kinds: []string{config.KindFM, config.KindDeepFM}, Output: filepath.Join(dir, "w.yaml")}
	var progress testutil.Buffer
	res, err := Run(testutil.JobCtx(t), Options{Sources: []config.Source{c}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Log(progress.String())
	if len(res.Trials) != 4+2 || !slices.Equal(res.Config.Job.Test, c.Job.Test) || res.Config.Job.Holdout != config.DefaultHoldout {
		t.Fatalf("%d trials; the winner's test set %v, holdout %d", len(res.Trials), res.Config.Job.Test, res.Config.Job.Holdout)
	}
	want := res.Winner.Kind
	if want == "" {
		want = config.KindMLP
	}
	if res.Config.Model.Kind != want || want == config.KindFM && len(res.Config.Model.Hidden) != 0 {
		t.Fatalf("winner %s: kind %s, hidden %v", res.Winner, res.Config.Model.Kind, res.Config.Model.Hidden)
	}
}

// TestRunResumes: with a model root, the promoted trials go on from their
// models (each trains its round's samples less its round before's), the
// losers' models are removed, and the winner's job, given the result's
// configuration, goes on from the winner's model to the end of its run,
// exactly once.
func TestRunResumes(t *testing.T) {
	ctx := testutil.JobCtx(t)
	c := smallJob(t)
	c.Autotune.Trials = 4    // rounds of 4 and 2
	c.Autotune.Budget = "2x" // rounds of 1,600 and 4,800 samples, then the winner's run to 8,000
	root := t.TempDir()
	var progress testutil.Buffer
	res, err := Run(ctx, Options{Sources: []config.Source{c}, Progress: &progress, ModelRoot: root})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	p := res.Plan
	if !p.Resume || p.Rounds != 2 || len(res.Trials) != 6 {
		t.Fatalf("plan %+v, %d trials", p, len(res.Trials))
	}
	for _, tr := range res.Trials[4:] {
		if add := p.Samples(1) - p.Samples(0); tr.Trained < add-64 || tr.Trained > add+3*64 {
			t.Fatalf("a promoted trial trained %d samples; its round adds %d", tr.Trained, add)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "autotune-*", "*"))
	if len(dirs) != 1 || dirs[0] != res.Config.Snapshot.Store || res.Config.Job.ID == "" {
		t.Fatalf("models left %v; the winner's job resumes %q from %s", dirs, res.Config.Job.ID, res.Config.Snapshot.Store)
	}
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Config: res.Config})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	var out testutil.Buffer
	final, err := ctrtrain.RunJob(ctx, job.Options{Config: res.Config, Etcd: lc.Etcd(), Prefix: lc.Prefix(), Progress: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if final.ExactlyOnce == nil || !strings.Contains(out.String(), "resuming at epoch") {
		t.Fatalf("the winner's job did not go on from its model, exactly once: %+v\n%s", final.ExactlyOnce, out.String())
	}
	if got := final.Samples + p.Samples(1); got < p.Run-64 || got > p.Run+3*64 {
		t.Fatalf("the winner's job trained %d samples after the trials' %d: %d, a run is %d", final.Samples, p.Samples(1), got, p.Run)
	}
}
