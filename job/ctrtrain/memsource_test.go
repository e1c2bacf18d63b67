package ctrtrain

import (
	"context"
	"io"
	"math/rand/v2"

	"github.com/xdlgo/xps/reader"
)

// MemoryName is the File of the positions of in-memory sources.
const MemoryName = "memory"

// memorySource (for tests) yields groups held in memory, in a fixed order (the identity,
// or a permutation for a shuffled epoch). Its positions are {MemoryName,
// k, index} where k is the rank of the group in that order.
type memorySource struct {
	groups []*reader.Group
	order  []int32
	next   int
	index  int // first sample of the next group (a resume inside a group)
	stats  reader.SourceStats
	closed bool
}

// newMemorySource returns a source over groups, permuted by a shuffle
// seeded with seed when shuffle is set, starting at start (a position of
// the same order).
func newMemorySource(groups []*reader.Group, shuffle bool, seed, epoch uint64, start reader.Position) *memorySource {
	order := make([]int32, len(groups))
	for i := range order {
		order[i] = int32(i)
	}
	if shuffle {
		rng := rand.New(rand.NewPCG(seed, epoch))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	s := &memorySource{groups: groups, order: order}
	if start.File == MemoryName {
		s.next, s.index = int(min(max(start.Offset, 0), int64(len(groups)))), start.Index
	}
	return s
}

func (s *memorySource) pos(k, index int) reader.Position {
	return reader.Position{File: MemoryName, Offset: int64(k), Index: index}
}

// Next copies the next group into g.
func (s *memorySource) Next(ctx context.Context, g *reader.Group) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for {
		if s.closed || s.next >= len(s.order) {
			return io.EOF
		}
		src := s.groups[s.order[s.next]]
		if s.index >= src.NumSamples() { // a resume past the group's end
			s.next, s.index = s.next+1, 0
			continue
		}
		g.CopyFrom(src)
		g.Pos, g.Next = s.pos(s.next, s.index), s.pos(s.next+1, 0)
		s.stats.Groups++
		s.stats.Samples += int64(src.NumSamples() - s.index)
		s.next, s.index = s.next+1, 0
		return nil
	}
}

func (s *memorySource) Position() reader.Position { return s.pos(s.next, s.index) }
func (s *memorySource) Stats() reader.SourceStats { return s.stats }
func (s *memorySource) Close() error              { s.closed = true; return nil }
