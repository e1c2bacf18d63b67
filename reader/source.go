package reader

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrSourceClosed is returned by FileSource.Next after Close.
var ErrSourceClosed = errors.New("reader: source is closed")

// ErrIdle is returned by the Next of a streaming source that has had
// nothing new for a while. It is not a failure: the caller may train on
// what it holds (a partial batch) and call Next again.
var ErrIdle = errors.New("reader: no new data for now")

// ErrBadPosition is wrapped by the errors about a resume position that does
// not fit the source's splits or files.
var ErrBadPosition = errors.New("reader: bad position")

// ErrNoFiles is wrapped by ExpandPaths's error for a pattern that matches no
// files.
var ErrNoFiles = errors.New("reader: no files")

// FileSplit is a byte range of a file: the groups whose first line begins at
// an offset in [Start, End). End <= 0 means up to the end of the file.
type FileSplit struct {
	Path  string `json:"path"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

// String formats s as path[start:end), with "end" for End <= 0.
func (s FileSplit) String() string {
	end := "end"
	if s.End > 0 {
		end = strconv.FormatInt(s.End, 10)
	}
	return fmt.Sprintf("%s[%d:%s)", s.Path, s.Start, end)
}

// FileSourceOptions configures NewFileSource.
type FileSourceOptions struct {
	// Decoder turns lines into groups. It must be set; there is no default.
	Decoder Decoder
	// OnError is the malformed-group policy. The default value is StopOnBad.
	OnError ErrorPolicy
	// Start is where to resume reading (see "Resuming" above). The default
	// value, the zero Position, is the beginning of the first split.
	Start Position
	// FS is the file system the splits' paths name. The default value
	// (nil) is LocalFS.
	FS FS
	// AnyOrder lets the splits of one file come in any order (a shuffled
	// list of blocks), not only forward; they still must not overlap. A
	// position still names one split: the one holding its offset.
	AnyOrder bool
}

// FileSource is a Source over splits of files, local or on another FS. It
// is not safe for concurrent use.
type FileSource struct {
	splits []FileSplit
	dec    Decoder
	policy ErrorPolicy

	fsys   FS
	si     int    // index of the current split; len(splits) when done
	f      File   // the open file of splits[si], or nil
	name   string // the path of f
	lr     lineReader
	off    int64 // file offset of the next byte lr returns
	end    int64 // End of splits[si], math.MaxInt64 for "to the end"
	exact  bool  // the read of the file began at 0: line numbers are exact
	lineNo int64 // physical line number of the last line read (when exact)
	// binary says why f is not text (it starts with the magic bytes of
	// Parquet or gzip), or is "": it is the reason of every line error
	// about f. Known only once f was read from offset 0.
	binary string

	// The first line of the next group, read ahead (a copy).
	pend     []byte
	pendOff  int64
	pendLine int64
	havePend bool

	// resuming is set until the first group after a resume is read; the
	// group must begin at resumeOff when resumeIndex > 0.
	resuming    bool
	resumeOff   int64
	resumeIndex int

	pos    Position
	stats  SourceStats
	err    error // sticky error
	closed bool
}

var _ Source = (*FileSource)(nil)

// NewFileSource returns a source reading splits in order, starting at
// opts.Start. It reports every problem of the options and splits at once
// (wrapping ErrBadOptions); a Start that does not fit the splits wraps
// ErrBadPosition. It opens the first file only when Start is inside a split
// (to check the position); other files are opened by Next.
func NewFileSource(splits []FileSplit, opts FileSourceOptions) (*FileSource, error) {
	var errs []error
	if opts.Decoder == nil {
		errs = append(errs, fmt.Errorf("%w: no decoder", ErrBadOptions))
	}
	if opts.OnError != StopOnBad && opts.OnError != SkipBad {
		errs = append(errs, fmt.Errorf("%w: unknown error policy %d", ErrBadOptions, int(opts.OnError)))
	}
	errs = append(errs, validateSplits(splits, opts.AnyOrder)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &FileSource{splits: slices.Clone(splits), dec: opts.Decoder, policy: opts.OnError, fsys: orLocal(opts.FS)}
	if len(splits) > 0 {
		s.pos = Position{File: splits[0].Path, Offset: splits[0].Start}
	}
	p := opts.Start
	if p == (Position{}) {
		return s, nil
	}
	if p.File == "" || p.Offset < 0 || p.Index < 0 {
		return nil, fmt.Errorf("%w: %v", ErrBadPosition, p)
	}
	i, done := s.locate(p)
	if i < 0 {
		return nil, fmt.Errorf("%w: %v: not inside any split of the source", ErrBadPosition, p)
	}
	if done {
		if p.Index != 0 {
			return nil, fmt.Errorf("%w: %v: index after the end of split %v", ErrBadPosition, p, splits[i])
		}
		s.si = i + 1
		s.pos = p
		if s.si < len(splits) {
			s.pos = Position{File: splits[s.si].Path, Offset: splits[s.si].Start}
		}
		return s, nil
	}
	s.si, s.pos = i, p
	s.resuming, s.resumeOff, s.resumeIndex = true, p.Offset, p.Index
	if p.Offset == splits[i].Start {
		return s, nil // Next reads the split from its beginning
	}
	if err := s.openAt(p); err != nil {
		s.closeFile()
		return nil, err
	}
	return s, nil
}

// validateSplits checks each split and that splits of one file come in
// increasing order (in any order with anyOrder) without overlapping.
func validateSplits(splits []FileSplit, anyOrder bool) []error {
	var errs []error
	if anyOrder { // the same checks, on the splits in the order of their starts
		splits = slices.Clone(splits)
		slices.SortStableFunc(splits, func(a, b FileSplit) int { return cmp.Compare(a.Start, b.Start) })
	}
	lastEnd := make(map[string]int64) // -1: the last split runs to the end
	for i, sp := range splits {
		if sp.Path == "" || sp.Start < 0 || (sp.End > 0 && sp.End <= sp.Start) {
			errs = append(errs, fmt.Errorf("%w: split %d: %v is empty or invalid", ErrBadOptions, i, sp))
			continue
		}
		if e, ok := lastEnd[sp.Path]; ok && (e < 0 || sp.Start < e) {
			errs = append(errs, fmt.Errorf("%w: split %d: %v overlaps or precedes an earlier split of the file",
				ErrBadOptions, i, sp))
		}
		if sp.End > 0 {
			lastEnd[sp.Path] = sp.End
		} else {
			lastEnd[sp.Path] = -1
		}
	}
	return errs
}

// locate returns the split holding p, and whether p is the End of that split
// (the split is done). It returns -1 if no split fits.
//
// A split holding p comes first: p at the End of one split and the Start
// of another (adjacent blocks in any order) is the other's start, as the
// source's positions mean it when the splits go on (at the end of a split
// the source moves to the next split's start). With AnyOrder the position
// after the last split is ambiguous when another split starts there; a
// group's Pos never is (WindowSource resumes only at those).
func (s *FileSource) locate(p Position) (int, bool) {
	for i, sp := range s.splits {
		if sp.Path == p.File && sp.Start <= p.Offset && (sp.End <= 0 || p.Offset < sp.End) {
			return i, false
		}
	}
	for i, sp := range s.splits {
		if sp.Path == p.File && sp.End > 0 && p.Offset == sp.End {
			return i, true
		}
	}
	return -1, false
}

// Position implements Source: the position of the next sample not yet
// returned by Next.
func (s *FileSource) Position() Position { return s.pos }

// Stats implements Source. Groups and Samples count what Next returned
// (Samples leaves out the samples before a group's Pos.Index); Bytes counts
// every byte read from the files, lines skipped to find a group boundary
// included; Skipped counts malformed groups skipped under SkipBad.
func (s *FileSource) Stats() SourceStats {
	st := s.stats
	st.Errors = slices.Clone(st.Errors)
	return st
}

// Close implements Source. Next returns ErrSourceClosed afterwards.
func (s *FileSource) Close() error {
	s.closed = true
	return s.closeFile()
}

func (s *FileSource) closeFile() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.havePend = nil, false
	if err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	return nil
}

// Next implements Source.
func (s *FileSource) Next(ctx context.Context, g *Group) error {
	if s.closed {
		return ErrSourceClosed
	}
	if s.err != nil {
		return s.err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.si >= len(s.splits) {
			return io.EOF
		}
		if s.f == nil {
			if err := s.openSplit(); err != nil {
				return s.fail(err)
			}
		}
		if !s.havePend || s.pendOff >= s.end {
			if s.resuming && s.resumeIndex > 0 {
				return s.fail(fmt.Errorf("%w: position %v is not at a group boundary (no group there)",
					ErrBadPosition, s.pos))
			}
			if err := s.endSplit(); err != nil {
				return s.fail(err)
			}
			continue
		}
		path, off := s.splits[s.si].Path, s.pendOff
		line := int64(0)
		if s.exact {
			line = s.pendLine
		}
		index, first := 0, s.resuming
		if first {
			s.resuming = false
			if s.resumeIndex > 0 && off != s.resumeOff {
				return s.fail(fmt.Errorf("%w: position %v is not at a group boundary (the next group starts at %d)",
					ErrBadPosition, Position{File: path, Offset: s.resumeOff, Index: s.resumeIndex}, off))
			}
			index = s.resumeIndex
		}
		ok, err := s.readGroup(g)
		if err != nil {
			return s.fail(err)
		}
		if ok && first && index >= g.NumSamples() {
			ok = false // every sample was consumed before the resume
		}
		if err := s.advance(); err != nil {
			return s.fail(err)
		}
		if !ok {
			continue
		}
		g.Pos = Position{File: path, Offset: off, Index: index}
		g.Next, g.Line = s.pos, line
		s.stats.Groups++
		s.stats.Samples += int64(g.NumSamples() - index)
		return nil
	}
}

// fail makes err sticky and returns it.
func (s *FileSource) fail(err error) error {
	s.err = err
	return err
}

// advance sets the position to the next group, ending the split when it has
// no more.
func (s *FileSource) advance() error {
	if s.havePend && s.pendOff < s.end {
		s.pos = Position{File: s.splits[s.si].Path, Offset: s.pendOff}
		return nil
	}
	return s.endSplit()
}

// endSplit closes the current split and moves the position to the next one
// (or to the end of the last).
func (s *FileSource) endSplit() error {
	sp := s.splits[s.si]
	endOff := sp.End
	if endOff <= 0 {
		endOff = max(s.off, sp.Start) // s.off is the file's size: the split ran to EOF
	}
	err := s.closeFile()
	s.si++
	if s.si < len(s.splits) {
		s.pos = Position{File: s.splits[s.si].Path, Offset: s.splits[s.si].Start}
	} else {
		s.pos = Position{File: sp.Path, Offset: endOff}
	}
	return err
}

// open opens the file of the current split.
func (s *FileSource) open() error {
	sp := s.splits[s.si]
	f, err := s.fsys.Open(sp.Path)
	if err != nil {
		return fmt.Errorf("reader: split %v: %w", sp, err)
	}
	s.f, s.name, s.binary = f, sp.Path, ""
	if s.lr.br == nil {
		s.lr.br = bufio.NewReaderSize(f, readBufferSize)
	}
	s.end = sp.End
	if s.end <= 0 {
		s.end = math.MaxInt64
	}
	s.havePend = false
	return nil
}

// seek makes the line reader continue at byte off of the open file.
func (s *FileSource) seek(off int64) error {
	if _, err := s.f.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("reader: %s: %w", s.name, err)
	}
	s.lr.br.Reset(s.f)
	s.off = off
	s.lineNo = 0
	if off == 0 {
		// Look at the magic bytes; the first line is read from the same
		// buffer.
		head, err := s.lr.br.Peek(magicLen)
		if err != nil && err != io.EOF {
			return fmt.Errorf("reader: %s: %w", s.name, err)
		}
		s.binary = binaryInput("the file", head)
	}
	return nil
}

// openSplit opens the current split and reads ahead the first line of its
// first group, following the split rules.
func (s *FileSource) openSplit() error {
	if err := s.open(); err != nil {
		return err
	}
	start := s.splits[s.si].Start
	if start > 0 {
		if err := s.seek(start - 1); err != nil {
			return err
		}
		s.exact = false
		// Skip the rest of the line holding byte start-1.
		_, n, _, err := s.lr.next()
		if err != nil && err != io.EOF {
			return fmt.Errorf("reader: %s: %w", s.name, err)
		}
		s.off += int64(n)
		s.stats.Bytes += int64(n)
		return s.scanToStart()
	}
	if err := s.seek(0); err != nil {
		return err
	}
	s.exact = true
	line, off, long, ok, err := s.readLine()
	if err != nil || !ok {
		return err
	}
	if !long {
		header, herr := s.dec.Header(line)
		if herr != nil {
			le := s.lineErr(herr, line, off, s.lineNo)
			if s.policy == StopOnBad {
				return le
			}
			s.skipped(le)
			header = true // drop the bad header line
		}
		if header {
			if line, off, long, ok, err = s.readLine(); err != nil || !ok {
				return err
			}
		}
	}
	if !long && s.dec.Starts(line) {
		s.setPend(line, off)
		return nil
	}
	var le *LineError
	if long {
		le = s.lineErrf(off, s.lineNo, "line is longer than %d bytes", MaxLineBytes)
	} else {
		le = s.lineErrf(off, s.lineNo, "line before the first group")
	}
	if s.policy == StopOnBad {
		return le
	}
	s.skipped(le)
	return s.scanToStart()
}

// openAt opens the current split to resume at p, inside the split and not
// at its Start, and checks that p is a group boundary.
func (s *FileSource) openAt(p Position) error {
	if err := s.open(); err != nil {
		return err
	}
	if s.splits[s.si].Start == 0 {
		// Give the Decoder the file's header again.
		if err := s.seek(0); err != nil {
			return err
		}
		s.exact = true
		line, off, long, ok, err := s.readLine()
		if err != nil {
			return err
		}
		if ok && !long && off <= p.Offset {
			header, herr := s.dec.Header(line)
			if herr != nil {
				return s.lineErr(herr, line, off, s.lineNo)
			}
			if header && off == p.Offset {
				return fmt.Errorf("%w: position %v is not at a group boundary (it is the header)", ErrBadPosition, p)
			}
		}
	}
	notBoundary := func(why string) error {
		return fmt.Errorf("%w: position %v is not at a group boundary (%s)", ErrBadPosition, p, why)
	}
	fi, err := s.fsys.Stat(s.name)
	if err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	if p.Offset > fi.Size() {
		return notBoundary(fmt.Sprintf("the file has %d bytes", fi.Size()))
	}
	if p.Offset < fi.Size() {
		var b [1]byte
		if _, err := readAtFull(s.f, b[:], p.Offset-1); err != nil {
			return fmt.Errorf("reader: %s: %w", s.name, err)
		}
		if b[0] != '\n' {
			return notBoundary("not at the start of a line")
		}
	}
	if err := s.seek(p.Offset); err != nil {
		return err
	}
	s.exact = false
	line, off, long, ok, err := s.readLine()
	switch {
	case err != nil:
		return err
	case !ok && p.Offset != fi.Size():
		return notBoundary("only blank lines follow")
	case !ok:
		return nil // at the end of the file
	case off != p.Offset:
		return notBoundary("a blank or comment line")
	case long || !s.dec.Starts(line):
		return notBoundary("the line does not start a group")
	}
	s.setPend(line, off)
	return nil
}

// readLine returns the next line the Decoder should see, without its line
// ending, and its offset; or ok false at the end of the file. A line longer
// than MaxLineBytes comes back as nil with long true. The line is valid until
// the next call.
func (s *FileSource) readLine() (line []byte, off int64, long, ok bool, err error) {
	for {
		b, n, tooLong, err := s.lr.next()
		if err == io.EOF {
			return nil, s.off, false, false, nil
		}
		if err != nil {
			return nil, 0, false, false, fmt.Errorf("reader: %s: %w", s.name, err)
		}
		off = s.off
		s.off += int64(n)
		s.stats.Bytes += int64(n)
		s.lineNo++
		if tooLong {
			return nil, off, true, true, nil
		}
		if k := len(b); k > 0 && b[k-1] == '\r' {
			b = b[:k-1]
		}
		if i := skipBlank(b, 0); i == len(b) || b[i] == '#' {
			continue
		}
		return b, off, false, true, nil
	}
}

// scanToStart skips lines up to the next one that starts a group and reads
// it ahead; at the end of the file nothing is read ahead.
func (s *FileSource) scanToStart() error {
	for {
		line, off, long, ok, err := s.readLine()
		if err != nil || !ok {
			return err
		}
		if !long && s.dec.Starts(line) {
			s.setPend(line, off)
			return nil
		}
	}
}

func (s *FileSource) setPend(line []byte, off int64) {
	s.pend = append(s.pend[:0], line...)
	s.pendOff, s.pendLine, s.havePend = off, s.lineNo, true
}

// readGroup decodes the group whose first line is read ahead, and reads ahead
// the first line of the next group. It returns false for a malformed group
// skipped under SkipBad, and the *LineError of one under StopOnBad.
func (s *FileSource) readGroup(g *Group) (bool, error) {
	off, lineNo := s.pendOff, s.pendLine
	s.havePend = false
	var bad *LineError
	if err := s.dec.Decode(s.pend, g); err != nil {
		bad = s.lineErr(err, s.pend, off, lineNo)
	}
	for bad == nil || s.policy == SkipBad {
		line, loff, long, ok, err := s.readLine()
		if err != nil {
			return false, err
		}
		if !ok {
			break
		}
		if !long && s.dec.Starts(line) {
			s.setPend(line, loff)
			break
		}
		switch {
		case bad != nil: // skipping the rest of a bad group
		case long:
			bad = s.lineErrf(loff, s.lineNo, "line is longer than %d bytes", MaxLineBytes)
		default:
			if err := s.dec.Decode(line, g); err != nil {
				bad = s.lineErr(err, line, loff, s.lineNo)
			}
		}
	}
	if bad == nil {
		if err := s.dec.End(g); err != nil {
			bad = s.lineErr(err, nil, off, lineNo)
		} else if len(g.Levels) == 0 || g.NumSamples() == 0 {
			bad = s.lineErrf(off, lineNo, "group without samples")
		}
	}
	if bad == nil {
		return true, nil
	}
	if s.policy == StopOnBad {
		return false, bad
	}
	s.skipped(bad)
	return false, nil
}

func (s *FileSource) skipped(le *LineError) { s.stats.AddSkipped(le) }

// lineErr turns a Decoder's error about line, the line at off (nil for a
// group's End), into a *LineError, noting when the line is not text.
func (s *FileSource) lineErr(err error, line []byte, off, lineNo int64) *LineError {
	reason := err.Error()
	var le *LineError
	if errors.As(err, &le) {
		reason = le.Reason
	}
	return s.lineErrf(off, lineNo, "%s", withBinaryNote(reason, line))
}

// lineErrf returns a *LineError about the line at off: with its line number
// when known, else with its byte offset in the reason. In a file that is
// not text (s.binary) the reason is why, whatever the line.
func (s *FileSource) lineErrf(off, lineNo int64, format string, args ...any) *LineError {
	le := &LineError{Source: s.splits[s.si].Path, Reason: fmt.Sprintf(format, args...)}
	if s.binary != "" {
		le.Reason = s.binary
	}
	if s.exact {
		le.Line = lineNo
	} else {
		le.Reason = fmt.Sprintf("byte offset %d: %s", off, le.Reason)
	}
	return le
}

// ExpandPaths returns the local files named by patterns: ExpandPathsFS on
// LocalFS.
func ExpandPaths(patterns []string) ([]string, error) { return ExpandPathsFS(nil, patterns) }

// ExpandPathsFS returns the files of fsys (LocalFS when nil) named by
// patterns, sorted and without duplicates. A pattern is
//
//   - a file: taken as is;
//   - a directory: every regular file below it, recursively, except those
//     whose name, or the name of a directory on the way, starts with '.' or
//     '_' (like Hadoop: _SUCCESS, _logs, .crc files); symbolic links to files
//     are followed, links to directories are not;
//   - otherwise a glob (fsys.Glob): each match that does not start with '.'
//     or '_' is taken as a file or directory as above.
//
// Names are cleaned with fsys.Clean. A pattern that matches no
// file is an error wrapping ErrNoFiles.
func ExpandPathsFS(fsys FS, patterns []string) ([]string, error) {
	fsys = orLocal(fsys)
	var out []string
	for _, pat := range patterns {
		n := len(out)
		fi, err := fsys.Stat(pat)
		switch {
		case err == nil:
			if out, err = expandPath(fsys, out, fsys.Clean(pat), fi); err != nil {
				return nil, err
			}
		case strings.ContainsAny(pat, `*?[\`):
			matches, gerr := fsys.Glob(pat)
			if gerr != nil {
				return nil, fmt.Errorf("reader: pattern %q: %w", pat, gerr)
			}
			for _, m := range matches {
				if hiddenName(baseName(m)) {
					continue
				}
				fi, err := fsys.Stat(m)
				if err != nil {
					return nil, fmt.Errorf("reader: %w", err)
				}
				if out, err = expandPath(fsys, out, m, fi); err != nil {
					return nil, err
				}
			}
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: %q does not exist", ErrNoFiles, pat)
		default:
			return nil, fmt.Errorf("reader: %w", err)
		}
		if len(out) == n {
			return nil, fmt.Errorf("%w: %q matches no files", ErrNoFiles, pat)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// hiddenName reports whether a file or directory name is hidden from
// directory and glob expansion.
func hiddenName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// expandPath appends path (a file) or the regular files below it (a
// directory) to out.
func expandPath(fsys FS, out []string, path string, fi fs.FileInfo) ([]string, error) {
	if fi.Mode().IsRegular() {
		return append(out, path), nil
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("reader: %s is not a regular file or a directory", path)
	}
	out, err := walkFiles(fsys, out, path)
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	return out, nil
}
