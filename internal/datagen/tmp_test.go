package datagen

import (
	"os"
	"strconv"
	"testing"

	"github.com/xdlgo/xps/internal/metrics"
	"github.com/xdlgo/xps/reader"
)

func TestTmp(t *testing.T) {
	if os.Getenv("TMP") == "" {
		t.Skip()
	}
	f := func(k string) float64 { v, _ := strconv.ParseFloat(os.Getenv(k), 64); return v }
	cfg := Config{Seed: 11, SamplesPerUser: f("SPU"), RankScale: f("RS"), InteractionShare: f("SH"), LogitStd: f("STD"), MeanBag: f("MB")}
	g := mustNew(t, cfg)
	s := newStudent(0, uint32(g.Config().UserFields))
	for range 20 {
		ds := reader.NewDataset()
		g.Generate(ds, 10000)
		s.train(ds)
	}
	test := reader.NewDataset()
	probs := g.Generate(test, 30000)
	pred := make([]float32, test.Len())
	for i := range pred {
		_, fields, ids, _ := test.Sample(i)
		z, _, _ := s.logit(fields, ids)
		pred[i] = float32(sigmoid(z))
	}
	t.Logf("%+v: student %.4f bayes %.4f", cfg, metrics.AUC(test.Labels, pred), metrics.AUC(test.Labels, probs))
}
