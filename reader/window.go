package reader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
)

// A WindowSource shuffles a stream whatever its size, in bounded memory:
// it reads the stream (an ordered, resumable Source) into a window of
// about WindowOptions.Bytes, cutting groups into chunks of at most
// WindowOptions.Chunk samples (a chunk keeps its samples' upper-level
// lines, so compression keeps working), shuffles the chunks, emits them,
// and refills the window from where the stream stopped. Each window's
// shuffle is seeded by the seed, the epoch and where the window starts in
// the stream, so a window read again is shuffled again the same way.
//
// Positions. A group the source emits has Pos {File: w, Offset: k, Index:
// i}, where w names the window (WindowName of the stream position where it
// starts), k is the chunk's rank in the window's shuffled order and i the
// first sample to use. The position after a window's last chunk is the
// next window's start (its Offset 0). Opened at such a position, the
// source reads the window again from the stream, shuffles it the same way
// and skips the k chunks (and i samples) emitted before: a job resumed
// from a checkpoint neither loses nor repeats a sample. Positions are
// distinct for every sample of an epoch (the window's name is in File), so
// SampleDigest tells samples apart.
//
// Invariants:
//
//  1. Memory: the window holds the groups of at most Bytes of payload
//     (WindowBytes of each) plus the one group that crossed the bound; the
//     source holds that window and one group being read.
//  2. Every group of the stream is in exactly one window, and every sample
//     of a window is emitted exactly once, in one chunk.
//  3. A window's order depends only on (Seed, Epoch, its start in the
//     stream) and its content.
type WindowSource struct {
	opts   WindowOptions
	src    Source // nil for Whole data
	window *Pack
	order  []int32
	start  Position // where the window in memory starts in the stream
	name   string   // WindowName(start), made when start changes
	after  Position // where the stream goes on after it
	next   int      // rank of the next chunk to emit
	index  int      // first sample of that chunk (a resume inside it)
	done   bool     // the stream is exhausted
	stats  SourceStats
	g, cut Group
	// pend is the group read after the window filled up, the next
	// window's first (havePend): a window ends where a group starts, or
	// at WindowEnd, never at a stream position that is only an end.
	pend     Group
	havePend bool
}

// WindowOptions configure a WindowSource.
type WindowOptions struct {
	// Open opens the stream at start (the zero Position: its beginning;
	// otherwise a group boundary the stream gave, Index 0).
	Open func(start Position) (Source, error)
	// Bytes bounds a window's payload (WindowBytes of its chunks).
	Bytes int64
	// Chunk is the most samples of one group kept together.
	Chunk int
	// Seed and Epoch seed the shuffles.
	Seed, Epoch uint64
	// Start is where to begin: the zero Position, a position the source
	// gave (a window's), or a position of the stream itself (a job that
	// read the stream in order), taken as a window's start.
	Start Position
	// Whole, when set, is the whole stream, held from an earlier epoch
	// (WindowSource.Whole): it is the one window, shuffled for Epoch, and
	// Open is not called.
	Whole *Whole
}

// Whole is a stream held whole in memory: the one window of a stream that
// fit in it. It is read-only: sources of later epochs share it.
type Whole struct {
	pack *Pack
}

// Samples returns the samples held.
func (w *Whole) Samples() int64 { return w.pack.Samples() }

// Bytes returns the memory held.
func (w *Whole) Bytes() int64 { return w.pack.Bytes() }

// Whole returns the stream held whole when the source's first window,
// from the stream's beginning, took all of it (nil otherwise, or before
// that window is read): a later epoch shuffles it again without reading
// the stream (WindowOptions.Whole).
func (s *WindowSource) Whole() *Whole {
	if !s.done || s.start != (Position{}) || s.src == nil {
		return nil
	}
	return &Whole{pack: s.window}
}

// windowPrefix starts the File of a window position.
const windowPrefix = "window("

// WindowEnd is the File of the position after a window source's last
// chunk: the stream is exhausted (a position of the stream itself could
// be read as the start of a block it shuffled elsewhere).
const WindowEnd = "window(end)"

// WindowName names the window that starts at p in the stream.
func WindowName(p Position) string {
	return windowPrefix + p.File + "@" + strconv.FormatInt(p.Offset, 10) + ")"
}

// ParseWindowName returns the stream position a window's name (WindowName)
// stands for, and false when name is not one.
func ParseWindowName(name string) (Position, bool) {
	inner, ok := strings.CutPrefix(name, windowPrefix)
	if !ok || !strings.HasSuffix(inner, ")") {
		return Position{}, false
	}
	inner = inner[:len(inner)-1]
	at := strings.LastIndexByte(inner, '@')
	if at < 0 {
		return Position{}, false
	}
	off, err := strconv.ParseInt(inner[at+1:], 10, 64)
	if err != nil || off < 0 {
		return Position{}, false
	}
	return Position{File: inner[:at], Offset: off}, true
}

// StreamOf returns the stream a position's File belongs to: every
// window's name stands for one stream (the windows of one source follow
// one another), any other File for its own. A record of where each
// stream stopped (a checkpoint) keeps one position per stream: a window
// source's latest, not one per window.
func StreamOf(file string) string {
	if _, ok := ParseWindowName(file); ok || file == WindowEnd {
		return windowPrefix + ")"
	}
	return file
}

// NewWindowSource opens a WindowSource (see the type's documentation).
func NewWindowSource(o WindowOptions) (*WindowSource, error) {
	if o.Open == nil || o.Bytes <= 0 || o.Chunk <= 0 {
		return nil, fmt.Errorf("reader: window shuffle: need Open, Bytes > 0 and Chunk > 0 (Bytes %d, Chunk %d)", o.Bytes, o.Chunk)
	}
	s := &WindowSource{opts: o, window: new(Pack), name: WindowName(Position{})}
	skip, index := 0, 0
	s.after = o.Start
	if base, ok := ParseWindowName(o.Start.File); ok {
		s.after, skip, index = base, int(max(o.Start.Offset, 0)), max(o.Start.Index, 0)
	} else {
		s.after.Index = 0
	}
	if o.Start.File == WindowEnd {
		s.done, s.after = true, o.Start
		return s, nil
	}
	if w := o.Whole; w != nil && s.after == (Position{}) {
		s.window, s.done, s.after = w.pack, true, Position{File: WindowEnd}
		s.shuffle()
		s.next, s.index = min(skip, len(s.order)), index
		return s, nil
	}
	src, err := o.Open(s.after)
	if err != nil {
		return nil, err
	}
	s.src = src
	if skip > 0 || index > 0 {
		if err := s.fill(context.Background()); err != nil {
			src.Close()
			return nil, err
		}
		s.next, s.index = skip, index
	}
	return s, nil
}

// Next copies the next chunk into g.
func (s *WindowSource) Next(ctx context.Context, g *Group) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for {
		if s.next < len(s.order) {
			break
		}
		if s.done {
			return io.EOF
		}
		if err := s.fill(ctx); err != nil {
			return err
		}
	}
	k := s.next
	if j := k + PrefetchStartAhead; j < len(s.order) {
		s.window.PrefetchStart(int(s.order[j]))
	}
	if j := k + PrefetchAhead; j < len(s.order) {
		s.window.Prefetch(int(s.order[j]))
	}
	s.window.Group(int(s.order[k]), g)
	name := s.name
	g.Pos = Position{File: name, Offset: int64(k), Index: s.index}
	g.Next = Position{File: name, Offset: int64(k + 1)}
	if k+1 == len(s.order) {
		g.Next = s.afterWindow()
	}
	s.stats.Groups++
	s.stats.Samples += int64(g.NumSamples() - s.index)
	s.next, s.index = k+1, 0
	return nil
}

// fill reads the next window from the stream and shuffles it.
func (s *WindowSource) fill(ctx context.Context) error {
	s.window.Reset()
	s.start, s.next, s.index = s.after, 0, 0
	s.name = WindowName(s.start)
	var payload int64
	if s.havePend {
		payload += WindowBytes(&s.pend)
		s.add(&s.pend)
		s.havePend = false
	}
	for {
		err := s.src.Next(ctx, &s.g)
		if errors.Is(err, io.EOF) {
			s.done, s.after = true, Position{File: WindowEnd}
			break
		}
		if err != nil {
			return err
		}
		if payload >= s.opts.Bytes && s.window.Len() > 0 { // the next window's first group
			s.pend, s.g = s.g, s.pend
			s.havePend = true
			s.after = Position{File: s.pend.Pos.File, Offset: s.pend.Pos.Offset}
			break
		}
		payload += WindowBytes(&s.g)
		s.add(&s.g)
	}
	s.shuffle()
	return nil
}

// afterWindow is the position after the window in memory: the next
// window's start, or WindowEnd.
func (s *WindowSource) afterWindow() Position {
	if s.after.File == WindowEnd {
		return s.after
	}
	return Position{File: WindowName(s.after)}
}

// add appends g to the window, cut into chunks of at most Chunk samples
// from its first sample to use.
func (s *WindowSource) add(g *Group) {
	n, size := g.NumSamples(), s.opts.Chunk
	if n-g.Pos.Index <= size && g.Pos.Index == 0 {
		s.window.Append(g)
		return
	}
	for lo := g.Pos.Index; lo < n; lo += size {
		CutSamples(&s.cut, g, lo, min(lo+size, n))
		s.window.Append(&s.cut)
	}
}

// shuffle sets the window's order, seeded by the seed, the epoch and the
// window's start.
func (s *WindowSource) shuffle() {
	n := s.window.Len()
	s.order = s.order[:0]
	for i := range n {
		s.order = append(s.order, int32(i))
	}
	h := StreamHash(s.name)
	rng := rand.New(rand.NewPCG(s.opts.Seed^h, s.opts.Epoch))
	rng.Shuffle(n, func(i, j int) { s.order[i], s.order[j] = s.order[j], s.order[i] })
}

// Position is where the source goes on: the next chunk of the window, or
// the next window's start.
func (s *WindowSource) Position() Position {
	if s.next < len(s.order) || s.index > 0 {
		return Position{File: s.name, Offset: int64(s.next), Index: s.index}
	}
	return s.afterWindow()
}

// Stats counts the chunks emitted and their samples (Skipped: the
// stream's).
func (s *WindowSource) Stats() SourceStats {
	st := s.stats
	if s.src != nil {
		st.Skipped = s.src.Stats().Skipped
	}
	return st
}

// Close closes the stream.
func (s *WindowSource) Close() error {
	if s.src == nil {
		return nil
	}
	return s.src.Close()
}

// WindowBytes is the payload of g that a shuffle window counts: its IDs,
// fields, values, dense values, labels and offsets, as a compact store
// holds them.
func WindowBytes(g *Group) int64 {
	var n int64
	for k := range g.Levels {
		l := &g.Levels[k]
		n += 8*int64(len(l.IDs)) + 2*int64(len(l.Fields)) + 4*int64(len(l.DenseValues)+len(l.DenseFields)) +
			4*int64(len(l.Offsets)+len(l.Parent))
	}
	return n + 4*int64(len(g.Labels)+len(g.LabelOffsets))
}

// CutSamples makes dst a copy of g holding only its samples [lo, hi) and
// every upper-level line, reusing dst's buffers. Its Pos is g's with
// Index 0, its Next g's.
func CutSamples(dst, g *Group, lo, hi int) {
	dst.Reset(len(g.Levels))
	for k := 1; k < len(g.Levels); k++ {
		dst.Levels[k].CopyFrom(&g.Levels[k])
	}
	l0 := &g.Levels[0]
	for i := lo; i < hi; i++ {
		f, id, v := l0.Line(i)
		parent := int32(0)
		if l0.Parent != nil {
			parent = l0.Parent[i]
		}
		dst.AddLine(0, parent, f, id, v)
		l0.Dense(i, func(field uint32, vals []float32) { dst.AddDense(0, field, vals) })
		dst.AddLabels(g.SampleLabels(i)...)
	}
	dst.Pos = Position{File: g.Pos.File, Offset: g.Pos.Offset}
	dst.Next, dst.Line = g.Next, g.Line
}
