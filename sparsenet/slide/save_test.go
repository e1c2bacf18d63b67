package slide

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func saveCfg(fam Kind) Config {
	return Config{Dim: 3000, InputDim: 16, Sparsity: 0.05, Family: fam, Seed: 3, Threads: 2,
		Schedule: Schedule{RehashBase: 4, RedrawPeriod: 6, SliceNeurons: 1000}}
}

// A saved layer loads into a fresh one with the same config: the same
// parameters and state byte for byte, the same dense predictions, hash
// tables that hold every neuron, and training goes on from there.
func TestSaveLoad(t *testing.T) {
	for _, tc := range []struct {
		fam     Kind
		batches int
	}{{KindDWTA, 9}, {KindSimHash, 9}, {KindDWTA, 7}} { // 9: after a redraw; 7: during one
		fam := tc.fam
		t.Run(fmt.Sprint(fam, tc.batches), func(t *testing.T) {
			cfg := saveCfg(fam)
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			trainBatches(t, a, cfg, tc.batches) // redraw period 6, 3 slices
			var buf bytes.Buffer
			if err := a.Save(&buf); err != nil {
				t.Fatal(err)
			}
			if int64(buf.Len()) != a.SaveSize() {
				t.Fatalf("Save wrote %d bytes, SaveSize says %d", buf.Len(), a.SaveSize())
			}
			b, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Load(bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := b.Save(&again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Fatal("the loaded layer saves different bytes")
			}
			x, ls := benchBatch(16, cfg.InputDim, cfg.Dim, 99)
			pa, pb := make([]int32, 16*5), make([]int32, 16*5)
			a.PredictDense(x, 16, 5, pa)
			b.PredictDense(x, 16, 5, pb)
			if !slices.Equal(pa, pb) {
				t.Fatalf("dense predictions differ: %v vs %v", pa, pb)
			}
			tabs := b.Tables()
			for id := int32(0); id < int32(cfg.Dim); id++ {
				for tb := 0; tb < tabs.L(); tb++ {
					if _, ok := tabs.Code(id, tb); !ok {
						t.Fatalf("neuron %d is in no bucket of table %d after Load", id, tb)
					}
				}
			}
			if b.Steps(int(ls[0][0])) != a.Steps(int(ls[0][0])) {
				t.Fatal("step counts differ")
			}
			loss, err := b.TrainBatch(x, 16, ls, nil)
			if err != nil || !(loss > 0) {
				t.Fatalf("training the loaded layer: loss %v, err %v", loss, err)
			}
		})
	}
}

// Load refuses what is not a layer of its shape, and streams cut short.
func TestLoadRefuses(t *testing.T) {
	cfg := saveCfg(KindDWTA)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	other := cfg
	other.Dim = 2000
	for _, tc := range []struct {
		name string
		cfg  Config
		data []byte
	}{
		{"empty", cfg, nil},
		{"not a layer", cfg, []byte("hello, this is not a layer at all, not even close")},
		{"cut in the header", cfg, good[:20]},
		{"cut in the arrays", cfg, good[:len(good)-5]},
		{"trailing bytes", cfg, append(slices.Clone(good), 0)},
		{"other version", cfg, func() []byte { b := slices.Clone(good); b[8] = 9; return b }()},
		{"other shape", other, good},
		{"other family", func() Config { c := cfg; c.Family = KindSimHash; return c }(), good},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.Load(bytes.NewReader(tc.data)); !errors.Is(err, ErrBadSave) {
				t.Fatalf("Load = %v, want ErrBadSave", err)
			}
		})
	}
}

// TestSaveLoadDense: a layer trained densely (sparsity 1: no hash tables,
// no rehash schedule) saves and loads too, byte for byte.
func TestSaveLoadDense(t *testing.T) {
	cfg := saveCfg(KindDWTA)
	cfg.Sparsity = 1
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	trainBatches(t, a, cfg, 3)
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Load(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("loading a dense layer: %v", err)
	}
	var again bytes.Buffer
	if err := b.Save(&again); err != nil || !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatalf("the loaded dense layer saves different bytes (%v)", err)
	}
}

// trainBatches trains a on n batches of 32 and maintains it after each.
func trainBatches(t *testing.T, a *Layer, cfg Config, n int) {
	t.Helper()
	for i := range n {
		x, ls := benchBatch(32, cfg.InputDim, cfg.Dim, uint64(i))
		if _, err := a.TrainBatch(x, 32, ls, nil); err != nil {
			t.Fatal(err)
		}
		a.Maintain()
	}
}
