package parquetsrc

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/xdlgo/xps/reader"
)

// RowError is a malformed row: a null label, a value that is not a
// finite float32, weights that do not match their list. It wraps
// reader.ErrMalformed.
type RowError struct {
	File     string
	RowGroup int
	// Row is the 0-based row of the file (not of the row group).
	Row    int64
	Reason string
}

func (e *RowError) Error() string {
	return fmt.Sprintf("parquetsrc: %s: row group %d, row %d: malformed row: %s", e.File, e.RowGroup, e.Row, e.Reason)
}

func (e *RowError) Unwrap() error { return reader.ErrMalformed }

// batchRows is how many rows the cursors decode at a time.
const batchRows = 1024

// seek places the cursors at row r (< numRows) of the current file.
func (s *Source) seek(r int64) error {
	lay := &s.f.lay
	g := lay.group(r)
	if g == s.rg && r == s.at {
		return nil
	}
	chunks := s.f.pf.RowGroups()[g].ColumnChunks()
	for i, leaf := range s.f.plan.leaves {
		c := &s.curs[i]
		sp := s.f.plan.specs[i]
		c.b, c.tokens, c.ns, c.pairs = sp.b, sp.tokens, sp.ns, sp.pairs
		if err := c.open(chunks[leaf], r-lay.first[g]); err != nil {
			s.rg = -1
			return s.corrupt(g, i, err)
		}
	}
	s.rg, s.at, s.ahead = g, r, false
	s.bi, s.bn = 0, 0
	return nil
}

// fillBatch decodes the next n rows of every cursor, the cursors dealt
// among s.decoders goroutines (each cursor is its own column chunk's:
// they share only the file, read at offsets). It returns the first
// cursor that failed and its error.
func (s *Source) fillBatch(n int) (int, error) {
	k := min(s.decoders, len(s.curs))
	if k <= 1 {
		for i := range s.curs {
			if err := s.curs[i].fill(n); err != nil {
				return i, err
			}
		}
		return 0, nil
	}
	errs := s.errs[:0]
	for range s.curs {
		errs = append(errs, nil)
	}
	s.errs = errs
	var wg sync.WaitGroup
	for w := 1; w < k; w++ {
		wg.Go(func() {
			for i := w; i < len(s.curs); i += k {
				errs[i] = s.curs[i].fill(n)
			}
		})
	}
	for i := 0; i < len(s.curs); i += k {
		errs[i] = s.curs[i].fill(n)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return 0, nil
}

// corrupt is the error about the page of cursor i in row group g.
func (s *Source) corrupt(g, i int, err error) error {
	return fmt.Errorf("%w: %s: row group %d: column %q: %v", ErrCorrupt, s.f.name, g, s.curs[i].b.name, err)
}

// read reads row s.at into s.cur and moves on; it returns the row's
// problem as a *RowError (the row was still read whole), or an error of
// the file.
func (s *Source) read() (rowErr, err error) {
	lay := &s.f.lay
	r := s.at
	if s.rg < 0 || r >= lay.first[s.rg]+lay.rows[s.rg] {
		s.rg = -1
		if err := s.seek(r); err != nil {
			return nil, err
		}
	}
	if s.bi == s.bn {
		n := int(min(batchRows, lay.first[s.rg]+lay.rows[s.rg]-r))
		if i, err := s.fillBatch(n); err != nil {
			g := s.rg
			s.rg = -1
			return nil, s.corrupt(g, i, err)
		}
		s.asm.assemble(s.f.plan, s.curs, n)
		s.bi, s.bn = 0, n
		s.stats.Bytes += lay.offset(r+int64(n)) - lay.offset(r) // the batch's bytes, read
	}
	reason := s.f.plan.build(&s.asm, s.curs, s.bi, &s.cur)
	s.bi++
	s.at++
	s.ahead = true
	if reason == "" && !s.cur.hasLabel {
		reason = fmt.Sprintf("the label (column %q) is null", s.m.Label)
	}
	if reason != "" {
		return &RowError{File: s.f.name, RowGroup: s.rg, Row: r, Reason: reason}, nil
	}
	return nil, nil
}

// readAt reads row r into s.cur (seeking unless the cursors are there).
func (s *Source) readAt(r int64) (rowErr, err error) {
	if s.ahead && s.at == r+1 {
		return s.lastErr, nil
	}
	if err := s.seek(r); err != nil {
		return nil, err
	}
	rowErr, err = s.read()
	s.lastErr = rowErr
	return rowErr, err
}

// startsAt reports whether row r starts a group, s.cur holding row r and
// s.prev row r-1 (for r > 0).
func (s *Source) startsAt(r int64) bool {
	return !s.group || r == 0 || r%MaxGroupRows == 0 || !s.cur.lines[1].equal(&s.prev.lines[1])
}

// findStart places s.row at the split's first group: its first row, or,
// when that row continues a group begun before the split, the next row
// that starts one (possibly past the split's end).
func (s *Source) findStart() error {
	s.started = true
	if !s.group || s.lo == 0 || s.lo >= s.hi {
		return nil
	}
	if _, err := s.readAt(s.lo - 1); err != nil {
		return err
	}
	for r := s.lo; r < s.f.lay.numRows; r++ {
		s.prev, s.cur = s.cur, s.prev
		s.ahead = false // cur no longer holds row at-1
		rowErr, err := s.read()
		if err != nil {
			return err
		}
		s.lastErr = rowErr
		if s.startsAt(r) {
			s.row = r
			return nil
		}
	}
	s.row = s.f.lay.numRows
	return nil
}

// Next implements reader.Source.
func (s *Source) Next(ctx context.Context, g *reader.Group) error {
	for {
		if s.closed {
			return reader.ErrSourceClosed
		}
		if s.err != nil {
			return s.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.si >= len(s.splits) {
			return io.EOF
		}
		if !s.started {
			if err := s.findStart(); err != nil {
				s.err = err
				return err
			}
		}
		if s.row >= s.hi {
			if err := s.enter(s.si + 1); err != nil {
				s.err = err
				return err
			}
			continue
		}
		ok, err := s.readGroup(g)
		if err != nil {
			s.err = err
			return err
		}
		if ok {
			return nil
		}
	}
}

// readGroup reads the group at s.row into g and reports whether it is
// one to return (not skipped, not consumed before a resume).
func (s *Source) readGroup(g *reader.Group) (bool, error) {
	first := s.row
	var skipped []error
	n, err := s.collect(g, &skipped)
	if err != nil {
		return false, err
	}
	for _, e := range skipped {
		if s.policy == reader.StopOnBad {
			return false, e
		}
		s.stats.AddSkipped(e)
	}
	g.Pos = reader.Position{File: s.f.name, Offset: first}
	if s.resuming {
		s.resuming = false
		g.Pos.Index = s.resumeIndex
	}
	if s.row >= s.hi {
		name := s.f.name
		if err := s.enter(s.si + 1); err != nil {
			return false, err
		}
		g.Pos.File = name
	}
	g.Next = s.pos
	if s.si < len(s.splits) && s.row < s.hi {
		g.Next = reader.Position{File: s.f.name, Offset: s.row}
		s.pos = g.Next
	}
	if n == 0 || g.Pos.Index >= n {
		return false, nil
	}
	s.stats.Groups++
	s.stats.Samples += int64(n - g.Pos.Index)
	return true, nil
}

// collect reads the group starting at s.row into g, leaving s.row at the
// next group's first row; rows that are malformed are left out of g and
// returned in skipped. It returns the number of samples in g.
func (s *Source) collect(g *reader.Group, skipped *[]error) (int, error) {
	first := s.row
	rowErr, err := s.readAt(first)
	if err != nil {
		return 0, err
	}
	if !s.group {
		s.row = first + 1
		if rowErr != nil {
			*skipped = append(*skipped, rowErr)
			return 0, nil
		}
		g.Reset(1)
		s.moveSample(g)
		return 1, nil
	}
	g.Reset(2)
	u := &s.cur.lines[1]
	g.AddLine(1, 0, u.fields, u.ids, u.vals)
	for _, d := range u.dense {
		g.AddDense(1, d.field, u.dvals[d.lo:d.hi])
	}
	n := 0
	for {
		if rowErr != nil {
			*skipped = append(*skipped, rowErr)
		} else {
			s.addSample(g)
			n++
		}
		r := s.at
		if r >= s.f.lay.numRows {
			s.row = r
			return n, nil
		}
		s.prev, s.cur = s.cur, s.prev
		if rowErr, err = s.read(); err != nil {
			return 0, err
		}
		s.lastErr = rowErr
		if s.startsAt(r) {
			s.row = r
			return n, nil
		}
	}
}

// addSample adds s.cur as the next sample of g.
func (s *Source) addSample(g *reader.Group) {
	l := &s.cur.lines[0]
	g.AddLine(0, 0, l.fields, l.ids, l.vals)
	for _, d := range l.dense {
		g.AddDense(0, d.field, l.dvals[d.lo:d.hi])
	}
	g.AddLabels(s.cur.label)
}

// moveSample makes s.cur the one sample of g (reset to one level)
// without copying its features: the row's buffers become g's and g's
// become the row's, which the next row overwrites. g's are the caller's
// to give (it passed g to be refilled), so no group the caller keeps is
// written. s.cur no longer holds the row.
func (s *Source) moveSample(g *reader.Group) {
	l, ln := &g.Levels[0], &s.cur.lines[0]
	l.Fields, ln.fields = ln.fields, l.Fields[:0]
	l.IDs, ln.ids = ln.ids, l.IDs[:0]
	l.Values, ln.vals = ln.vals, l.Values[:0]
	l.Offsets = append(l.Offsets[:0], 0, int32(len(l.IDs)))
	if len(ln.dense) > 0 {
		for _, d := range ln.dense {
			l.DenseFields = append(l.DenseFields, d.field)
			l.DenseEnds = append(l.DenseEnds, int32(d.hi))
		}
		l.DenseValues, ln.dvals = ln.dvals, l.DenseValues[:0]
	}
	l.DenseOffsets = append(l.DenseOffsets[:0], 0, int32(len(l.DenseFields)))
	g.AddLabels(s.cur.label)
	s.ahead = false
}

// resume places the source at p (see "Positions").
func (s *Source) resume(p reader.Position) error {
	if p.File == "" || p.Offset < 0 || p.Index < 0 {
		return fmt.Errorf("%w: %v", reader.ErrBadPosition, p)
	}
	inside, done := -1, -1
	for i, sp := range s.splits {
		if sp.Path != p.File {
			continue
		}
		if err := s.enter(i); err != nil {
			return err
		}
		if s.lo <= p.Offset && p.Offset < s.hi {
			inside = i
			break
		}
		if p.Offset == s.hi && done < 0 {
			done = i
		}
	}
	switch {
	case inside >= 0:
		return s.resumeIn(inside, p)
	case done >= 0:
		if p.Index != 0 {
			return fmt.Errorf("%w: %v: index after the end of split %v", reader.ErrBadPosition, p, s.splits[done])
		}
		if err := s.enter(done); err != nil {
			return err
		}
		return s.enter(done + 1)
	}
	return fmt.Errorf("%w: %v: not inside any split of the source", reader.ErrBadPosition, p)
}

// resumeIn resumes at p inside split i: from the split's start, or at a
// row that must start a group.
func (s *Source) resumeIn(i int, p reader.Position) error {
	if err := s.enter(i); err != nil {
		return err
	}
	s.pos = p
	s.resuming, s.resumeIndex = p.Index > 0, p.Index
	if p.Offset == s.lo {
		return nil
	}
	s.started, s.row = true, p.Offset
	if !s.group || p.Offset%MaxGroupRows == 0 {
		return nil
	}
	if _, err := s.readAt(p.Offset - 1); err != nil {
		return err
	}
	s.prev, s.cur = s.cur, s.prev
	s.ahead = false
	rowErr, err := s.readAt(p.Offset)
	if err != nil {
		return err
	}
	s.lastErr = rowErr
	if !s.startsAt(p.Offset) {
		return fmt.Errorf("%w: %v is not at a group boundary", reader.ErrBadPosition, p)
	}
	return nil
}
