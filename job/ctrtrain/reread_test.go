package ctrtrain

import (
	"slices"
	"testing"

	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/tests/testutil"
)

// everyIDGroups returns n one-sample groups of two fields whose values
// cycle through 4 and 3 ids, so that every batch of 12 or more samples
// holds every id of the data.
func everyIDGroups(n int) []*reader.Group {
	out := make([]*reader.Group, n)
	for i := range out {
		g := new(reader.Group)
		g.Reset(1)
		g.AddLine(0, 0, []uint32{0, 1}, []uint64{uint64(i%4) + 1, uint64(i%3) + 11}, []float32{1, 1})
		g.AddLabels(float32((i * 7 / 3) % 2))
		out[i] = g
	}
	return out
}

// TestRereadSharedMatchesSequential trains the same data pipelined with
// train.reread_shared and sequentially (every push applied before the
// next pull): where every batch shares all its rows with the batch before
// it, each batch must train on the same rows and dense parameters in
// both, so the trained dense parameters are equal bit for bit. Pipelined
// without the fresh read, a batch's rows miss the update of the batch
// before it.
func TestRereadSharedMatchesSequential(t *testing.T) {
	groups := everyIDGroups(64 * 30)
	test := everyIDGroups(200)
	shape := ctr.Shape{Fields: 2, Levels: []int{0, 0}}
	dense := map[string][]float32{}
	for _, m := range []struct {
		name             string
		pipeline, reread bool
	}{{"sequential", false, false}, {"reread", true, true}} {
		t.Run(m.name, func(t *testing.T) {
			_, cl := startCluster(t, 2)
			cfg := pipelineConfig(m.pipeline)
			cfg.Train.Epochs = 2
			cfg.Train.RereadShared = &m.reread
			tr := newTrainer(t, cl, Options{Config: cfg, Shape: shape, Train: memOpen(groups, false), Test: test})
			res, err := tr.Run(testutil.JobCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			// Every batch but each pass's first shares its 7 ids with the
			// batch before it.
			want := int64(0)
			if m.reread {
				want = 7 * (res.Batches - int64(cfg.Train.Epochs))
			}
			if res.RereadRows != want {
				t.Fatalf("%d rows read again in %d batches of %d epochs, want %d", res.RereadRows, res.Batches, cfg.Train.Epochs, want)
			}
			params := make([]float32, tr.DenseParams())
			if err := cl.PullDense(testutil.JobCtx(t), ctr.DenseName, params); err != nil {
				t.Fatal(err)
			}
			dense[m.name] = params
		})
	}
	seq, rr := dense["sequential"], dense["reread"]
	if len(seq) == 0 || !slices.Equal(seq, rr) {
		diff := 0
		for i := range min(len(seq), len(rr)) {
			if seq[i] != rr[i] {
				diff++
			}
		}
		t.Fatalf("the dense parameters trained with reread_shared differ from sequential training's in %d of %d values", diff, len(seq))
	}
}
