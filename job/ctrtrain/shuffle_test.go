package ctrtrain

import (
	"errors"
	"fmt"
	"math"
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

// TestShuffledBlocks: the splits cut into blocks cover them exactly; the
// blocks' order changes with the epoch, is the same for the same epoch and
// seed, and a file source takes it (AnyOrder).
func TestShuffledBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.libffm")
	if err := os.WriteFile(path, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	splits := []reader.FileSplit{{Path: path, End: 450}, {Path: path, Start: 450}, {Path: "b", Start: 100, End: 130}}
	blocks, err := cutBlocks(nil, splits, 100)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]int64{}
	for _, b := range blocks {
		if b.End-b.Start > 100 || b.End <= b.Start {
			t.Errorf("block %v", b)
		}
		covered[b.Path] += b.End - b.Start
	}
	if len(blocks) != 12 || covered[path] != 1000 || covered["b"] != 30 {
		t.Errorf("%d blocks covering %v: %v", len(blocks), covered, blocks)
	}
	e1, e2 := shuffledBlocks(blocks, 1, 1), shuffledBlocks(blocks, 1, 2)
	if slices.Equal(e1, blocks) || slices.Equal(e1, e2) || !slices.Equal(e1, shuffledBlocks(blocks, 1, 1)) {
		t.Errorf("orders: epoch 1 %v, epoch 2 %v", e1, e2)
	}
	if _, err := reader.NewFileSource(e1, reader.FileSourceOptions{Decoder: mustDecoder(t), AnyOrder: true}); err != nil {
		t.Errorf("a file source refuses the order: %v", err)
	}
	if whole, err := cutBlocks(nil, splits, math.MaxInt64); err != nil || !slices.Equal(whole, []reader.FileSplit{{Path: path, End: 450},
		{Path: path, Start: 450, End: 1000}, {Path: "b", Start: 100, End: 130}}) {
		t.Errorf("splits measured whole: %v, %v", whole, err)
	}
	if _, err := cutBlocks(nil, []reader.FileSplit{{Path: filepath.Join(t.TempDir(), "none")}}, 100); err == nil {
		t.Error("a missing file cut into blocks")
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
