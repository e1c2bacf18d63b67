package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/xdlgo/xps/ams"
)

// TestKindDefaults (issue 47): a kind given alone gets its own sparse
// defaults, Adagrad from an accumulator of 1e-4 at the kind's learning rate, for the
// six kinds of the zoo, whether named by a flag or with other changes; the
// wide part's table shares them; din, dien and the SLIDE output keep
// TensorFlow's start; a table the user lists keeps what it says.
func TestKindDefaults(t *testing.T) {
	want := map[string]float32{KindMLP: 0.1, KindLR: 0.05, KindWDL: 0.05, KindFM: 0.15, KindDeepFM: 0.15, KindDCNv2: 0.05}
	for kind, lr := range want {
		for _, args := range [][]string{{"-set", "model.kind=" + kind}, {"-dim", "8", "-set", "model.kind=" + kind}} {
			c := loadArgs(t, "", args...)
			for _, tb := range c.Model.Tables {
				o := tb.Optimizer
				if o.Name != ams.OptAdagrad || o.LR != lr || o.InitialAccumulator != ZooAccumulator || o.Eps != ZooEps {
					t.Errorf("%v: table %s optimizer %+v; want adagrad %v from PyTorch's start", args, tb.Name, o, lr)
				}
			}
			if kind == KindLR && (c.Model.Tables[0].Dim != 1 && len(args) == 2 || c.Model.Tables[0].Init.Kind != ams.InitZeros) {
				t.Errorf("%v: lr's table %+v; want dim 1 from zeros", args, c.Model.Tables[0])
			}
		}
	}
	slide := loadArgs(t, "", "-output", "slide", "-format", "xml").Model.Tables[0].Optimizer
	for what, o := range map[string]ams.OptimizerSpec{"din": kindTable(KindDIN, "").Optimizer, "dien": kindTable(KindDIEN, "").Optimizer, "-output slide": slide} {
		o.EnsureDefaults()
		if o.LR != 0.05 || o.InitialAccumulator != ams.DefaultInitialAccumulator {
			t.Errorf("%s: optimizer %+v; want TensorFlow's start at 0.05", what, o)
		}
	}
	// A file that lists no tables takes the tables of the kind a flag names.
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte("train: {epochs: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := loadArgs(t, file, "-set", "model.kind=deepfm", "-dim", "8").Model.Tables[0]; o.Optimizer.LR != 0.15 || o.Dim != 8 {
		t.Errorf("a file without tables, -set model.kind=deepfm -dim 8: table %+v; want deepfm's lr 0.15 at dim 8", o)
	}
	c := loadArgs(t, "", "-set", "model.kind=fm", "-set", "model.tables[0].optimizer.initial_accumulator=0.1", "-lr", "0.3")
	if o := c.Model.Tables[0].Optimizer; o.LR != 0.3 || o.InitialAccumulator != 0.1 {
		t.Errorf("fm with the user's optimizer settings: %+v", o)
	}
}
