package reader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// windowData writes two sample-group files of users with 1 to 40 samples
// each (a user line at level 1; each sample's field-5 token names it) and
// returns splits over them (the second file cut in two) and the samples'
// ids (FeatureID(5, token)) in file order.
func windowData(t *testing.T, users int) ([]FileSplit, []uint64) {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	var ids []uint64
	var splits []FileSplit
	serial := 0
	for f := range 2 {
		var b strings.Builder
		for u := range users {
			n := 1 + rng.IntN(40)
			fmt.Fprintf(&b, "group 2\n1 - - 0:u%d-%d 1:c%d\n", f, u, u%7)
			for range n {
				fmt.Fprintf(&b, "0 0 %d 5:s%d 6:i%d\n", rng.IntN(2), serial, rng.IntN(100))
				ids = append(ids, FeatureID(5, []byte(fmt.Sprintf("s%d", serial))))
				serial++
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("d%d.group", f))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if f == 0 {
			splits = append(splits, FileSplit{Path: path})
			continue
		}
		mid := int64(b.Len() / 2)
		splits = append(splits, FileSplit{Path: path, End: mid}, FileSplit{Path: path, Start: mid})
	}
	return splits, ids
}

// windowOpts are the options of a window source over splits.
func windowOpts(splits []FileSplit, bytes int64, epoch uint64, opens *int) WindowOptions {
	return WindowOptions{Bytes: bytes, Chunk: 16, Seed: 7, Epoch: epoch,
		Open: func(at Position) (Source, error) {
			*opens++
			dec, _ := NewDecoder(SampleGroup)
			return NewFileSource(splits, FileSourceOptions{Decoder: dec, Start: at})
		}}
}

// windowGroup is a group a source gave: its position and samples used.
type windowGroup struct {
	pos Position
	n   int
}

// windowRead reads s to its end: the samples' ids (from each group's
// Pos.Index), the groups, and the payload each window gave.
func windowRead(t *testing.T, s Source) (ids []uint64, groups []windowGroup, perWindow map[string]int64) {
	t.Helper()
	perWindow = map[string]int64{}
	g := new(Group)
	for {
		err := s.Next(context.Background(), g)
		if errors.Is(err, io.EOF) {
			return ids, groups, perWindow
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil || len(g.Levels) != 2 || g.Levels[1].Len() != 1 || g.NumSamples() > 16 {
			t.Fatalf("group at %v: %v, %d levels, %d samples", g.Pos, err, len(g.Levels), g.NumSamples())
		}
		for i := g.Pos.Index; i < g.NumSamples(); i++ {
			_, id, _ := g.Levels[0].Line(i)
			ids = append(ids, id[0])
			perWindow[g.Pos.File] += WindowBytes(g) / int64(g.NumSamples())
		}
		groups = append(groups, windowGroup{g.Pos, g.NumSamples() - g.Pos.Index})
	}
}

// TestWindowSourceExactlyOnce: an epoch through windows of a few KB gives
// every sample once, in chunks of at most 16 samples keeping their user
// line, in an order that is not the file's, differs between epochs and is
// the same for the same epoch; no window holds much more than its bytes.
func TestWindowSourceExactlyOnce(t *testing.T) {
	splits, want := windowData(t, 300)
	const bytes = 8 << 10
	var opens int
	read := func(epoch uint64) ([]uint64, map[string]int64) {
		s, err := NewWindowSource(windowOpts(splits, bytes, epoch, &opens))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ids, _, per := windowRead(t, s)
		return ids, per
	}
	e1, per := read(1)
	e1again, _ := read(1)
	e2, _ := read(2)
	if !sameSet(e1, want) || !sameSet(e2, want) {
		t.Fatalf("an epoch gave %d and %d samples, not the data's %d once each", len(e1), len(e2), len(want))
	}
	if slices.Equal(e1, want) || slices.Equal(e1, e2) || !slices.Equal(e1, e1again) {
		t.Errorf("orders: epoch 1 is the file's %v, equals epoch 2's %v, equals itself read again %v",
			slices.Equal(e1, want), slices.Equal(e1, e2), slices.Equal(e1, e1again))
	}
	if len(per) < 10 {
		t.Errorf("%d windows over %d samples of windows of %d bytes", len(per), len(want), bytes)
	}
	for w, b := range per {
		if b > bytes+40*WindowBytes(new(Group))+4096 {
			t.Errorf("window %s held %d bytes, more than %d and a group", w, b, bytes)
		}
	}
}

// sameSet reports whether a holds exactly b's elements, each as often.
func sameSet(a, b []uint64) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// TestWindowSourceResume: opened again at any position it gave (a chunk's
// start, a sample inside a chunk, the start of the next window), the
// source gives exactly the samples after it: with those before, every
// sample once.
func TestWindowSourceResume(t *testing.T) {
	splits, want := windowData(t, 120)
	var opens int
	s, err := NewWindowSource(windowOpts(splits, 4<<10, 3, &opens))
	if err != nil {
		t.Fatal(err)
	}
	all, groups, _ := windowRead(t, s)
	s.Close()
	if !sameSet(all, want) {
		t.Fatalf("%d samples, want %d", len(all), len(want))
	}
	done := 0 // samples before groups[k]
	for k, gr := range groups {
		cases := []Position{gr.pos}
		if gr.n > 1 {
			cases = append(cases, Position{File: gr.pos.File, Offset: gr.pos.Offset, Index: gr.pos.Index + 1})
		}
		for j, at := range cases {
			o := windowOpts(splits, 4<<10, 3, &opens)
			o.Start = at
			r, err := NewWindowSource(o)
			if err != nil {
				t.Fatalf("resume at %v: %v", at, err)
			}
			rest, _, _ := windowRead(t, r)
			r.Close()
			if !slices.Equal(rest, all[done+j:]) {
				t.Fatalf("resumed at %v (group %d): %d samples, want the %d after it", at, k, len(rest), len(all)-done-j)
			}
		}
		done += gr.n
	}
}

// TestWindowSourceWhole: data that fits in one window is held after the
// first epoch (Whole), and a later epoch shuffles it without opening the
// stream, in the order and at the positions the stream would give; at the
// end position nothing is left.
func TestWindowSourceWhole(t *testing.T) {
	splits, want := windowData(t, 40)
	var opens int
	first, err := NewWindowSource(windowOpts(splits, 1<<30, 1, &opens))
	if err != nil {
		t.Fatal(err)
	}
	if first.Whole() != nil {
		t.Fatal("Whole before the window was read")
	}
	_, groups, _ := windowRead(t, first)
	whole := first.Whole()
	if whole == nil || whole.Samples() != int64(len(want)) {
		t.Fatalf("Whole after reading all %d samples: %v", len(want), whole)
	}
	end := groups[len(groups)-1].pos
	for _, at := range []Position{{}, groups[3].pos, {File: end.File, Offset: end.Offset + 1}, {File: WindowEnd}} {
		fromStream := windowOpts(splits, 1<<30, 2, &opens)
		fromStream.Start = at
		s, err := NewWindowSource(fromStream)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs, wantGroups, _ := windowRead(t, s)
		held := windowOpts(splits, 1<<30, 2, &opens)
		held.Start, held.Whole = at, whole
		before := opens
		h, err := NewWindowSource(held)
		if err != nil {
			t.Fatal(err)
		}
		ids, gs, _ := windowRead(t, h)
		if opens != before || !slices.Equal(ids, wantIDs) || !slices.Equal(gs, wantGroups) {
			t.Fatalf("at %v: held data gave %d samples (opens %d -> %d), the stream %d", at, len(ids), before, opens, len(wantIDs))
		}
		if (at.Offset > end.Offset || at.File == WindowEnd) && len(ids) != 0 {
			t.Fatalf("at the end %v: %d samples", at, len(ids))
		}
	}
}

// TestWindowName: window names round-trip, file names with '@' and ')'
// included; other names are not windows.
func TestWindowName(t *testing.T) {
	for _, p := range []Position{{}, {File: "a@b).libffm", Offset: 77}, {File: "hdfs://nn:9000/x", Offset: 1 << 40}} {
		if got, ok := ParseWindowName(WindowName(p)); !ok || got != p {
			t.Errorf("ParseWindowName(WindowName(%v)) = %v, %v", p, got, ok)
		}
	}
	for _, s := range []string{"", "a.libffm", "window(a.libffm)", "window(a@x)", "window(a@-1)"} {
		if _, ok := ParseWindowName(s); ok {
			t.Errorf("ParseWindowName(%q) is a window", s)
		}
	}
}

// TestFileSourceAnyOrder: a file cut into blocks of a few hundred bytes,
// read in a shuffled order (AnyOrder), gives every sample once; opened at
// any group's position, or the position after it while blocks go on (a
// block's end that is another block's start among them), it gives
// exactly the samples from there.
func TestFileSourceAnyOrder(t *testing.T) {
	splits, want := windowData(t, 60)
	var blocks []FileSplit
	for _, sp := range splits {
		end := sp.End
		if end <= 0 {
			fi, err := os.Stat(sp.Path)
			if err != nil {
				t.Fatal(err)
			}
			end = fi.Size()
		}
		for lo := sp.Start; lo < end; lo += 300 {
			blocks = append(blocks, FileSplit{Path: sp.Path, Start: lo, End: min(lo+300, end)})
		}
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	read := func(start Position) (ids []uint64, next []Position, cum []int) {
		cum = []int{0}
		dec, _ := NewDecoder(SampleGroup)
		s, err := NewFileSource(blocks, FileSourceOptions{Decoder: dec, Start: start, AnyOrder: true})
		if err != nil {
			t.Fatalf("open at %v: %v", start, err)
		}
		defer s.Close()
		g := new(Group)
		for s.Next(context.Background(), g) == nil {
			for i := g.Pos.Index; i < g.NumSamples(); i++ {
				_, id, _ := g.Levels[0].Line(i)
				ids = append(ids, id[0])
			}
			next, cum = append(next, g.Pos, g.Next), append(cum, cum[len(cum)-1], len(ids))
		}
		return ids, next, cum
	}
	all, next, cum := read(Position{})
	if !sameSet(all, want) || slices.Equal(all, want) {
		t.Fatalf("%d samples (the file's order: %v), want %d once each", len(all), slices.Equal(all, want), len(want))
	}
	for k, p := range next[:len(next)-1] { // the last is the end of the last block: ambiguous
		rest, _, _ := read(p)
		if !slices.Equal(rest, all[cum[k+1]:]) {
			t.Fatalf("opened after group %d at %v: %d samples, not the last ones", k, p, len(rest))
		}
	}
	if _, err := NewFileSource(append(blocks, FileSplit{Path: blocks[0].Path, Start: blocks[0].Start + 1, End: blocks[0].End}),
		FileSourceOptions{Decoder: srcDecoder(true), AnyOrder: true}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("overlapping blocks: %v", err)
	}
}
