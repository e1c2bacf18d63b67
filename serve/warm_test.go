package serve_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/model/metrics"
)

// TestWarmStart: a new cluster whose job starts from another job's export
// (job.warm_start) and trains on one batch scores the test set as well as
// the exported model did, where the same job started cold scores near
// chance.
func TestWarmStart(t *testing.T) {
	store, test, trained := trainAndExport(t, "libffm", export.FP32)
	labels := testLabels(t, test)
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(store), "train.libffm")) // trainAndExport's
	if err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "one-batch.libffm") // 64 training samples
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(one, []byte(strings.Join(lines[:64], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	auc := func(name, warm string) float64 {
		cfg := smallJob("libffm", 8, []string{one}, test, filepath.Join(dir, name+".scores"))
		cfg.Train.Epochs = 1
		cfg.Job.WarmStart = warm
		return metrics.AUC(labels, runJob(t, cfg))
	}
	base, warm, cold := metrics.AUC(labels, trained), auc("warm", store), auc("cold", "")
	t.Logf("test AUC: the exported model %.4f; warm-started + 1 batch %.4f; cold + 1 batch %.4f", base, warm, cold)
	if warm < base-0.02 || warm < cold+0.05 {
		t.Fatalf("warm start: AUC %.4f, the export's model %.4f, cold %.4f", warm, base, cold)
	}
}

// testLabels reads the labels of a libFFM file.
func testLabels(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, "1") {
			out = append(out, 1)
		} else {
			out = append(out, 0)
		}
	}
	return out
}
