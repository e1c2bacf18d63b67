package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
)

// TestInMemoryEstimate: train.in_memory prints its estimate of the data's
// memory before it loads, and refuses data whose estimate exceeds
// train.memory_limit with an error naming both and the way out.
func TestInMemoryEstimate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.libffm")
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "%d 0:u%d:1 1:i%d:1 2:c%d:1\n", i%2, i%50, i%300, i%7)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := withJob(smallConfig(), []string{path}, nil)
	cfg.Train.InMemory, cfg.Train.MemoryLimit = true, 1000
	var progress strings.Builder
	_, err := LoadData(job.Options{Config: cfg, Progress: &progress}, []reader.FileSplit{{Path: path}})
	if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "would take about") ||
		!strings.Contains(err.Error(), "above train.memory_limit") || !strings.Contains(err.Error(), "leave train.in_memory off") {
		t.Fatalf("in memory above the limit: %v", err)
	}
	if !strings.Contains(progress.String(), "worker-0: train.in_memory: the training data (0 MiB of files) takes about") {
		t.Errorf("no estimate printed before loading:\n%s", progress.String())
	}
	cfg.Train.MemoryLimit = 1 << 30
	d, err := LoadData(job.Options{Config: cfg}, []reader.FileSplit{{Path: path}})
	if err != nil || !strings.Contains(d.Desc, "in memory, chunks of up to") {
		t.Fatalf("in memory under the limit: %v, %q", err, d.Desc)
	}
}

// TestShuffledSplits: the order of the splits changes with the epoch and
// is the same for the same epoch and seed; the splits of one file stay in
// their order (a file source reads them forward).
func TestShuffledSplits(t *testing.T) {
	var splits []reader.FileSplit
	for f := range 4 {
		for k := range 3 {
			splits = append(splits, reader.FileSplit{Path: fmt.Sprintf("f%d", f), Start: int64(k * 100), End: int64(k*100 + 100)})
		}
	}
	e1, e2 := shuffledSplits(splits, 1, 1), shuffledSplits(splits, 1, 2)
	if slices.Equal(e1, splits) || slices.Equal(e1, e2) || !slices.Equal(e1, shuffledSplits(splits, 1, 1)) {
		t.Errorf("orders: epoch 1 %v, epoch 2 %v", e1, e2)
	}
	for _, order := range [][]reader.FileSplit{e1, e2} {
		if len(order) != len(splits) {
			t.Fatalf("%d splits, want %d", len(order), len(splits))
		}
		last := map[string]int64{}
		for _, sp := range order {
			if s, ok := last[sp.Path]; ok && sp.Start < s {
				t.Errorf("%v: the splits of %s out of order", order, sp.Path)
			}
			last[sp.Path] = sp.Start
		}
		if _, err := reader.NewFileSource(order, reader.FileSourceOptions{Decoder: mustDecoder(t)}); err != nil {
			t.Errorf("a file source refuses the order: %v", err)
		}
	}
}

func mustDecoder(t *testing.T) reader.Decoder {
	d, err := reader.NewDecoder(reader.LibFFM)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestGeneratedStream: worker 1 of 3's share of the generated data is
// every third group; opened at any position it gave, the stream goes on
// with exactly the groups after it.
func TestGeneratedStream(t *testing.T) {
	dc := smallConfig().Data
	dc.TrainSamples = 3000
	read := func(start reader.Position) (pos []reader.Position, samples int) {
		s, err := openGenerated(dc, 1, 3, 16, start)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		g := new(reader.Group)
		for s.Next(t.Context(), g) == nil {
			pos, samples = append(pos, g.Pos), samples+g.NumSamples()
		}
		return pos, samples
	}
	all, n := read(reader.Position{})
	if n < 900 || n > 1100 {
		t.Fatalf("worker 1 of 3 got %d of %d samples", n, dc.TrainSamples)
	}
	for k, p := range all {
		if p.Offset%3 != 1 {
			t.Fatalf("group %d at %v: not worker 1's", k, p)
		}
		if k%25 == 0 {
			if rest, _ := read(p); !slices.Equal(rest, all[k:]) {
				t.Fatalf("opened at %v: %d groups, want %d", p, len(rest), len(all)-k)
			}
		}
	}
	if _, err := openGenerated(dc, 0, 1, 16, reader.Position{File: "train.libffm"}); !errors.Is(err, reader.ErrBadPosition) {
		t.Errorf("a file position: %v", err)
	}
}
