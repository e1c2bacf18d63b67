package xctrain

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/xdlgo/xps/reader"
)

// Errors of the package. Problems of the data wrap ErrBadData (malformed
// lines wrap reader.ErrMalformed as well); ErrNoData means there is nothing
// to train or evaluate on.
var (
	ErrBadData = errors.New("xctrain: bad data")
	ErrNoData  = errors.New("xctrain: no data")
)

// Dataset is XMLRepository data held in memory in CSR form: sample i has
// the features IDs[Offsets[i]:Offsets[i+1]] (the reader's 64-bit ids of
// field 0) with their Values, and the labels
// Labels[LabelOffsets[i]:LabelOffsets[i+1]].
//
// Invariants: len(Offsets) == len(LabelOffsets) == Len()+1, both
// non-decreasing from 0; len(IDs) == len(Values); every label is in
// [0, 2^24].
type Dataset struct {
	Offsets      []int64
	IDs          []uint64
	Values       []float32
	LabelOffsets []int64
	Labels       []int32
	// HeaderLabels is the largest L of the files' "N F L" headers (0
	// when no header could be read).
	HeaderLabels int
	// MaxLabel is the largest label, -1 when there is none.
	MaxLabel int32
	// Skipped counts malformed lines skipped (train.on_error: skip).
	Skipped int64
	// Desc says where the data came from.
	Desc string
}

// Len is the number of samples.
func (d *Dataset) Len() int { return len(d.Offsets) - 1 }

// Sample returns views of sample i's feature ids, values and labels.
func (d *Dataset) Sample(i int) (ids []uint64, values []float32, labels []int32) {
	lo, hi := d.Offsets[i], d.Offsets[i+1]
	llo, lhi := d.LabelOffsets[i], d.LabelOffsets[i+1]
	return d.IDs[lo:hi:hi], d.Values[lo:hi:hi], d.Labels[llo:lhi:lhi]
}

// Prefix returns the first n samples (a view sharing d's slices).
func (d *Dataset) Prefix(n int) *Dataset {
	if n >= d.Len() {
		return d
	}
	c := *d
	c.Offsets, c.LabelOffsets = d.Offsets[:n+1], d.LabelOffsets[:n+1]
	return &c
}

// NumLabels returns the number of labels the data implies: the headers' L,
// or 1 + the largest label when that is larger.
func (d *Dataset) NumLabels() int { return max(d.HeaderLabels, int(d.MaxLabel)+1) }

// newDataset returns an empty dataset.
func newDataset() *Dataset {
	return &Dataset{Offsets: []int64{0}, LabelOffsets: []int64{0}, MaxLabel: -1}
}

// add appends one sample; labels must be non-negative integers of float32.
func (d *Dataset) add(ids []uint64, values []float32, labels []float32) error {
	for _, v := range labels {
		if !(v >= 0 && v <= 1<<24) || v != float32(math.Trunc(float64(v))) {
			return fmt.Errorf("%w: label %v is not a non-negative integer", ErrBadData, v)
		}
	}
	d.IDs = append(d.IDs, ids...)
	d.Values = append(d.Values, values...)
	d.Offsets = append(d.Offsets, int64(len(d.IDs)))
	for _, v := range labels {
		l := int32(v)
		d.Labels = append(d.Labels, l)
		d.MaxLabel = max(d.MaxLabel, l)
	}
	d.LabelOffsets = append(d.LabelOffsets, int64(len(d.Labels)))
	return nil
}

// Load reads XMLRepository files (files, directories or globs) into memory.
// A malformed line stops the load with an error naming the file, line and
// reason (reader.ErrMalformed), or is skipped and counted under
// reader.SkipBad. No file, or no sample, is an error wrapping ErrNoData.
func Load(ctx context.Context, patterns []string, policy reader.ErrorPolicy) (*Dataset, error) {
	if len(patterns) == 0 {
		return nil, fmt.Errorf("%w: no files given", ErrNoData)
	}
	paths, err := reader.ExpandPaths(patterns)
	if err != nil {
		return nil, fmt.Errorf("xctrain: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: %s matches no file", ErrNoData, strings.Join(patterns, ","))
	}
	d := newDataset()
	splits := make([]reader.FileSplit, len(paths))
	for i, p := range paths {
		splits[i] = reader.FileSplit{Path: p}
		d.HeaderLabels = max(d.HeaderLabels, headerLabels(p))
	}
	src, err := reader.OpenFiles(splits, reader.XML, policy)
	if err != nil {
		return nil, fmt.Errorf("xctrain: %w", err)
	}
	defer src.Close()
	g := new(reader.Group)
	for {
		err := src.Next(ctx, g)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("xctrain: %w", err)
		}
		if len(g.Levels) != 1 {
			return nil, fmt.Errorf("%w: %v: a group of %d levels, want XMLRepository samples", ErrBadData, g.Pos, len(g.Levels))
		}
		for i := g.Pos.Index; i < g.NumSamples(); i++ {
			_, ids, values := g.Levels[0].Line(i)
			if err := d.add(ids, values, g.SampleLabels(i)); err != nil {
				return nil, fmt.Errorf("%w (%v)", err, g.Pos)
			}
		}
	}
	d.Skipped = src.Stats().Skipped
	if d.Len() == 0 {
		holds := "file " + strings.Join(paths, ", ") + " holds"
		if len(paths) > 1 {
			holds = "files " + strings.Join(paths, ", ") + " hold"
		}
		var skipped string
		if d.Skipped > 0 {
			skipped = fmt.Sprintf(" (%d malformed lines skipped under train.on_error: skip)", d.Skipped)
		}
		return nil, fmt.Errorf("%w: %s no samples%s", ErrNoData, holds, skipped)
	}
	d.Desc = fmt.Sprintf("%d samples from %d files (%s)", d.Len(), len(paths), strings.Join(patterns, ","))
	return d, nil
}

// headerLabels returns L of the "N F L" header of an XMLRepository file, or
// 0 when the first line is not such a header (the reader reports why).
func headerLabels(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 256).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	fs := strings.Fields(line)
	if len(fs) != 3 {
		return 0
	}
	l, err := strconv.Atoi(fs[2])
	if err != nil || l < 0 || l > 1<<24 {
		return 0
	}
	return l
}
