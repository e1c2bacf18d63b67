package ctrtrain

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
)

// stream opens a worker's training data in order for an epoch, at start
// (the zero Position: the beginning).
type stream func(epoch int, start reader.Position) (reader.Source, error)

// windowed returns the training data of stream shuffled per epoch through
// a window (reader.WindowSource) of cfg's train.shuffle_window bytes, or
// of unbounded size (the whole data in memory) with whole. Data that fits
// in one window is read once: later epochs shuffle what the first held.
func windowed(open stream, cfg config.Config, whole bool) stream {
	o := reader.WindowOptions{Bytes: cfg.Train.ShuffleWindow, Chunk: cfg.Train.ShuffleChunk, Seed: cfg.Model.Seed}
	if whole {
		o.Bytes = 1 << 62
	}
	var held *reader.Whole
	var last *reader.WindowSource
	return func(epoch int, start reader.Position) (reader.Source, error) {
		if held == nil && last != nil {
			held = last.Whole()
		}
		o := o
		o.Epoch, o.Start, o.Whole = uint64(epoch), start, held
		o.Open = func(at reader.Position) (reader.Source, error) { return open(epoch, at) }
		s, err := reader.NewWindowSource(o)
		if err == nil {
			last = s
		}
		return s, err
	}
}

// blockMin is the smallest block a shuffled epoch reads (fileStream).
const blockMin = 4 << 10

// cutBlocks cuts splits into byte ranges of at most size bytes (a split
// that runs to its file's end is measured on fsys).
func cutBlocks(fsys reader.FS, splits []reader.FileSplit, size int64) ([]reader.FileSplit, error) {
	var out []reader.FileSplit
	for _, sp := range splits {
		end := sp.End
		if end <= 0 {
			fi, err := reader.StatFilesFS(fsys, []string{sp.Path})
			if err != nil {
				return nil, err
			}
			end = fi[0].Size
		}
		for lo := sp.Start; lo < end; {
			hi := lo + min(size, end-lo) // no overflow, whatever size
			out = append(out, reader.FileSplit{Path: sp.Path, Start: lo, End: hi})
			lo = hi
		}
	}
	return out, nil
}

// shuffledBlocks returns blocks in an order shuffled for epoch (seeded by
// seed and the epoch).
func shuffledBlocks(blocks []reader.FileSplit, seed uint64, epoch int) []reader.FileSplit {
	out := slices.Clone(blocks)
	rng := rand.New(rand.NewPCG(seed, uint64(epoch)))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// GeneratedName is the File of the generated dataset's positions: Offset
// counts the groups generated (every worker's), from 0.
const GeneratedName = "generated"

// genSource streams worker index's share of the generated dataset
// (groups index, index+count, ... of at most max samples each), the same
// groups whatever the share's start: a generator started at the
// beginning skips the groups before start.
type genSource struct {
	gen          *datagen.Generator
	index, count int
	max          int
	total        int       // train samples of every worker
	made, n      int       // groups and samples generated
	probs        []float32 // the teacher's, reused and unused
	stats        reader.SourceStats
	closed       bool
}

// openGenerated opens the worker's share of the generated training data at
// start (a position of GeneratedName, or the zero Position).
func openGenerated(dc config.DataConfig, index, count, maxGroup int, start reader.Position) (*genSource, error) {
	gen, err := datagen.New(dc.Config)
	if err != nil {
		return nil, fmt.Errorf("worker: generator: %w", err)
	}
	if start != (reader.Position{}) && start.File != GeneratedName {
		return nil, fmt.Errorf("%w: %v is not a position of the generated data", reader.ErrBadPosition, start)
	}
	s := &genSource{gen: gen, index: index, count: count, max: maxGroup, total: dc.TrainSamples}
	g := new(reader.Group)
	for s.made < int(start.Offset) && s.n < s.total {
		s.generate(g)
	}
	return s, nil
}

// generate makes the next group of every worker's stream.
func (s *genSource) generate(g *reader.Group) {
	s.probs = s.gen.NextGroup(g, min(s.total-s.n, s.max), s.probs[:0])
	s.made++
	s.n += g.NumSamples()
}

// Next generates the worker's next group into g.
func (s *genSource) Next(ctx context.Context, g *reader.Group) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for !s.closed && s.n < s.total {
		k := s.made
		s.generate(g)
		if k%s.count != s.index {
			continue
		}
		g.Pos = reader.Position{File: GeneratedName, Offset: int64(k)}
		g.Next = reader.Position{File: GeneratedName, Offset: int64(k + 1)}
		s.stats.Groups++
		s.stats.Samples += int64(g.NumSamples())
		return nil
	}
	return io.EOF
}

func (s *genSource) Position() reader.Position {
	return reader.Position{File: GeneratedName, Offset: int64(s.made)}
}
func (s *genSource) Stats() reader.SourceStats { return s.stats }
func (s *genSource) Close() error              { s.closed = true; return nil }
