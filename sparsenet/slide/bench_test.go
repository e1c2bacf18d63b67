package slide

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchBatch returns a batch of n ReLU-like inputs (half zeros) and 1-5
// random labels per sample.
func benchBatch(n, din, d int, seed uint64) ([]float32, [][]int32) {
	r := newRNG(seed, 1, 2)
	x := make([]float32, n*din)
	for i := range x {
		x[i] = float32(max(0, r.normal()))
	}
	labels := make([][]int32, n)
	for i := range labels {
		for j := 0; j <= r.IntN(5); j++ {
			labels[i] = append(labels[i], int32(r.IntN(d)))
		}
	}
	return x, labels
}

const benchN = 128

func benchTrain(b *testing.B, cfg Config, maintain bool) {
	l, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const batches = 8
	xs := make([][]float32, batches)
	ls := make([][][]int32, batches)
	for i := range xs {
		xs[i], ls[i] = benchBatch(benchN, cfg.InputDim, cfg.Dim, uint64(i))
	}
	dx := make([]float32, benchN*cfg.InputDim)
	// Warm up the buffers.
	if _, err := l.TrainBatch(xs[0], benchN, ls[0], dx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.TrainBatch(xs[i%batches], benchN, ls[i%batches], dx); err != nil {
			b.Fatal(err)
		}
		if maintain {
			l.Maintain()
		}
	}
	b.ReportMetric(float64(b.N*benchN)/b.Elapsed().Seconds(), "samples/s")
	if p := l.Params(); p.L > 0 {
		b.ReportMetric(float64(p.K), "K")
		b.ReportMetric(float64(p.L), "L")
		b.ReportMetric(float64(l.Tables().Bytes())/float64(cfg.Dim), "table-B/neuron")
	}
	b.ReportMetric(float64(l.ParamBytes())/float64(cfg.Dim), "param-B/neuron")
}

func cfg100K(sparsity float64, fam Kind) Config {
	return Config{Dim: 100000, InputDim: 128, Sparsity: sparsity, Family: fam, Seed: 1}
}

// TrainBatch alone (no table upkeep), batch 128.
func BenchmarkForwardBackwardSparse_D100K_DWTA(b *testing.B) {
	benchTrain(b, cfg100K(0.005, KindDWTA), false)
}
func BenchmarkForwardBackwardSparse_D100K_SimHash(b *testing.B) {
	benchTrain(b, cfg100K(0.005, KindSimHash), false)
}
func BenchmarkForwardBackwardDense_D100K(b *testing.B) { benchTrain(b, cfg100K(1, KindDWTA), false) }

// TrainBatch and Maintain with the default schedule from the start of
// training (period 50 batches: the most expensive phase).
func BenchmarkTrainMaintainSparse_D100K_DWTA(b *testing.B) {
	benchTrain(b, cfg100K(0.005, KindDWTA), true)
}

func benchPredict(b *testing.B, sparse bool, fam Kind) {
	cfg := cfg100K(0.005, fam)
	l, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	x, _ := benchBatch(benchN, cfg.InputDim, cfg.Dim, 5)
	out := make([]int32, benchN*5)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if sparse {
			l.PredictSparse(x, benchN, 5, out)
		} else {
			l.PredictDense(x, benchN, 5, out)
		}
	}
	b.ReportMetric(float64(b.N*benchN)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkPredictSparse_D100K_DWTA(b *testing.B) { benchPredict(b, true, KindDWTA) }
func BenchmarkPredictDense_D100K(b *testing.B)       { benchPredict(b, false, KindDWTA) }

func benchHash(b *testing.B, fam Kind, din, k, l int) {
	var f Family
	var err error
	if fam == KindSimHash {
		f, err = NewSimHash(din, k, l, 1.0/3, 1)
	} else {
		f, err = NewDWTA(din, k, l, 8, 1)
	}
	if err != nil {
		b.Fatal(err)
	}
	x, _ := benchBatch(1, din, 1, 1)
	out := make([]uint32, l)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Hash(x, out)
	}
}

// Hashing one 128-dim vector at the shape autotuned for d = 100K, s = 0.005.
func BenchmarkHash_DWTA_K15_L164(b *testing.B)    { benchHash(b, KindDWTA, 128, 15, 164) }
func BenchmarkHash_SimHash_K15_L164(b *testing.B) { benchHash(b, KindSimHash, 128, 15, 164) }

// Building the tables of 100K neurons from scratch (Rehash).
func BenchmarkRehash_D100K(b *testing.B) {
	for _, fam := range []Kind{KindDWTA, KindSimHash} {
		b.Run(fmt.Sprint(fam), func(b *testing.B) {
			l, err := New(cfg100K(0.005, fam))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l.Rehash()
			}
			b.ReportMetric(float64(b.N*l.d)/b.Elapsed().Seconds(), "neurons/s")
		})
	}
}

// The Amazon-670K shape of the speed figure (hidden 128, batch
// 128, s = 0.005): TrainBatch alone, and with the default upkeep.
func cfg670K() Config {
	return Config{Dim: 670091, InputDim: 128, Sparsity: 0.005, Family: KindSimHash, Seed: 1}
}
func BenchmarkTrainSparse_D670K_SimHash(b *testing.B)         { benchTrain(b, cfg670K(), false) }
func BenchmarkTrainMaintainSparse_D670K_SimHash(b *testing.B) { benchTrain(b, cfg670K(), true) }
func BenchmarkTrainMaintainSparse_D670K_DWTA(b *testing.B) {
	c := cfg670K()
	c.Family = KindDWTA
	benchTrain(b, c, true)
}

// Saving and loading the 670K-shape layer (what the extreme-classification
// job writes into a snapshot), through a file in the test's temporary
// directory. Load includes rebuilding the hash tables.
func BenchmarkSaveLoad_D670K(b *testing.B) {
	l, err := New(cfg670K())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	path := filepath.Join(b.TempDir(), "layer")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Save(f); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if f, err = os.Open(path); err != nil {
			b.Fatal(err)
		}
		if err := l.Load(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.ReportMetric(t1.Sub(t0).Seconds(), "save-s")
		b.ReportMetric(time.Since(t1).Seconds(), "load-s")
	}
	b.ReportMetric(float64(l.SaveSize())/1e6, "MB")
}
