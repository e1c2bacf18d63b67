package ctrtrain

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
)

// TestPositionText: the summary names a file and a byte, a partition and
// an offset, a generated group, a chunk of a shuffle window (issue 21,
// item 7: no "memory@44684#0").
func TestPositionText(t *testing.T) {
	for _, c := range []struct {
		p    reader.Position
		want string
	}{
		{reader.Position{}, ""},
		{reader.Position{File: GeneratedName, Offset: 250152}, "generated at group 250152"},
		{reader.Position{File: reader.WindowName(reader.Position{File: "a.libffm", Offset: 512}), Offset: 7, Index: 2},
			"chunk 7 of the shuffle window at a.libffm at byte 512, sample 2 of the chunk"},
		{reader.Position{File: reader.WindowName(reader.Position{File: GeneratedName, Offset: 9})}, "generated at group 9, where the next shuffle window starts"},
		{reader.Position{File: "train.libffm", Offset: 4096}, "train.libffm at byte 4096"},
		{reader.Position{File: "u.group", Offset: 10, Index: 3}, "u.group at byte 10, sample 3 of its group"},
		{reader.Position{File: "kafka://ctr/2", Offset: 77}, "kafka://ctr/2 at offset 77"},
	} {
		if got := positionText(c.p); got != c.want {
			t.Errorf("positionText(%v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestProgressLineLoss: while the run is in its first epoch, the run's
// progressive logloss is the epoch's loss and is printed once; later
// epochs print both figures.
func TestProgressLineLoss(t *testing.T) {
	p := job.Progress{Worker: "w", Epoch: 1, Epochs: 2, Loss: 0.42701, AUC: math.NaN(), RunningAUC: 0.75, RunningLogLoss: 0.42699, Lag: -1, Rows: -1}
	line := progressLine(&p, nil)
	if strings.Count(line, "0.4270") != 1 || !strings.Contains(line, "(running auc 0.7500)") {
		t.Errorf("first epoch: %q, want the loss once", line)
	}
	p.Epoch, p.Loss, p.RunningLogLoss = 2, 0.3862, 0.4110
	if line := progressLine(&p, nil); !strings.Contains(line, "loss 0.3862") || !strings.Contains(line, "(running auc 0.7500 logloss 0.4110)") {
		t.Errorf("second epoch: %q, want both figures", line)
	}
}

// TestFormatHint: a file read in the wrong format fails at its first
// line with a hint at -format naming the format it looks like.
func TestFormatHint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.txt")
	if err := os.WriteFile(path, []byte("1 3:1 5:0.5\n0 2:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := withJob(smallConfig(), []string{path}, nil)
	cfg.Train.Format = "libffm"
	_, err := LoadData(job.Options{Config: cfg}, []reader.FileSplit{{Path: path}})
	if !errors.Is(err, reader.ErrMalformed) || !strings.Contains(err.Error(), "read as libffm, but the file looks like libfm: give -format libfm") {
		t.Fatalf("LoadData of a libfm file as libffm: %v, want a hint at -format libfm", err)
	}
	cfg.Train.Format = "libfm"
	d, err := LoadData(job.Options{Config: cfg}, []reader.FileSplit{{Path: path}})
	if err != nil || !strings.Contains(d.Desc, "format libfm") {
		t.Fatalf("LoadData as libfm: %v, %q", err, d.Desc)
	}
}
