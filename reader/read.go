package reader

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// MaxLineBytes is the longest line Read accepts, without its "\n". A longer
// line is malformed (and handled by the ErrorPolicy).
const MaxLineBytes = 16 << 20

// maxStatErrors is how many line errors ReadStats and SourceStats keep.
const maxStatErrors = 10

// readBufferSize is the size of Read's bufio.Reader.
const readBufferSize = 1 << 20

// ErrorPolicy says what to do with a malformed line.
type ErrorPolicy int

const (
	// StopOnBad returns the first malformed line as an error. It is the
	// zero value and the default.
	StopOnBad ErrorPolicy = iota
	// SkipBad counts and skips malformed lines.
	SkipBad
)

// String returns "stop" or "skip".
func (p ErrorPolicy) String() string {
	switch p {
	case StopOnBad:
		return "stop"
	case SkipBad:
		return "skip"
	}
	return "ErrorPolicy(" + strconv.Itoa(int(p)) + ")"
}

// ParseErrorPolicy returns the policy named s: "stop" or "skip".
func ParseErrorPolicy(s string) (ErrorPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "stop":
		return StopOnBad, nil
	case "skip":
		return SkipBad, nil
	}
	return 0, fmt.Errorf("reader: unknown error policy %q (want stop or skip)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (p ErrorPolicy) MarshalText() ([]byte, error) {
	if p != StopOnBad && p != SkipBad {
		return nil, fmt.Errorf("reader: invalid error policy %d", int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler using ParseErrorPolicy.
func (p *ErrorPolicy) UnmarshalText(b []byte) error {
	v, err := ParseErrorPolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// ErrBadOptions is wrapped by ReadOptions.Validate's errors.
var ErrBadOptions = errors.New("reader: bad read options")

// ReadOptions configures Read and ReadFile.
type ReadOptions struct {
	// Format is the text format. It must be set; there is no default.
	Format Format
	// OnError is the malformed-line policy. The default value is StopOnBad.
	OnError ErrorPolicy
	// Stride and Index split the input between Stride workers: this reader
	// takes the physical lines Index, Index+Stride, ... (0-based, counting
	// every line, empty and comment lines included). 0 <= Index < Stride.
	// The default value of Stride is 1 (and Index 0): read everything.
	Stride, Index int
	// MaxSamples stops reading after this many samples. The default value is
	// 0, meaning no limit.
	MaxSamples int
}

// EnsureDefaults fills zero fields with their defaults.
func (o *ReadOptions) EnsureDefaults() {
	if o.Stride == 0 {
		o.Stride = 1
	}
}

// Validate reports every problem of o at once; call EnsureDefaults first.
func (o *ReadOptions) Validate() error {
	var errs []error
	if !o.Format.lineFormat() {
		errs = append(errs, fmt.Errorf("%w: format %v is not libfm or libffm", ErrBadOptions, o.Format))
	}
	if o.OnError != StopOnBad && o.OnError != SkipBad {
		errs = append(errs, fmt.Errorf("%w: unknown error policy %d", ErrBadOptions, int(o.OnError)))
	}
	if o.Stride < 1 {
		errs = append(errs, fmt.Errorf("%w: stride %d < 1", ErrBadOptions, o.Stride))
	}
	if o.Index < 0 || (o.Stride >= 1 && o.Index >= o.Stride) {
		errs = append(errs, fmt.Errorf("%w: index %d not in [0, stride %d)", ErrBadOptions, o.Index, o.Stride))
	}
	if o.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("%w: max samples %d < 0", ErrBadOptions, o.MaxSamples))
	}
	return errors.Join(errs...)
}

// ReadStats counts what Read saw.
type ReadStats struct {
	// Lines is the number of physical lines consumed, of every worker.
	Lines int64
	// Samples is the number of samples appended to the Dataset.
	Samples int64
	// Skipped is the number of this reader's malformed lines skipped under
	// SkipBad.
	Skipped int64
	// Errors holds the first 10 malformed-line errors (*LineError).
	Errors []error
	// Bytes is the number of bytes consumed, up to the end of the last line
	// read. When MaxSamples stopped the read it is the offset just past the
	// last sample's line.
	Bytes int64
}

// ReadFile reads the samples of the file at path; see Read.
func ReadFile(path string, opts ReadOptions) (*Dataset, ReadStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ReadStats{}, fmt.Errorf("reader: %w", err)
	}
	defer f.Close()
	return Read(f, path, opts)
}

// Read reads samples from r until EOF or opts.MaxSamples; source names r in
// errors. It returns the Dataset read so far and its statistics even when it
// also returns an error: the first malformed line under StopOnBad (a
// *LineError), an I/O error (wrapped), or invalid options (ErrBadOptions, with
// a nil Dataset).
func Read(r io.Reader, source string, opts ReadOptions) (*Dataset, ReadStats, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, ReadStats{}, err
	}
	ds := NewDataset()
	var st ReadStats
	lr := lineReader{br: bufio.NewReaderSize(r, readBufferSize)}
	// binary says why r is not text, from the magic bytes of its first line
	// (unknown when that line is too long): the reason of every line error.
	// Peeking would wait for bytes a stream may not have sent yet.
	binary := ""
	p := NewParser(opts.Format)
	var feats []Feature
	for opts.MaxSamples == 0 || st.Samples < int64(opts.MaxSamples) {
		line, n, tooLong, err := lr.next()
		if err == io.EOF {
			return ds, st, nil
		}
		if err != nil {
			return ds, st, fmt.Errorf("reader: %s: %w", source, err)
		}
		lineNo := st.Lines
		st.Lines++
		if lineNo == 0 {
			binary = binaryInput("the input", line)
		}
		st.Bytes += int64(n)
		if lineNo%int64(opts.Stride) != int64(opts.Index) {
			continue
		}
		var label float32
		var perr error
		if tooLong {
			perr = &LineError{Reason: fmt.Sprintf("line is longer than %d bytes", MaxLineBytes)}
		} else {
			label, feats, perr = p.ParseLine(line, feats[:0])
		}
		switch {
		case perr == nil:
			ds.Append(label, feats)
			st.Samples++
		case perr == ErrEmptyLine:
		default:
			le := perr.(*LineError)
			le.Source, le.Line = source, lineNo+1
			if binary != "" {
				le.Reason = binary
			} else {
				le.Reason = withBinaryNote(le.Reason, line)
			}
			if opts.OnError == StopOnBad {
				return ds, st, le
			}
			st.Skipped++
			if len(st.Errors) < maxStatErrors {
				st.Errors = append(st.Errors, le)
			}
		}
	}
	return ds, st, nil
}

// lineReader splits a bufio.Reader into lines of any length, keeping at most
// MaxLineBytes of one.
type lineReader struct {
	br   *bufio.Reader
	long []byte // accumulates lines longer than the bufio buffer
}

// next returns the next line without its "\n", the number of bytes it
// consumed, and whether it was longer than MaxLineBytes (then line is nil).
// At the end of the input it returns io.EOF and nothing else; a last line
// without "\n" comes with a nil error. The line is valid until the next call.
func (lr *lineReader) next() (line []byte, n int, tooLong bool, err error) {
	b, err := lr.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		n = len(b)
		if n > 0 && b[n-1] == '\n' {
			b = b[:n-1]
		}
		if n > 0 && err == io.EOF {
			err = nil // a last line without "\n"
		}
		if len(b) > MaxLineBytes {
			return nil, n, true, err
		}
		return b, n, false, err
	}
	lr.long = append(lr.long[:0], b...)
	n = len(b)
	for err == bufio.ErrBufferFull {
		b, err = lr.br.ReadSlice('\n')
		n += len(b)
		if !tooLong {
			lr.long = append(lr.long, b...)
			if len(lr.long) > MaxLineBytes+1 {
				tooLong = true
				lr.long = lr.long[:0]
			}
		}
	}
	if err == io.EOF {
		err = nil
	}
	if tooLong {
		return nil, n, true, err
	}
	line = lr.long
	if k := len(line); k > 0 && line[k-1] == '\n' {
		line = line[:k-1]
	}
	if len(line) > MaxLineBytes {
		return nil, n, true, err
	}
	return line, n, false, err
}

// WriteLibFFM writes d as libFFM lines "label field:id:value ...", the label
// and values in shortest float32 form and each id as a decimal token. Reading
// the output back hashes those tokens again: the ids change, consistently per
// (field, id), while labels, fields and values are preserved.
func WriteLibFFM(w io.Writer, d *Dataset) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for i := 0; i < d.Len(); i++ {
		label, fields, ids, values := d.Sample(i)
		buf = strconv.AppendFloat(buf[:0], float64(label), 'g', -1, 32)
		for k := range ids {
			buf = append(buf, ' ')
			buf = strconv.AppendUint(buf, uint64(fields[k]), 10)
			buf = append(buf, ':')
			buf = strconv.AppendUint(buf, ids[k], 10)
			buf = append(buf, ':')
			buf = strconv.AppendFloat(buf, float64(values[k]), 'g', -1, 32)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("reader: write libffm: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("reader: write libffm: %w", err)
	}
	return nil
}
