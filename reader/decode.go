package reader

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// NewDecoder returns a new Decoder for format f (see the package
// documentation for each format's lines and groups). A Decoder keeps scratch
// buffers and per-file state; use one per goroutine and per open file.
func NewDecoder(f Format) (Decoder, error) {
	return NewDecoderWith(f, DecoderOptions{})
}

// DecoderOptions change how a Decoder turns tokens into feature ids.
type DecoderOptions struct {
	// Namespace[f], for a field f below len(Namespace), is the field in
	// whose namespace the tokens of field f are hashed: the id of token t
	// of field f is FeatureID(Namespace[f], t), so that the same token in
	// f and in Namespace[f] is the same feature (a user's history of items
	// and the candidate item share their embeddings). The fields of the
	// samples are unchanged. Only libFM/libSVM, libFFM and the sample-group
	// format take it.
	//
	// The default value (nil) hashes every field in its own namespace.
	Namespace []uint32
}

// NewDecoderWith is NewDecoder with options; it fails for a format that
// does not take them.
func NewDecoderWith(f Format, o DecoderOptions) (Decoder, error) {
	if len(o.Namespace) > 0 && f != LibFM && f != LibFFM && f != SampleGroup {
		return nil, fmt.Errorf("reader: format %v does not take field namespaces (libfm, libffm and group do)", f)
	}
	for g, ns := range o.Namespace {
		if ns >= MaxField {
			return nil, fmt.Errorf("reader: field %d's namespace %d is not below %d", g, ns, MaxField)
		}
	}
	switch f {
	case LibFM, LibFFM:
		p := NewParser(f)
		p.ns = o.Namespace
		return &sampleDecoder{p: p}, nil
	case SampleGroup:
		return &groupDecoder{ns: o.Namespace}, nil
	case XML:
		return &xmlDecoder{}, nil
	case Criteo:
		return &criteoDecoder{}, nil
	case Parquet:
		return nil, errors.New("reader: Parquet files are not read line by line: package reader/parquetsrc reads them (format parquet with train.columns)")
	}
	return nil, fmt.Errorf("reader: no decoder for format %v", f)
}

// errNoSample is Decode's reason for an empty, blank or comment line, which a
// Source never passes on.
var errNoSample = errors.New("line holds no sample (empty, blank or a comment)")

// sampleDecoder decodes libFM/libSVM and libFFM lines with a Parser: one
// group of one level and one line per input line.
type sampleDecoder struct {
	p     *Parser
	feats []Feature // scratch for ParseLine
	buf   lineBuf
}

// Header reports false: these formats have no file header.
func (d *sampleDecoder) Header([]byte) (bool, error) { return false, nil }

// Starts reports true: every line is a group.
func (d *sampleDecoder) Starts([]byte) bool { return true }

// Decode resets g to one level and adds line as its only sample, with the
// label binarized as by Parser.ParseLine.
func (d *sampleDecoder) Decode(line []byte, g *Group) error {
	g.Reset(1)
	label, feats, err := d.p.ParseLine(line, d.feats[:0])
	d.feats = feats[:0]
	if err != nil {
		return reasonOf(err)
	}
	d.buf.reset()
	for _, f := range feats {
		d.buf.add(f.Field, f.ID, f.Value)
	}
	g.AddLine(0, 0, d.buf.fields, d.buf.ids, d.buf.values)
	g.AddLabels(label)
	return nil
}

// End checks nothing: a decoded line is a complete group.
func (d *sampleDecoder) End(*Group) error { return nil }

// reasonOf turns a ParseLine error into a plain error holding the reason.
func reasonOf(err error) error {
	if err == ErrEmptyLine {
		return errNoSample
	}
	var le *LineError
	if errors.As(err, &le) {
		return errors.New(le.Reason)
	}
	return err
}

// lineBuf is a decoder's scratch for the sparse features of one line.
type lineBuf struct {
	fields []uint32
	ids    []uint64
	values []float32
}

func (b *lineBuf) reset() {
	b.fields, b.ids, b.values = b.fields[:0], b.ids[:0], b.values[:0]
}

func (b *lineBuf) add(field uint32, id uint64, value float32) {
	b.fields = append(b.fields, field)
	b.ids = append(b.ids, id)
	b.values = append(b.values, value)
}

// trimCR drops one trailing '\r' (the rest of a "\r\n" line ending).
func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// parseDecimal parses a non-empty run of ASCII digits. Values above
// math.MaxUint64 saturate to math.MaxUint64; callers compare with their bound.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			v = math.MaxUint64
			continue
		}
		v = v*10 + d
	}
	return v, true
}

// parseFinite32 parses b like a feature value (see parseValue): a number
// accepted by strconv.ParseFloat with bitSize 32 whose float32 is finite.
// On failure why says what is wrong ("is not a number", ...).
func parseFinite32(b []byte) (v float32, why string) {
	if v, ok := fastFloat32(b); ok {
		return v, ""
	}
	if len(b) == 0 {
		return 0, "is empty"
	}
	f, err := strconv.ParseFloat(string(b), 32)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && !math.IsInf(f, 0) {
			return float32(f), "" // underflow to zero or a subnormal
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, "overflows float32"
		}
		return 0, "is not a number"
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "is not finite"
	}
	return float32(f), ""
}

// clip shortens b for an error message to the longest prefix whose %q
// form is at most 64 bytes between the quotes, cut at a rune boundary, and
// marks a cut with "...". Messages quote it with %q, which escapes control
// bytes and invalid UTF-8, so no input byte reaches a message raw and
// binary input (4 bytes per escaped byte) is clipped as short as text.
func clip(b []byte) string {
	const n = 64
	if len(b) <= n/4 {
		return string(b) // no byte quotes wider than 4
	}
	var buf [16]byte
	w := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			w += len(`\xff`)
		case r == '"':
			w += len(`\"`)
		case r == '\'':
			w++
		default:
			w += len(strconv.AppendQuoteRune(buf[:0], r)) - 2
		}
		if w > n {
			return string(b[:i]) + "..."
		}
		i += size
	}
	return string(b)
}

// namespace returns the field whose namespace field's tokens hash in.
func namespace(ns []uint32, field uint32) uint32 {
	if int(field) < len(ns) {
		return ns[field]
	}
	return field
}
