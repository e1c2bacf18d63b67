package rowsrc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/xdlgo/xps/reader"
)

// Errors of a Source.
var (
	// ErrProtocol is wrapped by the errors about what the service sent
	// that the protocol does not allow.
	ErrProtocol = errors.New("rowsrc: row service protocol error")
	// ErrSchema is wrapped by the errors about a table whose columns do
	// not fit the column map.
	ErrSchema = errors.New("rowsrc: table does not fit the column map")
)

// RowError is a malformed row: a null label, a number that is not a
// finite float32. It wraps reader.ErrMalformed.
type RowError struct {
	Table  string
	Row    int64
	Reason string
}

func (e *RowError) Error() string {
	return fmt.Sprintf("rowsrc: table %q, row %d: malformed row: %s", e.Table, e.Row, e.Reason)
}

func (e *RowError) Unwrap() error { return reader.ErrMalformed }

// Options configures NewSource.
type Options struct {
	// Addr is the service's Unix socket. Required.
	Addr string
	// Table names the table to read ("train", "test", ...). Required.
	Table string
	// Columns maps the table's columns to the label and fields.
	// Required.
	Columns reader.ColumnMap
	// Namespace is reader.DecoderOptions.Namespace: field f's tokens are
	// hashed in namespace Namespace[f] (default: f).
	Namespace []uint32
	// OnError is what a malformed row does: stop (the default) or skip
	// it, counted.
	OnError reader.ErrorPolicy
	// Start is where to resume: a position this source's Position or a
	// group's Pos gave (see "Positions"); the zero Position is the part's
	// first row.
	Start reader.Position
	// Part and Parts: the source reads the Part-th (0-based) of Parts
	// equal ranges of the table's rows. Parts 0 means 1.
	Part, Parts int
	// Batch is the rows a request asks for. The default value (0) is
	// DefaultBatch.
	Batch int
	// Timeout bounds each exchange with the service. The default value
	// (0) is DefaultTimeout.
	Timeout time.Duration
}

// Defaults of Options.
const (
	DefaultBatch   = 8192
	DefaultTimeout = 2 * time.Minute
)

// Source reads a table of a row service, a sample a row. It is not safe
// for concurrent use.
type Source struct {
	opts   Options
	name   string // Position.File
	conn   net.Conn
	br     *bufio.Reader
	schema Schema
	plan   *plan

	lo, hi int64 // the part's rows
	row    int64 // the next row
	from   int64 // the batch's first row
	n      int   // the batch's rows
	cols   []colData
	raw    []byte
	l      line

	stats  reader.SourceStats
	err    error
	closed bool
}

var _ reader.Source = (*Source)(nil)

// Name is the File of the positions of table's rows.
func Name(table string) string { return "rows:" + table }

// NewSource connects to the service, reads the table's schema and
// dictionaries, and binds the column map to them; it reports every
// problem of the options or the map at once.
func NewSource(opts Options) (*Source, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.Batch == 0 {
		opts.Batch = DefaultBatch
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Parts == 0 {
		opts.Parts = 1
	}
	conn, err := net.DialTimeout("unix", opts.Addr, opts.Timeout)
	if err != nil {
		return nil, fmt.Errorf("rowsrc: the row service at %s: %w", opts.Addr, err)
	}
	return newSource(opts, conn)
}

// newSource is NewSource over conn, the options checked and defaulted.
func newSource(opts Options, conn net.Conn) (*Source, error) {
	s := &Source{opts: opts, name: Name(opts.Table), conn: conn, br: bufio.NewReaderSize(conn, maxHeader)}
	if err := s.open(); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// check reports every problem of the options (wrapping
// reader.ErrBadOptions).
func (o *Options) check() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: rowsrc: "+format, append([]any{reader.ErrBadOptions}, a...)...))
	}
	if o.Addr == "" {
		bad("no service address")
	}
	if o.Table == "" {
		bad("no table")
	}
	if o.Parts < 0 || o.Part < 0 || o.Part >= max(o.Parts, 1) {
		bad("part %d of %d", o.Part, o.Parts)
	}
	if o.Batch < 0 || o.Timeout < 0 {
		bad("batch %d, timeout %v", o.Batch, o.Timeout)
	}
	if o.OnError != reader.StopOnBad && o.OnError != reader.SkipBad {
		bad("unknown error policy %d", int(o.OnError))
	}
	if err := o.Columns.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// open asks for the schema, binds the map and places the source at
// opts.Start.
func (s *Source) open() error {
	if err := s.send(request{Table: s.opts.Table, Schema: true}); err != nil {
		return err
	}
	if err := readHeader(s.br, &s.schema); err != nil {
		return s.wrap(err)
	}
	if s.schema.Error != "" {
		return fmt.Errorf("rowsrc: the row service at %s refused table %q: %s", s.opts.Addr, s.opts.Table, s.schema.Error)
	}
	if err := s.schema.check(s.opts.Table); err != nil {
		return s.wrap(err)
	}
	p, err := bind(&s.schema, s.opts.Columns, s.opts.Namespace)
	if err != nil {
		return err
	}
	s.plan = p
	if err := s.readDicts(); err != nil {
		return s.wrap(err)
	}
	s.cols = make([]colData, len(s.schema.Columns))
	rows, parts := s.schema.Rows, int64(s.opts.Parts)
	s.lo, s.hi = rows*int64(s.opts.Part)/parts, rows*int64(s.opts.Part+1)/parts
	s.row = s.lo
	if at := s.opts.Start; at != (reader.Position{}) {
		if at.File != s.name || at.Offset < s.lo || at.Offset > s.hi || at.Index != 0 {
			return fmt.Errorf("%w: %v is not a row of %s's part [%d, %d)", reader.ErrBadPosition, at, s.name, s.lo, s.hi)
		}
		s.row = at.Offset
	}
	s.from = s.row
	return nil
}

// readDicts reads the dictionaries that follow the schema, hashing the
// entries of the token fields' columns.
func (s *Source) readDicts() error {
	fieldOf := map[int]*fieldPlan{}
	for i := range s.plan.fields {
		fieldOf[s.plan.fields[i].col] = &s.plan.fields[i]
	}
	for ci, c := range s.schema.Columns {
		if c.Type != TypeDict {
			continue
		}
		fp := fieldOf[ci]
		if fp != nil {
			fp.dict = make([]uint64, c.DictLen)
		}
		err := readDict(s.br, c, func(k int, entry []byte) {
			if fp != nil {
				fp.dict[k] = reader.FeatureID(fp.ns, entry)
			}
		})
		if err != nil {
			return err
		}
		s.stats.Bytes += 8*(c.DictLen+1) + c.DictBytes
	}
	return nil
}

// send writes one request line, within the timeout.
func (s *Source) send(r request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	s.conn.SetDeadline(time.Now().Add(s.opts.Timeout))
	if _, err := s.conn.Write(append(b, '\n')); err != nil {
		return s.wrap(err)
	}
	return nil
}

// wrap names the service in a transport error.
func (s *Source) wrap(err error) error {
	if errors.Is(err, ErrProtocol) {
		return fmt.Errorf("%w (the row service at %s)", err, s.opts.Addr)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("rowsrc: the row service at %s closed the connection mid-answer: %w", s.opts.Addr, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("rowsrc: the row service at %s did not answer within %v: %w", s.opts.Addr, s.opts.Timeout, err)
	}
	return fmt.Errorf("rowsrc: the row service at %s: %w", s.opts.Addr, err)
}

// fetch reads the batch of rows from s.row on.
func (s *Source) fetch() error {
	to := min(s.row+int64(s.opts.Batch), s.hi)
	if err := s.send(request{Table: s.opts.Table, Rows: &[2]int64{s.row, to}}); err != nil {
		return err
	}
	var h batchHeader
	if err := readHeader(s.br, &h); err != nil {
		return s.wrap(err)
	}
	if h.Error != "" {
		return fmt.Errorf("rowsrc: the row service at %s refused rows [%d, %d) of %q: %s", s.opts.Addr, s.row, to, s.opts.Table, h.Error)
	}
	if h.From != s.row || h.To != to {
		return s.wrap(protocolError("asked for rows [%d, %d), got a header for [%d, %d)", s.row, to, h.From, h.To))
	}
	n := int(to - s.row)
	for ci, c := range s.schema.Columns {
		if err := readColumn(s.br, c, n, &s.cols[ci], &s.raw); err != nil {
			return s.wrap(err)
		}
		s.stats.Bytes += int64(n * size(c.Type))
		if c.Nullable {
			s.stats.Bytes += int64(n)
		}
	}
	s.from, s.n = s.row, n
	return nil
}

// Next implements reader.Source: the next row as a group of one sample.
func (s *Source) Next(ctx context.Context, g *reader.Group) error {
	for {
		switch {
		case s.closed:
			return reader.ErrSourceClosed
		case s.err != nil:
			return s.err
		case ctx.Err() != nil:
			return ctx.Err()
		case s.row >= s.hi:
			return io.EOF
		}
		if s.row >= s.from+int64(s.n) {
			if err := s.fetch(); err != nil {
				s.err = err
				return err
			}
		}
		row := s.row
		why := s.build(g, int(row-s.from))
		if why != "" {
			e := &RowError{Table: s.opts.Table, Row: row, Reason: why}
			if s.opts.OnError == reader.StopOnBad {
				s.err = e
				return e
			}
			s.stats.AddSkipped(e)
			s.row++
			continue
		}
		s.row++
		g.Pos, g.Next = reader.Position{File: s.name, Offset: row}, reader.Position{File: s.name, Offset: s.row}
		s.stats.Groups++
		s.stats.Samples++
		return nil
	}
}

// build fills g with row i of the batch and returns its problem, or "".
func (s *Source) build(g *reader.Group, i int) string {
	g.Reset(1)
	l := &s.l
	l.reset()
	lab := &s.cols[s.plan.label]
	v := lab.number(i)
	if v != v {
		return fmt.Sprintf("column %q: a null label", s.schema.Columns[s.plan.label].Name)
	}
	for fi := range s.plan.fields {
		fp := &s.plan.fields[fi]
		if why := fp.features(&s.cols[fp.col], i, l); why != "" {
			return why
		}
	}
	g.AddLine(0, 0, l.fields, l.ids, l.vals)
	for _, d := range l.dense {
		l.one[0] = d.v
		g.AddDense(0, d.field, l.one[:])
	}
	label := float32(0)
	if v > 0 {
		label = 1
	}
	g.AddLabels(label)
	return ""
}

// Position implements reader.Source: the next row.
func (s *Source) Position() reader.Position {
	return reader.Position{File: s.name, Offset: s.row}
}

// Stats implements reader.Source.
func (s *Source) Stats() reader.SourceStats { return s.stats }

// Rows returns the table's rows (all parts').
func (s *Source) Rows() int64 { return s.schema.Rows }

// Close implements reader.Source: it closes the connection.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.conn.Close()
}
