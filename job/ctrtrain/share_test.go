package ctrtrain

import (
	"strings"
	"testing"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestWorkersShareOneSmallFile runs two workers on one training file far
// smaller than job.split_bytes (the default, 64 MiB): the scheduler cuts
// it for both, and each trains a part (issue 21: worker-1 trained 0
// samples without a word). A file of one sample leaves one worker without
// samples: it says why, in its result and its summary, and still ends well.
func TestWorkersShareOneSmallFile(t *testing.T) {
	ctx := testutil.JobCtx(t)
	dir := t.TempDir()
	libffm := func(seed uint64, n int) string {
		gen, err := datagen.New(genConfig(seed))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if _, err := gen.WriteLibFFM(&b, n); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	body := libffm(3, 3000)
	small := writeFile(t, dir, "small.libffm", body)
	one := writeFile(t, dir, "one.libffm", body[:strings.IndexByte(body, '\n')+1])
	test := writeFile(t, dir, "test.libffm", libffm(4, 500))
	run := func(name, train string) [2]JobResult {
		lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/share-" + name,
			Config: config.Config{Job: config.JobConfig{Train: []string{train}, Workers: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		defer lc.Close()
		cfg := smallConfig()
		cfg.Train.Epochs = 1
		cfg.Model.Fields = genConfig(3).Fields
		r := runWorkers(t, ctx, 2, 0, job.Options{Config: withJob(cfg, []string{train}, []string{test}), Etcd: lc.Etcd(), Prefix: lc.Prefix()})
		return [2]JobResult{r[0], r[1]}
	}

	r := run("small", small)
	if r[0].Samples == 0 || r[1].Samples == 0 || r[0].Samples+r[1].Samples != 3000 {
		t.Errorf("workers trained %d and %d samples of 3000: want a part each", r[0].Samples, r[1].Samples)
	}
	if r[0].NoShare != "" || r[1].NoShare != "" {
		t.Errorf("no-share notes %q, %q", r[0].NoShare, r[1].NoShare)
	}

	r = run("one", one)
	if r[0].Samples+r[1].Samples != 1 {
		t.Fatalf("workers trained %d and %d samples of 1", r[0].Samples, r[1].Samples)
	}
	idle := r[0]
	if r[1].Samples == 0 {
		idle = r[1]
	}
	var sum strings.Builder
	idle.WriteSummary(&sum)
	want := "no training data for this worker: the scheduler divided " + one + " among 2 workers, and its share"
	if !strings.Contains(sum.String(), want) || r[0].TestSamples != 500 || r[1].TestSamples != 500 {
		t.Errorf("the idle worker's summary (want %q and 500 test samples each):\n%s", want, sum.String())
	}
}
