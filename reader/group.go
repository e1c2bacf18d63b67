package reader

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/xdlgo/xps/model/hashmix"
)

// Group is one sample group: feature lines arranged in levels. Levels[0]
// holds the samples (one line per sample, with labels); Levels[k] for k >= 1
// holds the lines shared by the samples below them (a user, an ad, ...).
// Every line of a level below the top refers to one parent line of the level
// above. One-sample-per-line formats (libSVM, libFFM, Criteo, XMLRepository)
// give groups of one level and one line.
//
// Invariants (checked by Validate):
//
//  1. len(Levels) >= 1; Levels[0].Len() >= 1 for a group returned by a Source.
//  2. For k < len(Levels)-1, len(Levels[k].Parent) == Levels[k].Len() and
//     every parent is in [0, Levels[k+1].Len()); the top level has no Parent.
//  3. len(LabelOffsets) == Levels[0].Len()+1, non-decreasing from 0 to
//     len(Labels).
//  4. Each Level's own invariants (see Level).
//
// A Group's slices are reused by Reset; a consumer that keeps a group past the
// next call that refills it must copy it (Clone).
type Group struct {
	Levels []Level
	// LabelOffsets and Labels hold the labels of the samples: sample i has
	// Labels[LabelOffsets[i]:LabelOffsets[i+1]] (one value for CTR data,
	// several for multi-label data).
	LabelOffsets []int32
	Labels       []float32
	// Pos is where the group starts in its source, with Pos.Index = the
	// index of the first sample to use: samples before it were consumed
	// before the source was resumed, and consumers skip them.
	Pos Position
	// Next is the position right after the group (the start of the next
	// group, index 0).
	Next Position
	// Line is the 1-based physical line of the group's first line in
	// Pos.File when the source knows it (a FileSource whose read of the
	// file began at offset 0), otherwise 0. It is for messages about the
	// data; positions are Pos's.
	Line int64
}

// Level is one level of a group: its lines and their features, in CSR form.
//
// Invariants: len(Offsets) == Len()+1, non-decreasing from 0 to len(IDs);
// len(Fields) == len(IDs) == len(Values); likewise len(DenseOffsets) ==
// Len()+1 over DenseFields, and len(DenseEnds) == len(DenseFields) with
// DenseEnds non-decreasing up to len(DenseValues) (dense feature j holds
// DenseValues[DenseEnds[j-1]:DenseEnds[j]], with DenseEnds[-1] taken as 0).
// A level may have no dense features at all (all dense slices empty except
// DenseOffsets, which then holds zeros).
type Level struct {
	// Parent[i] is the index of line i's parent in the level above; nil for
	// the top level.
	Parent []int32
	// Sparse features of line i: Fields/IDs/Values[Offsets[i]:Offsets[i+1]].
	Offsets []int32
	Fields  []uint32
	IDs     []uint64
	Values  []float32
	// Dense features of line i: DenseFields[DenseOffsets[i]:DenseOffsets[i+1]],
	// with values as described above.
	DenseOffsets []int32
	DenseFields  []uint32
	DenseEnds    []int32
	DenseValues  []float32
}

// Len returns the number of lines of the level.
func (l *Level) Len() int {
	if len(l.Offsets) == 0 {
		return 0
	}
	return len(l.Offsets) - 1
}

// Line returns the sparse features of line i as views into the level.
func (l *Level) Line(i int) (fields []uint32, ids []uint64, values []float32) {
	lo, hi := l.Offsets[i], l.Offsets[i+1]
	return l.Fields[lo:hi:hi], l.IDs[lo:hi:hi], l.Values[lo:hi:hi]
}

// Dense calls fn for each dense feature of line i with its field and values
// (a view into the level).
func (l *Level) Dense(i int, fn func(field uint32, values []float32)) {
	for j := l.DenseOffsets[i]; j < l.DenseOffsets[i+1]; j++ {
		lo := int32(0)
		if j > 0 {
			lo = l.DenseEnds[j-1]
		}
		fn(l.DenseFields[j], l.DenseValues[lo:l.DenseEnds[j]])
	}
}

// reset empties the level, keeping its buffers.
func (l *Level) reset(top bool) {
	if top {
		l.Parent = nil
	} else {
		l.Parent = l.Parent[:0]
		if l.Parent == nil {
			l.Parent = []int32{}
		}
	}
	l.Offsets = append(l.Offsets[:0], 0)
	l.Fields, l.IDs, l.Values = l.Fields[:0], l.IDs[:0], l.Values[:0]
	l.DenseOffsets = append(l.DenseOffsets[:0], 0)
	l.DenseFields, l.DenseEnds, l.DenseValues = l.DenseFields[:0], l.DenseEnds[:0], l.DenseValues[:0]
}

// Reset empties g and gives it n empty levels, keeping buffers.
func (g *Group) Reset(levels int) {
	if cap(g.Levels) < levels {
		g.Levels = append(g.Levels[:cap(g.Levels)], make([]Level, levels-cap(g.Levels))...)
	}
	g.Levels = g.Levels[:levels]
	for k := range g.Levels {
		g.Levels[k].reset(k == levels-1)
	}
	g.LabelOffsets = append(g.LabelOffsets[:0], 0)
	g.Labels = g.Labels[:0]
	g.Pos, g.Next, g.Line = Position{}, Position{}, 0
}

// NumSamples returns the number of samples (level-0 lines), counting those
// before Pos.Index.
func (g *Group) NumSamples() int {
	if len(g.Levels) == 0 {
		return 0
	}
	return g.Levels[0].Len()
}

// SampleLabels returns the labels of sample i.
func (g *Group) SampleLabels(i int) []float32 {
	lo, hi := g.LabelOffsets[i], g.LabelOffsets[i+1]
	return g.Labels[lo:hi:hi]
}

// Label returns the first label of sample i, or 0 when it has none.
func (g *Group) Label(i int) float32 {
	if l := g.SampleLabels(i); len(l) > 0 {
		return l[0]
	}
	return 0
}

// AddLine appends a line with the given sparse features to level k (parent
// is ignored for the top level) and returns its index. Use AddDense right
// after it to give the line dense features.
func (g *Group) AddLine(k int, parent int32, fields []uint32, ids []uint64, values []float32) int {
	l := &g.Levels[k]
	if k < len(g.Levels)-1 {
		l.Parent = append(l.Parent, parent)
	}
	l.Fields = append(l.Fields, fields...)
	l.IDs = append(l.IDs, ids...)
	l.Values = append(l.Values, values...)
	l.Offsets = append(l.Offsets, int32(len(l.IDs)))
	l.DenseOffsets = append(l.DenseOffsets, int32(len(l.DenseFields)))
	return l.Len() - 1
}

// AddDense appends a dense feature to the last line of level k.
func (g *Group) AddDense(k int, field uint32, values []float32) {
	l := &g.Levels[k]
	l.DenseFields = append(l.DenseFields, field)
	l.DenseValues = append(l.DenseValues, values...)
	l.DenseEnds = append(l.DenseEnds, int32(len(l.DenseValues)))
	l.DenseOffsets[len(l.DenseOffsets)-1] = int32(len(l.DenseFields))
}

// AddLabels appends the labels of the next sample (call once per level-0
// line, in order).
func (g *Group) AddLabels(labels ...float32) {
	g.Labels = append(g.Labels, labels...)
	g.LabelOffsets = append(g.LabelOffsets, int32(len(g.Labels)))
}

// CopyFrom makes l a copy of src, reusing l's buffers.
func (l *Level) CopyFrom(src *Level) {
	if src.Parent != nil {
		l.Parent = append(l.Parent[:0], src.Parent...)
		if l.Parent == nil {
			l.Parent = []int32{} // an empty non-top level keeps a non-nil Parent
		}
	} else {
		l.Parent = nil
	}
	l.Offsets = append(l.Offsets[:0], src.Offsets...)
	l.Fields = append(l.Fields[:0], src.Fields...)
	l.IDs = append(l.IDs[:0], src.IDs...)
	l.Values = append(l.Values[:0], src.Values...)
	l.DenseOffsets = append(l.DenseOffsets[:0], src.DenseOffsets...)
	l.DenseFields = append(l.DenseFields[:0], src.DenseFields...)
	l.DenseEnds = append(l.DenseEnds[:0], src.DenseEnds...)
	l.DenseValues = append(l.DenseValues[:0], src.DenseValues...)
}

// CopyFrom makes g a deep copy of src, reusing g's buffers.
func (g *Group) CopyFrom(src *Group) {
	g.Reset(len(src.Levels))
	for k := range src.Levels {
		g.Levels[k].CopyFrom(&src.Levels[k])
	}
	g.LabelOffsets = append(g.LabelOffsets[:0], src.LabelOffsets...)
	g.Labels = append(g.Labels[:0], src.Labels...)
	g.Pos, g.Next, g.Line = src.Pos, src.Next, src.Line
}

// Clone returns a deep copy of g.
func (g *Group) Clone() *Group {
	c := new(Group)
	c.CopyFrom(g)
	return c
}

// ErrBadGroup is wrapped by Validate's errors.
var ErrBadGroup = errors.New("reader: bad sample group")

// Validate checks the invariants of g.
func (g *Group) Validate() error {
	if len(g.Levels) == 0 {
		return fmt.Errorf("%w: no levels", ErrBadGroup)
	}
	top := len(g.Levels) - 1
	for k := range g.Levels {
		l := &g.Levels[k]
		n := l.Len()
		if len(l.Offsets) != n+1 || (n >= 0 && len(l.Offsets) > 0 && l.Offsets[0] != 0) {
			return fmt.Errorf("%w: level %d: bad offsets", ErrBadGroup, k)
		}
		for i := 0; i < n; i++ {
			if l.Offsets[i] > l.Offsets[i+1] {
				return fmt.Errorf("%w: level %d: offsets decrease at line %d", ErrBadGroup, k, i)
			}
		}
		if int(l.Offsets[n]) != len(l.IDs) || len(l.Fields) != len(l.IDs) || len(l.Values) != len(l.IDs) {
			return fmt.Errorf("%w: level %d: feature columns disagree", ErrBadGroup, k)
		}
		if len(l.DenseOffsets) != n+1 || l.DenseOffsets[0] != 0 || int(l.DenseOffsets[n]) != len(l.DenseFields) ||
			len(l.DenseEnds) != len(l.DenseFields) {
			return fmt.Errorf("%w: level %d: bad dense offsets", ErrBadGroup, k)
		}
		prev := int32(0)
		for i := 0; i < n; i++ {
			if l.DenseOffsets[i] > l.DenseOffsets[i+1] {
				return fmt.Errorf("%w: level %d: dense offsets decrease at line %d", ErrBadGroup, k, i)
			}
		}
		for _, e := range l.DenseEnds {
			if e < prev {
				return fmt.Errorf("%w: level %d: dense ends decrease", ErrBadGroup, k)
			}
			prev = e
		}
		if int(prev) != len(l.DenseValues) {
			return fmt.Errorf("%w: level %d: dense values disagree", ErrBadGroup, k)
		}
		if k == top {
			if l.Parent != nil {
				return fmt.Errorf("%w: the top level %d has parents", ErrBadGroup, k)
			}
			continue
		}
		if len(l.Parent) != n {
			return fmt.Errorf("%w: level %d: %d parents for %d lines", ErrBadGroup, k, len(l.Parent), n)
		}
		up := g.Levels[k+1].Len()
		for i, p := range l.Parent {
			if p < 0 || int(p) >= up {
				return fmt.Errorf("%w: level %d line %d: parent %d outside [0, %d)", ErrBadGroup, k, i, p, up)
			}
		}
	}
	if len(g.LabelOffsets) != g.Levels[0].Len()+1 || g.LabelOffsets[0] != 0 ||
		int(g.LabelOffsets[len(g.LabelOffsets)-1]) != len(g.Labels) {
		return fmt.Errorf("%w: labels disagree with the samples", ErrBadGroup)
	}
	for i := 0; i+1 < len(g.LabelOffsets); i++ {
		if g.LabelOffsets[i] > g.LabelOffsets[i+1] {
			return fmt.Errorf("%w: label offsets decrease at sample %d", ErrBadGroup, i)
		}
	}
	if g.Pos.Index < 0 || g.Pos.Index > g.NumSamples() {
		return fmt.Errorf("%w: first sample %d outside [0, %d]", ErrBadGroup, g.Pos.Index, g.NumSamples())
	}
	return nil
}

// Position is a serializable place in a source: the group starting at byte
// Offset of File, and Index, the index of the next sample within that group.
// Reopening a source at a Position yields exactly the samples after it. The
// zero Position is the start of the first file. It marshals to JSON as
// {"file": ..., "offset": ..., "index": ...}.
type Position struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Index  int    `json:"index"`
}

// String formats p as file@offset#index.
func (p Position) String() string { return fmt.Sprintf("%s@%d#%d", p.File, p.Offset, p.Index) }

// StreamHash is the hash of a stream's name (Position.File) that
// SampleDigest takes.
func StreamHash(file string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(file))
	return h.Sum64()
}

// SampleDigest is a 64-bit identity of the sample at index of the group
// that starts at offset in the stream whose StreamHash is stream: the
// position the sample has in its source, hashed. Sums of digests (mod
// 2^64) stand for multisets of samples, so a model that adds up the
// digests of the samples it applied can show that they are a dataset's,
// each once per epoch, and not merely as many (a lost sample and a
// repeated one would leave a count unchanged, not the sum).
func SampleDigest(stream uint64, offset int64, index int) uint64 {
	return hashmix.Hash3(stream, uint64(offset), uint64(index))
}

// Source yields sample groups in order. It is used by one goroutine.
type Source interface {
	// Next fills g (after g.Reset) with the next group and returns nil, or
	// returns io.EOF after the last group (and on every later call). A
	// malformed group gives an error wrapping ErrMalformed that names the
	// source, line and reason; under SkipBad the source skips it and counts
	// it instead. The group's Pos.Index is > 0 only for the first group after
	// resuming from a position inside a group.
	Next(ctx context.Context, g *Group) error
	// Position returns the position of the next sample not yet returned by
	// Next (the start of the next group).
	Position() Position
	// Stats returns counts of what was read so far.
	Stats() SourceStats
	// Close releases the source's files.
	Close() error
}

// SourceStats counts what a source has read.
type SourceStats struct {
	Groups  int64 `json:"groups"`
	Samples int64 `json:"samples"`
	Bytes   int64 `json:"bytes"`
	Skipped int64 `json:"skipped"`
	// Errors holds the first few skipped errors.
	Errors []error `json:"-"`
}

// AddSkipped counts a skipped malformed group and keeps its error among
// the first few.
func (s *SourceStats) AddSkipped(err error) {
	s.Skipped++
	if len(s.Errors) < maxStatErrors {
		s.Errors = append(s.Errors, err)
	}
}

// Decoder turns the lines of one text format into groups. A Source feeds it
// the lines of each file in order, without the line ending, skipping lines
// that are empty, hold only blanks, or whose first non-blank byte is '#'.
// Decoders return plain errors naming the reason; the Source wraps them in a
// *LineError with the source and line. A Decoder is used by one goroutine.
type Decoder interface {
	// Header is called with the first line of every file (and of a byte
	// range that starts at offset 0). It reports whether the line is a
	// header, which is then consumed; a false result passes the line on to
	// Starts and Decode. An error means the header is malformed.
	Header(line []byte) (bool, error)
	// Starts reports whether line begins a new group. It looks at the line
	// only (no state), so that a reader dropped at a byte offset can find
	// the next group boundary.
	Starts(line []byte) bool
	// Decode adds line to g. For a line where Starts is true, Decode first
	// resets g (g.Reset with the group's number of levels).
	Decode(line []byte, g *Group) error
	// End is called after the last line of a group (before the next
	// starting line or at the end of the input) and checks that the group
	// is complete (for example that it has at least one sample).
	End(g *Group) error
}
