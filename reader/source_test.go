package reader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// srcGroupDec decodes a test format of multi-line groups: a line "G <gid>"
// starts a group (its top level, one line with the id gid) and every
// following line "label sid f1 f2 ..." (non-negative integers) is a sample
// whose first id is sid. With header set, a first line starting with "H" is
// a header ("HBAD" is a malformed one). It does not allocate once its scratch
// has grown.
type srcGroupDec struct {
	header  bool
	headers []string // the header lines seen
	ids     []uint64
	fields  []uint32
	values  []float32
}

func (d *srcGroupDec) Header(line []byte) (bool, error) {
	if !d.header || len(line) == 0 || line[0] != 'H' {
		return false, nil
	}
	d.headers = append(d.headers, string(line))
	if string(line) == "HBAD" {
		return false, errors.New("bad header")
	}
	return true, nil
}

func (d *srcGroupDec) Starts(line []byte) bool {
	i := skipBlank(line, 0)
	return i < len(line) && line[i] == 'G' && (i+1 == len(line) || isBlank(line[i+1]))
}

func (d *srcGroupDec) Decode(line []byte, g *Group) error {
	if d.Starts(line) {
		g.Reset(2)
		i := skipBlank(line, 0) + 1
		if err := d.parse(line[i:]); err != nil {
			return err
		}
		if len(d.ids) != 1 {
			return fmt.Errorf("want one group id, got %d", len(d.ids))
		}
		g.AddLine(1, 0, d.fields, d.ids, d.values)
		return nil
	}
	if err := d.parse(line); err != nil {
		return err
	}
	if len(d.ids) < 2 {
		return errors.New("want a label and a sample id")
	}
	g.AddLine(0, 0, d.fields[1:], d.ids[1:], d.values[1:])
	g.AddLabels(float32(d.ids[0]))
	return nil
}

func (d *srcGroupDec) End(g *Group) error {
	if g.NumSamples() == 0 {
		return errors.New("group without samples")
	}
	return nil
}

// parse splits line into non-negative integers (in d.ids, with fields and
// values alongside).
func (d *srcGroupDec) parse(line []byte) error {
	d.ids, d.fields, d.values = d.ids[:0], d.fields[:0], d.values[:0]
	for j := 0; ; {
		i := skipBlank(line, j)
		if i == len(line) {
			return nil
		}
		j = nextBlank(line, i)
		var n uint64
		for _, c := range line[i:j] {
			if c < '0' || c > '9' {
				return fmt.Errorf("token %q is not a number", line[i:j])
			}
			n = n*10 + uint64(c-'0')
		}
		d.ids = append(d.ids, n)
		d.fields = append(d.fields, uint32(len(d.fields)))
		d.values = append(d.values, 1)
	}
}

// srcLineDec decodes one sample per line, "label sid f1 ...", like srcGroupDec's
// sample lines.
type srcLineDec struct{ srcGroupDec }

func (d *srcLineDec) Header([]byte) (bool, error) { return false, nil }
func (d *srcLineDec) Starts([]byte) bool          { return true }
func (d *srcLineDec) Decode(line []byte, g *Group) error {
	g.Reset(1)
	return d.srcGroupDec.Decode(line, g)
}

// srcGen writes random test files.
type srcGen struct {
	r   *rand.Rand
	sid uint64 // the next sample id
}

func (gen *srcGen) eol() string {
	if gen.r.IntN(4) == 0 {
		return "\r\n"
	}
	return "\n"
}

// noise returns zero or more lines the Decoder never sees.
func (gen *srcGen) noise() string {
	var b strings.Builder
	for gen.r.IntN(5) == 0 {
		b.WriteString([]string{"", "   ", "\t", "# comment", "  # G 5", "#", " \t "}[gen.r.IntN(7)] + gen.eol())
	}
	return b.String()
}

func (gen *srcGen) sample() (string, uint64) {
	gen.sid++
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d", gen.r.IntN(2), gen.sid)
	for range gen.r.IntN(6) {
		fmt.Fprintf(&b, " %d", gen.r.IntN(1000))
	}
	return b.String() + gen.eol(), gen.sid
}

// file returns a file of n groups (grouped) or n samples (one per line) and
// the sample ids in it, in order.
func (gen *srcGen) file(grouped bool, n int) (string, []uint64) {
	var b strings.Builder
	var sids []uint64
	for range n {
		b.WriteString(gen.noise())
		if grouped {
			fmt.Fprintf(&b, "%sG %d%s", []string{"", " "}[gen.r.IntN(2)], gen.r.IntN(100), gen.eol())
		}
		for k := range 1 + gen.r.IntN(6) {
			if k > 0 && !grouped {
				break
			}
			if k > 0 {
				b.WriteString(gen.noise())
			}
			line, sid := gen.sample()
			b.WriteString(line)
			sids = append(sids, sid)
		}
	}
	b.WriteString(gen.noise())
	s := b.String()
	if gen.r.IntN(2) == 0 {
		s = strings.TrimRight(s, "\r\n") // no final line ending
	}
	return s, sids
}

func srcWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func srcDecoder(grouped bool) Decoder {
	if grouped {
		return &srcGroupDec{}
	}
	return &srcLineDec{}
}

// srcCheckGroup checks what a FileSource promises about a group it returned.
func srcCheckGroup(t *testing.T, src *FileSource, g *Group, contents map[string]string) {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.Next != src.Position() {
		t.Fatalf("group %v: Next %v != Position() %v", g.Pos, g.Next, src.Position())
	}
	if c, ok := contents[g.Pos.File]; ok {
		off := g.Pos.Offset
		line, _, _ := strings.Cut(c[min(off, int64(len(c))):], "\n")
		if off < 0 || (off > 0 && c[off-1] != '\n') || strings.TrimSpace(line) == "" || strings.TrimSpace(line)[0] == '#' {
			t.Fatalf("group %v does not start at a line", g.Pos)
		}
	}
}

// srcSids returns the sample ids of g from Pos.Index on.
func srcSids(g *Group, out []uint64) []uint64 {
	for i := g.Pos.Index; i < g.NumSamples(); i++ {
		_, ids, _ := g.Levels[0].Line(i)
		out = append(out, ids[0])
	}
	return out
}

// srcReadAll reads every sample of splits.
func srcReadAll(t *testing.T, splits []FileSplit, grouped bool, contents map[string]string) []uint64 {
	t.Helper()
	src, err := NewFileSource(splits, FileSourceOptions{Decoder: srcDecoder(grouped)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out []uint64
	var g Group
	for {
		err := src.Next(context.Background(), &g)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		srcCheckGroup(t, src, &g, contents)
		for _, sp := range splits {
			if sp.Path == g.Pos.File && sp.Start <= g.Pos.Offset && (sp.End <= 0 || g.Pos.Offset < sp.End) {
				goto owned
			}
		}
		t.Fatalf("group %v is outside the splits %v", g.Pos, splits)
	owned:
		out = srcSids(&g, out)
	}
	if st := src.Stats(); st.Samples != int64(len(out)) || st.Skipped != 0 {
		t.Fatalf("stats %+v after %d samples", st, len(out))
	}
	return out
}

// srcDataset writes files of random sizes (and an empty file, a comment-only
// file) under dir and returns their contents and all sample ids.
func srcDataset(t *testing.T, dir string, grouped bool, seed uint64) (map[string]string, []uint64) {
	gen := &srcGen{r: rand.New(rand.NewPCG(seed, 1))}
	contents := map[string]string{}
	var all []uint64
	for i, n := range []int{400, 60, 7, 150, 0} {
		c, sids := gen.file(grouped, n)
		path := filepath.Join(dir, fmt.Sprintf("part-%d", i))
		srcWrite(t, path, c)
		contents[path] = c
		all = append(all, sids...)
	}
	srcWrite(t, filepath.Join(dir, "part-9"), "# nothing\n\n")
	contents[filepath.Join(dir, "part-9")] = "# nothing\n\n"
	return contents, all
}

func TestFileSourceExactlyOnce(t *testing.T) {
	for _, grouped := range []bool{true, false} {
		dir := t.TempDir()
		contents, want := srcDataset(t, dir, grouped, 1)
		slices.Sort(want)
		paths, err := ExpandPaths([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		files, err := StatFiles(paths)
		if err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{1, 2, 3, 5} {
			for _, splitBytes := range []int64{0, 1, 97, 1000} {
				asg, err := Assign(files, workers, splitBytes, true)
				if err != nil {
					t.Fatal(err)
				}
				var got []uint64
				for _, splits := range asg {
					got = append(got, srcReadAll(t, splits, grouped, contents)...)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("grouped %v, %d workers, split %d: read %d samples, want %d (splits %v)",
						grouped, workers, splitBytes, len(got), len(want), asg)
				}
			}
		}
	}
}

// TestFileSourceEveryCut cuts a small file in two at every byte.
func TestFileSourceEveryCut(t *testing.T) {
	for _, grouped := range []bool{true, false} {
		gen := &srcGen{r: rand.New(rand.NewPCG(7, 7))}
		c, want := gen.file(grouped, 12)
		path := filepath.Join(t.TempDir(), "f")
		srcWrite(t, path, c)
		contents := map[string]string{path: c}
		for cut := int64(1); cut < int64(len(c)); cut++ {
			a := srcReadAll(t, []FileSplit{{Path: path, End: cut}}, grouped, contents)
			b := srcReadAll(t, []FileSplit{{Path: path, Start: cut}}, grouped, contents)
			if got := append(a, b...); !slices.Equal(got, want) {
				t.Fatalf("grouped %v, cut at %d: got %v, want %v", grouped, cut, got, want)
			}
		}
	}
}

func TestFileSourceRandomSplits(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 2))
		grouped := seed%2 == 0
		dir := t.TempDir()
		contents, want := srcDataset(t, dir, grouped, seed)
		var splits []FileSplit
		for _, path := range slices.Sorted(maps.Keys(contents)) {
			size := int64(len(contents[path]))
			var cuts []int64
			for range r.IntN(6) {
				if size > 1 {
					cuts = append(cuts, 1+r.Int64N(size-1))
				}
			}
			slices.Sort(cuts)
			cuts = slices.Compact(cuts)
			start := int64(0)
			for _, c := range cuts {
				splits = append(splits, FileSplit{Path: path, Start: start, End: c})
				start = c
			}
			splits = append(splits, FileSplit{Path: path, Start: start})
		}
		// Every split alone, and all of them in one source, in order.
		var got []uint64
		for _, sp := range splits {
			got = append(got, srcReadAll(t, []FileSplit{sp}, grouped, contents)...)
		}
		all := srcReadAll(t, splits, grouped, contents)
		if !slices.Equal(all, got) {
			t.Fatalf("seed %d: one source read %d samples, split by split %d", seed, len(all), len(got))
		}
		// The samples' digests: the splits' sums add up to the whole's,
		// and differ from those of a dataset with a sample missing.
		digest := func(splits []FileSplit) (int64, uint64) {
			src, err := NewFileSource(splits, FileSourceOptions{Decoder: srcDecoder(grouped)})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			n, d, err := Digest(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			return n, d
		}
		wholeN, wholeD := digest(splits)
		var sumN int64
		var sumD uint64
		for _, sp := range splits {
			n, d := digest([]FileSplit{sp})
			sumN, sumD = sumN+n, sumD+d
		}
		if wholeN != int64(len(all)) || sumN != wholeN || sumD != wholeD {
			t.Fatalf("seed %d: digests: whole %d samples %x, split by split %d samples %x", seed, wholeN, wholeD, sumN, sumD)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: read %d samples, want %d", seed, len(got), len(want))
		}
	}
}

// srcConsume reads n samples (all if n < 0) from src and returns them with
// the position after the last one: inside its group, or (when the group is
// done) either Position() or the group's position with Index =
// NumSamples, chosen by r.
func srcConsume(t *testing.T, src *FileSource, n int, r *rand.Rand) ([]uint64, Position, bool) {
	t.Helper()
	var out []uint64
	var g Group
	if n == 0 {
		return nil, src.Position(), false
	}
	for {
		err := src.Next(context.Background(), &g)
		if err == io.EOF {
			return out, src.Position(), true
		}
		if err != nil {
			t.Fatal(err)
		}
		srcCheckGroup(t, src, &g, nil)
		for i := g.Pos.Index; i < g.NumSamples(); i++ {
			_, ids, _ := g.Levels[0].Line(i)
			out = append(out, ids[0])
			if len(out) != n {
				continue
			}
			if i+1 < g.NumSamples() || r.IntN(2) == 0 {
				return out, Position{File: g.Pos.File, Offset: g.Pos.Offset, Index: i + 1}, false
			}
			return out, src.Position(), false
		}
	}
}

func TestFileSourceResume(t *testing.T) {
	for _, grouped := range []bool{true, false} {
		dir := t.TempDir()
		contents, _ := srcDataset(t, dir, grouped, 3)
		paths, _ := ExpandPaths([]string{dir})
		files, _ := StatFiles(paths)
		asg, err := Assign(files, 3, 200, true)
		if err != nil {
			t.Fatal(err)
		}
		asg = append(asg, []FileSplit{}) // a worker without splits
		for w, splits := range asg {
			full := srcReadAll(t, splits, grouped, contents)
			for seed := range uint64(25) {
				r := rand.New(rand.NewPCG(seed, uint64(w)))
				var got []uint64
				pos := Position{}
				for round := 0; ; round++ {
					if round > 10*len(full)+100 {
						t.Fatal("no progress")
					}
					src, err := NewFileSource(splits, FileSourceOptions{Decoder: srcDecoder(grouped), Start: pos})
					if err != nil {
						t.Fatalf("worker %d seed %d: resume at %v: %v", w, seed, pos, err)
					}
					if src.Position() != pos && pos != (Position{}) {
						// A position at the End of a split moves to the next split.
						if _, done := src.locate(pos); !done {
							t.Fatalf("Position() %v right after resuming at %v", src.Position(), pos)
						}
					}
					n := r.IntN(len(full)/4 + 2)
					s, next, eof := srcConsume(t, src, n, r)
					src.Close()
					got = append(got, s...)
					pos = next
					if eof {
						break
					}
				}
				if !slices.Equal(got, full) {
					t.Fatalf("grouped %v worker %d seed %d: resumed read gives %d samples, want %d",
						grouped, w, seed, len(got), len(full))
				}
				// Resuming at the very end gives nothing.
				src, err := NewFileSource(splits, FileSourceOptions{Decoder: srcDecoder(grouped), Start: pos})
				if err != nil {
					t.Fatalf("resume at the end %v: %v", pos, err)
				}
				if err := src.Next(context.Background(), &Group{}); err != io.EOF {
					t.Fatalf("Next at the end %v: %v", pos, err)
				}
				if src.Position() != pos {
					t.Fatalf("Position() %v after resuming at the end %v", src.Position(), pos)
				}
				src.Close()
			}
		}
	}
}

func TestFileSourcePositions(t *testing.T) {
	c := "# c\nG 1\n1 10\n\n1 11\nG 2\r\n0 12\n"
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	srcWrite(t, a, c)
	srcWrite(t, b, c)
	splits := []FileSplit{{Path: a, End: 12}, {Path: a, Start: 12}, {Path: b}}
	src, err := NewFileSource(splits, FileSourceOptions{Decoder: &srcGroupDec{}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// Line is the group's first physical line when the read of the file
	// began at offset 0, and unknown (0) in a split that starts inside it.
	want := []struct {
		pos, next Position
		line      int64
	}{
		{Position{a, 4, 0}, Position{a, 12, 0}, 2}, // the next group of a is in the next split
		{Position{a, 19, 0}, Position{b, 0, 0}, 0},
		{Position{b, 4, 0}, Position{b, 19, 0}, 2},
		{Position{b, 19, 0}, Position{b, int64(len(c)), 0}, 6},
	}
	if p := src.Position(); p != (Position{a, 0, 0}) {
		t.Errorf("initial position %v", p)
	}
	var g Group
	for i, w := range want {
		if err := src.Next(context.Background(), &g); err != nil {
			t.Fatal(err)
		}
		if g.Pos != w.pos || g.Next != w.next || src.Position() != w.next || g.Line != w.line {
			t.Errorf("group %d: pos %v next %v line %d, want %v %v %d", i, g.Pos, g.Next, g.Line, w.pos, w.next, w.line)
		}
	}
	if err := src.Next(context.Background(), &g); err != io.EOF {
		t.Fatalf("Next after the end: %v", err)
	}
	st := src.Stats()
	if st.Groups != 4 || st.Samples != 6 || st.Bytes < 2*int64(len(c)) || st.Skipped != 0 {
		t.Errorf("stats %+v", st)
	}
	// The end of a split with End > 0 is the end of the source.
	src2, err := NewFileSource([]FileSplit{{Path: a, End: 12}}, FileSourceOptions{Decoder: &srcGroupDec{}})
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	for src2.Next(context.Background(), &g) == nil {
	}
	if p := src2.Position(); p != (Position{a, 12, 0}) {
		t.Errorf("end position %v", p)
	}
	// Resume inside a group: the group comes back with Pos.Index set, and a
	// group whose samples were all consumed is skipped.
	for _, tc := range []struct {
		start Position
		pos   Position
	}{
		{Position{a, 4, 1}, Position{a, 4, 1}},
		{Position{a, 4, 2}, Position{a, 19, 0}},
		{Position{a, 4, 9}, Position{a, 19, 0}},
		{Position{a, 12, 0}, Position{a, 19, 0}},
		{Position{a, 19, 0}, Position{a, 19, 0}},
		{Position{a, 0, 0}, Position{a, 4, 0}},
	} {
		src, err := NewFileSource(splits, FileSourceOptions{Decoder: &srcGroupDec{}, Start: tc.start})
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Next(context.Background(), &g); err != nil || g.Pos != tc.pos {
			t.Errorf("resume at %v: first group at %v (%v), want %v", tc.start, g.Pos, err, tc.pos)
		}
		src.Close()
	}
}

func TestFileSourceHeader(t *testing.T) {
	c := "HEAD 3\nG 1\n1 10\nG 2\n1 11\nG 3\n1 12\n"
	path := filepath.Join(t.TempDir(), "h")
	srcWrite(t, path, c)
	read := func(splits []FileSplit, start Position) ([]uint64, []string) {
		d := &srcGroupDec{header: true}
		src, err := NewFileSource(splits, FileSourceOptions{Decoder: d, Start: start})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		var out []uint64
		var g Group
		for {
			err := src.Next(context.Background(), &g)
			if err == io.EOF {
				return out, d.headers
			}
			if err != nil {
				t.Fatal(err)
			}
			out = srcSids(&g, out)
		}
	}
	if got, h := read([]FileSplit{{Path: path}}, Position{}); !slices.Equal(got, []uint64{10, 11, 12}) || len(h) != 1 {
		t.Errorf("whole file: %v, headers %q", got, h)
	}
	if got, h := read([]FileSplit{{Path: path, Start: 3}}, Position{}); !slices.Equal(got, []uint64{10, 11, 12}) || len(h) != 0 {
		t.Errorf("from byte 3: %v, headers %q", got, h)
	}
	// Resuming inside a split that starts at 0 gives the Decoder the header.
	if got, h := read([]FileSplit{{Path: path}}, Position{path, 16, 0}); !slices.Equal(got, []uint64{11, 12}) || len(h) != 1 {
		t.Errorf("resumed: %v, headers %q", got, h)
	}
	// The header is not a group.
	hc := filepath.Join(t.TempDir(), "hc")
	srcWrite(t, hc, "# c\nHEAD\nG 1\n1 10\n")
	if _, err := NewFileSource([]FileSplit{{Path: hc}}, FileSourceOptions{Decoder: &srcGroupDec{header: true},
		Start: Position{hc, 4, 0}}); !errors.Is(err, ErrBadPosition) || !strings.Contains(err.Error(), "header") {
		t.Errorf("position at the header: %v", err)
	}
	// A malformed header.
	bad := filepath.Join(t.TempDir(), "bad")
	srcWrite(t, bad, "HBAD\nG 1\n1 10\n")
	src, _ := NewFileSource([]FileSplit{{Path: bad}}, FileSourceOptions{Decoder: &srcGroupDec{header: true}})
	defer src.Close()
	err := src.Next(context.Background(), &Group{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 || le.Source != bad || !strings.Contains(le.Reason, "bad header") {
		t.Errorf("bad header: %v", err)
	}
}

// errFile is the file TestFileSourceErrors reads, in its own directory.
type errFile struct{ dir, path, content string }

// newErrFile writes the file with lines 1 "G 1", 2 "1 10", 3 "G 2",
// 4 "1 x" (bad), 5 "1 11", 6 "G 3", 7 "1 12".
func newErrFile(t *testing.T) errFile {
	dir := t.TempDir()
	f := errFile{dir: dir, path: filepath.Join(dir, "f"), content: "G 1\n1 10\nG 2\n1 x\n1 11\nG 3\n1 12\n"}
	srcWrite(t, f.path, f.content)
	return f
}

// srcOpen opens a FileSource of splits, with a srcGroupDec unless opts
// names a decoder, and closes it when t ends.
func srcOpen(t *testing.T, splits []FileSplit, opts FileSourceOptions) *FileSource {
	t.Helper()
	if opts.Decoder == nil {
		opts.Decoder = &srcGroupDec{}
	}
	src, err := NewFileSource(splits, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// srcDrain reads src up to io.EOF or its first error and returns the
// sample ids read; io.EOF is returned as a nil error.
func srcDrain(src *FileSource) ([]uint64, error) {
	var out []uint64
	var g Group
	for {
		err := src.Next(context.Background(), &g)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = srcSids(&g, out)
	}
}

func TestFileSourceErrors(t *testing.T) {
	f := newErrFile(t)
	for _, tc := range []struct {
		name string
		test func(*testing.T, errFile)
	}{
		{"StopOnBad", testErrorsStopOnBad},
		{"SkipBad", testErrorsSkipBad},
		{"SkipBadKinds", testErrorsSkipBadKinds},
		{"NotAtGroupBoundary", testErrorsNotAtGroupBoundary},
		{"UnknownFile", testErrorsUnknownFile},
		{"MissingFile", testErrorsMissingFile},
		{"Cancelled", testErrorsCancelled},
		{"Closed", testErrorsClosed},
		{"BadOptions", testErrorsBadOptions},
		{"NoSplits", testErrorsNoSplits},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, f) })
	}
}

func testErrorsStopOnBad(t *testing.T, f errFile) {
	ctx := context.Background()
	src := srcOpen(t, []FileSplit{{Path: f.path}}, FileSourceOptions{})
	got, err := srcDrain(src)
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) || le.Source != f.path || le.Line != 4 ||
		!strings.Contains(le.Reason, `token "x" is not a number`) {
		t.Fatalf("err %v", err)
	}
	if !slices.Equal(got, []uint64{10}) || src.Position() != (Position{f.path, 9, 0}) {
		t.Errorf("read %v, position %v", got, src.Position())
	}
	if err2 := src.Next(ctx, &Group{}); err2 != err {
		t.Errorf("the error is not sticky: %v", err2)
	}
	// A split not starting at 0 names the byte offset.
	src = srcOpen(t, []FileSplit{{Path: f.path, Start: 5}}, FileSourceOptions{})
	_, err = srcDrain(src)
	if !errors.As(err, &le) || le.Line != 0 || !strings.Contains(le.Reason, "byte offset 13: ") {
		t.Errorf("err %v", err)
	}
}

func testErrorsSkipBad(t *testing.T, f errFile) {
	src := srcOpen(t, []FileSplit{{Path: f.path}}, FileSourceOptions{OnError: SkipBad})
	got, err := srcDrain(src)
	if err != nil || !slices.Equal(got, []uint64{10, 12}) {
		t.Fatalf("read %v, %v", got, err)
	}
	st := src.Stats()
	if st.Skipped != 1 || len(st.Errors) != 1 || st.Groups != 2 || st.Samples != 2 || st.Bytes != int64(len(f.content)) {
		t.Errorf("stats %+v", st)
	}
}

// testErrorsSkipBadKinds checks that lines outside groups, long lines and
// empty groups are skipped too, and that at most 10 errors are kept.
func testErrorsSkipBadKinds(t *testing.T, f errFile) {
	p := filepath.Join(f.dir, "g")
	srcWrite(t, p, "1 1\n1 2\nG 1\n1 3\nG 2\nG 3\n1 4\n1 "+strings.Repeat("5", MaxLineBytes)+"\nG 4\n1 6")
	src := srcOpen(t, []FileSplit{{Path: p}}, FileSourceOptions{OnError: SkipBad})
	got, err := srcDrain(src)
	if st := src.Stats(); err != nil || !slices.Equal(got, []uint64{3, 6}) || st.Skipped != 3 {
		t.Fatalf("read %v, %v, stats %+v", got, err, st)
	}
	want := []string{"g:1: malformed line: line before the first group", "g:5: malformed line: group without samples",
		"g:8: malformed line: line is longer than"}
	for i, e := range src.Stats().Errors {
		if !strings.Contains(e.Error(), want[i]) {
			t.Errorf("error %d: %v, want %q", i, e, want[i])
		}
	}
	// At most 10 errors are kept.
	srcWrite(t, p, strings.Repeat("G 1\nx\n", 25)+"G 2\n1 7\n")
	src = srcOpen(t, []FileSplit{{Path: p}}, FileSourceOptions{OnError: SkipBad})
	got, err = srcDrain(src)
	if st := src.Stats(); err != nil || !slices.Equal(got, []uint64{7}) || st.Skipped != 25 || len(st.Errors) != 10 {
		t.Fatalf("read %v, %v, stats %+v", got, err, st)
	}
}

func testErrorsNotAtGroupBoundary(t *testing.T, f errFile) {
	n := int64(len(f.content))
	for _, off := range []int64{2, 4, 9 + 4, n - 1, n + 1} {
		_, err := NewFileSource([]FileSplit{{Path: f.path}}, FileSourceOptions{Decoder: &srcGroupDec{},
			Start: Position{f.path, off, 0}})
		if !errors.Is(err, ErrBadPosition) || (off <= n && !strings.Contains(err.Error(), "not at a group boundary")) {
			t.Errorf("offset %d: %v", off, err)
		}
	}
	// A position with Index > 0 at a split start that is not a group start.
	src := srcOpen(t, []FileSplit{{Path: f.path, Start: 2}}, FileSourceOptions{Start: Position{f.path, 2, 1}})
	if err := src.Next(context.Background(), &Group{}); !errors.Is(err, ErrBadPosition) {
		t.Errorf("Next: %v", err)
	}
}

func testErrorsUnknownFile(t *testing.T, f errFile) {
	for _, p := range []Position{{"nope", 0, 0}, {"", 3, 0}, {f.path, -1, 0}, {f.path, 0, -1}} {
		if _, err := NewFileSource([]FileSplit{{Path: f.path, End: 20}}, FileSourceOptions{Decoder: &srcGroupDec{},
			Start: p}); !errors.Is(err, ErrBadPosition) {
			t.Errorf("start %v: %v", p, err)
		}
	}
	if _, err := NewFileSource([]FileSplit{{Path: f.path, End: 10}}, FileSourceOptions{Decoder: &srcGroupDec{},
		Start: Position{f.path, 12, 0}}); !errors.Is(err, ErrBadPosition) {
		t.Errorf("offset outside the splits: %v", err)
	}
}

func testErrorsMissingFile(t *testing.T, f errFile) {
	missing := filepath.Join(f.dir, "missing")
	src := srcOpen(t, []FileSplit{{Path: f.path}, {Path: missing}}, FileSourceOptions{OnError: SkipBad})
	got, err := srcDrain(src)
	if !errors.Is(err, fs.ErrNotExist) || !slices.Equal(got, []uint64{10, 12}) {
		t.Fatalf("read %v, %v", got, err)
	}
	src = srcOpen(t, []FileSplit{{Path: missing}}, FileSourceOptions{})
	_, err = srcDrain(src)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := NewFileSource([]FileSplit{{Path: missing}}, FileSourceOptions{Decoder: &srcGroupDec{},
		Start: Position{missing, 5, 0}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("resume in a missing file: %v", err)
	}
}

func testErrorsCancelled(t *testing.T, f errFile) {
	src := srcOpen(t, []FileSplit{{Path: f.path}}, FileSourceOptions{OnError: SkipBad})
	cctx, cancel := context.WithCancel(context.Background())
	var g Group
	if err := src.Next(cctx, &g); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := src.Next(cctx, &g); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if got, err := srcDrain(src); err != nil || !slices.Equal(got, []uint64{12}) {
		t.Errorf("after the cancellation: %v, %v", got, err)
	}
}

func testErrorsClosed(t *testing.T, f errFile) {
	ctx := context.Background()
	src := srcOpen(t, []FileSplit{{Path: f.path}}, FileSourceOptions{})
	if err := src.Next(ctx, &Group{}); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Next(ctx, &Group{}); !errors.Is(err, ErrSourceClosed) {
		t.Errorf("Next after Close: %v", err)
	}
}

func testErrorsBadOptions(t *testing.T, f errFile) {
	_, err := NewFileSource([]FileSplit{{Path: f.path, Start: 5, End: 5}, {Path: "", End: 1}, {Path: f.path}, {Path: f.path},
		{Path: "x", Start: -1}}, FileSourceOptions{OnError: 7})
	if !errors.Is(err, ErrBadOptions) {
		t.Fatal(err)
	}
	for _, want := range []string{"no decoder", "error policy 7", "split 0", "split 1", "split 3", "split 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "split 2") {
		t.Errorf("error %q blames split 2", err)
	}
}

func testErrorsNoSplits(t *testing.T, _ errFile) {
	src := srcOpen(t, nil, FileSourceOptions{})
	if err := src.Next(context.Background(), &Group{}); err != io.EOF || src.Position() != (Position{}) {
		t.Errorf("Next %v, position %v", err, src.Position())
	}
}

func TestFileSourceAllocs(t *testing.T) {
	gen := &srcGen{r: rand.New(rand.NewPCG(5, 5))}
	c, sids := gen.file(true, 3000)
	path := filepath.Join(t.TempDir(), "f")
	srcWrite(t, path, c)
	d := &srcGroupDec{}
	var g Group
	allocs := testing.AllocsPerRun(3, func() {
		src, err := NewFileSource([]FileSplit{{Path: path}}, FileSourceOptions{Decoder: d})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for src.Next(context.Background(), &g) == nil {
			n += g.NumSamples()
		}
		src.Close()
		if n != len(sids) {
			t.Fatalf("read %d samples, want %d", n, len(sids))
		}
	})
	if lines := strings.Count(c, "\n"); allocs > 50 {
		t.Errorf("%v allocations to read %d lines", allocs, lines)
	}
}

func TestExpandPaths(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/part-0", "a/part-1", "a/_SUCCESS", "a/.part-0.crc", "a/sub/part-2",
		"a/_logs/x", "a/.hidden/y", "b.txt", "c.txt", "_d.txt"} {
		srcWrite(t, filepath.Join(dir, p), "1 1\n")
	}
	j := func(ps ...string) []string {
		for i, p := range ps {
			ps[i] = filepath.Join(dir, p)
		}
		return ps
	}
	for _, tc := range []struct {
		patterns []string
		want     []string
	}{
		{j("a"), j("a/part-0", "a/part-1", "a/sub/part-2")},
		{j("b.txt", "a/part-1", "b.txt"), j("a/part-1", "b.txt")},
		{j("*.txt"), j("b.txt", "c.txt")},
		{j("_d.txt", "a/./sub/"), j("_d.txt", "a/sub/part-2")},
		{j("a/part-*", "a/*"), j("a/part-0", "a/part-1", "a/sub/part-2")},
	} {
		got, err := ExpandPaths(tc.patterns)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ExpandPaths(%q) = %q, %v; want %q", tc.patterns, got, err, tc.want)
		}
	}
	for _, patterns := range [][]string{j("nope"), j("*.csv"), j("a/_*"), j("a", "zz*"), j("[")} {
		if _, err := ExpandPaths(patterns); err == nil || (patterns[0] != j("[")[0] && !errors.Is(err, ErrNoFiles)) {
			t.Errorf("ExpandPaths(%q): %v", patterns, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ExpandPaths(j("empty")); !errors.Is(err, ErrNoFiles) {
		t.Errorf("empty directory: %v", err)
	}
}
