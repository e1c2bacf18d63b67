package parquetsrc

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/xdlgo/xps/reader"
)

// MaxGroupRows bounds a sample group: a row whose index in its file is a
// multiple of MaxGroupRows starts a group even when its user-level
// columns equal the row before's, so that where groups start stays a
// function of the rows alone (see "Sample groups").
const MaxGroupRows = 1024

// Options configures NewSource.
type Options struct {
	// Columns maps the files' columns to the label and fields. Required.
	Columns reader.ColumnMap
	// Namespace is reader.DecoderOptions.Namespace: field f's tokens are
	// hashed in field Namespace[f]'s namespace. The default value (nil)
	// hashes each field in its own.
	Namespace []uint32
	// OnError is what a malformed row (a null label, an infinite value)
	// does: stop (the default) or skip it, counted.
	OnError reader.ErrorPolicy
	// Start is where to resume (see "Positions"); the zero Position is the
	// beginning of the first split.
	Start reader.Position
	// FS is the file system of the splits' paths; nil is the local one.
	FS reader.FS
	// AnyOrder lets the splits of one file come in any order, as
	// reader.FileSourceOptions.AnyOrder.
	AnyOrder bool
	// Decoders is how many goroutines decode the mapped columns, each a
	// share of them, a batch of rows at a time. The default value (0) is
	// GOMAXPROCS, at most 4; 1 decodes them one after another.
	Decoders int
}

// Source reads sample groups from byte ranges of Parquet files. It is
// not safe for concurrent use.
type Source struct {
	splits []reader.FileSplit
	m      reader.ColumnMap
	ns     []uint32
	policy reader.ErrorPolicy
	fsys   reader.FS
	group  bool // user-level fields: rows form groups of two levels

	si      int     // the current split; len(splits) when done
	f       *pqFile // the file of splits[si], or nil
	sig     string
	sigOf   *pqFile
	lo, hi  int64 // the current split's rows
	row     int64 // the first row of the next group
	started bool  // the split's first group was found (continuations skipped)

	curs     []cursor
	asm      assembly // the cursors' batch in rows
	decoders int      // goroutines decoding the cursors' batches
	errs     []error  // fillBatch's, a cursor each
	bi       int      // the cursors' next row in their batch
	bn       int      // the rows of the batch
	rg       int      // the row group the cursors are in, -1 when none
	at       int64    // the row the cursors read next
	ahead    bool     // cur holds row at-1, read ahead
	cur      row      // the last row read
	prev     row      // the row before it, for the user key
	// lastErr is the problem of the row in cur.
	lastErr error

	resuming    bool
	resumeIndex int

	pos    reader.Position
	stats  reader.SourceStats
	err    error
	closed bool
}

var _ reader.Source = (*Source)(nil)

// NewSource returns a source reading splits of Parquet files in order,
// from opts.Start. It checks the options and splits (reporting every
// problem, wrapping reader.ErrBadOptions) and, for a Start inside a
// split, opens that file to check the position (reader.ErrBadPosition).
func NewSource(splits []reader.FileSplit, opts Options) (*Source, error) {
	var errs []error
	if err := opts.Columns.Validate(); err != nil {
		errs = append(errs, err)
	}
	if opts.OnError != reader.StopOnBad && opts.OnError != reader.SkipBad {
		errs = append(errs, fmt.Errorf("%w: unknown error policy %d", reader.ErrBadOptions, int(opts.OnError)))
	}
	errs = append(errs, checkSplits(splits, opts.AnyOrder)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Source{splits: slices.Clone(splits), m: opts.Columns, ns: opts.Namespace, policy: opts.OnError,
		fsys: opts.FS, group: opts.Columns.Grouped(), rg: -1, decoders: opts.Decoders}
	if s.decoders <= 0 {
		s.decoders = min(runtime.GOMAXPROCS(0), 4)
	}
	if s.fsys == nil {
		s.fsys = reader.LocalFS{}
	}
	if len(splits) == 0 {
		return s, nil
	}
	if opts.Start == (reader.Position{}) {
		if err := s.enter(0); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	if err := s.resume(opts.Start); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkSplits checks each split and that splits of one file do not
// overlap (and come forward unless anyOrder).
func checkSplits(splits []reader.FileSplit, anyOrder bool) []error {
	var errs []error
	sorted := splits
	if anyOrder {
		sorted = slices.Clone(splits)
		slices.SortStableFunc(sorted, func(a, b reader.FileSplit) int { return cmp.Compare(a.Start, b.Start) })
	}
	lastEnd := map[string]int64{}
	for i, sp := range sorted {
		if sp.Path == "" || sp.Start < 0 || (sp.End > 0 && sp.End <= sp.Start) {
			errs = append(errs, fmt.Errorf("%w: split %d: %v is empty or invalid", reader.ErrBadOptions, i, sp))
			continue
		}
		if e, ok := lastEnd[sp.Path]; ok && (e < 0 || sp.Start < e) {
			errs = append(errs, fmt.Errorf("%w: split %d: %v overlaps or precedes an earlier split of the file",
				reader.ErrBadOptions, i, sp))
		}
		lastEnd[sp.Path] = sp.End
		if sp.End <= 0 {
			lastEnd[sp.Path] = -1
		}
	}
	return errs
}

// enter makes split i the current one (opening its file when it is not
// open) with its rows; past the last split it leaves the position after
// it.
func (s *Source) enter(i int) error {
	s.si, s.started = i, false
	if i >= len(s.splits) {
		last := s.splits[len(s.splits)-1]
		s.pos = reader.Position{File: last.Path, Offset: s.hi}
		s.closeFile()
		return nil
	}
	sp := s.splits[i]
	if s.f == nil || s.f.name != sp.Path {
		s.closeFile()
		f, err := openFile(s.fsys, sp.Path, &s.m, s.ns)
		if err != nil {
			return err
		}
		if s.sigOf == nil {
			s.sig, s.sigOf = f.plan.sig, f
		} else if f.plan.sig != s.sig {
			f.close()
			return schemaChange(s.sigOf, f)
		}
		s.f = f
		s.curs = make([]cursor, len(f.plan.leaves))
		s.rg = -1
	}
	s.lo, s.hi = s.f.lay.rowRange(sp.Start, sp.End)
	s.row = s.lo
	s.pos = reader.Position{File: sp.Path, Offset: s.lo}
	return nil
}

// closeFile closes the current file and its cursors.
func (s *Source) closeFile() {
	for i := range s.curs {
		s.curs[i].close()
	}
	s.rg, s.ahead = -1, false
	if s.f != nil {
		s.f.close()
		s.f = nil
	}
}

// Position implements reader.Source.
func (s *Source) Position() reader.Position { return s.pos }

// Stats implements reader.Source.
func (s *Source) Stats() reader.SourceStats { return s.stats }

// Close implements reader.Source.
func (s *Source) Close() error {
	s.closed = true
	s.closeFile()
	return nil
}
