package reader

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrMalformed is wrapped by every error about a malformed input line.
var ErrMalformed = errors.New("reader: malformed line")

// ErrEmptyLine is returned by Parser.ParseLine for a line that holds no
// sample: empty, only spaces and tabs, or a comment starting with '#'. It is
// not an error in the data; Read skips such lines.
var ErrEmptyLine = errors.New("reader: empty line")

// LineError describes a malformed line. It unwraps to ErrMalformed.
type LineError struct {
	// Source names the input (a file path), or is empty.
	Source string
	// Line is the 1-based physical line number, or 0 when unknown.
	Line int64
	// Reason says what is wrong, e.g. `feature "5:x": value "x" is not a number`.
	Reason string
}

// Error formats the error as
// "reader: SOURCE:LINE: malformed line: REASON".
func (e *LineError) Error() string {
	var b strings.Builder
	b.WriteString("reader: ")
	switch {
	case e.Source != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.Source, e.Line)
	case e.Source != "":
		b.WriteString(e.Source + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString("malformed line")
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	return b.String()
}

// Unwrap returns ErrMalformed.
func (e *LineError) Unwrap() error { return ErrMalformed }

func malformed(format string, args ...any) *LineError {
	return &LineError{Reason: fmt.Sprintf(format, args...)}
}

// Parser parses single lines of one format. A Parser holds no per-line state.
// ParseLine does not allocate on well-formed lines once feats has grown to
// the line's size (a number longer than 32 bytes may cost one allocation; a
// malformed line costs its error). A Parser is not safe for concurrent use (a
// later format may keep scratch state in it); use one per goroutine.
type Parser struct {
	format Format
	ns     []uint32 // DecoderOptions.Namespace
}

// NewParser returns a parser for format f. It panics if f is not LibFM or
// LibFFM (a programmer error: the other formats are read through NewDecoder).
func NewParser(f Format) *Parser {
	if !f.lineFormat() {
		panic(fmt.Sprintf("reader: NewParser(%v)", f))
	}
	return &Parser{format: f}
}

// Format returns the parser's format.
func (p *Parser) Format() Format { return p.format }

// ParseLine parses one line and appends its features to feats. It returns the
// label (0 or 1) and the extended slice.
//
// For an empty, blank or comment line it returns ErrEmptyLine; for a
// malformed line a *LineError with Line 0 and Source "" (Read fills them in).
// On any error out is feats with its original length.
func (p *Parser) ParseLine(line []byte, feats []Feature) (label float32, out []Feature, err error) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	i := skipBlank(line, 0)
	if i == len(line) || line[i] == '#' {
		return 0, feats, ErrEmptyLine
	}
	j := nextBlank(line, i)
	label, ok := parseLabel(line[i:j])
	if !ok {
		return 0, feats, malformed("label %q is not a finite number", clip(line[i:j]))
	}
	n0 := len(feats)
	for pos := 0; ; pos++ {
		i = skipBlank(line, j)
		if i == len(line) {
			break
		}
		// One pass finds the end of the token and its first two colons.
		c1, c2, colons := -1, -1, 0
	scan:
		for j = i; j < len(line); j++ {
			switch byteClass[line[j]] {
			case classBlank:
				break scan
			case classColon:
				switch colons {
				case 0:
					c1 = j - i
				case 1:
					c2 = j - i
				}
				colons++
			}
		}
		var f Feature
		var le *LineError
		if p.format == LibFFM {
			f, le = parseFFM(line[i:j], c1, c2, colons, p.ns)
		} else {
			f, le = parseFM(line[i:j], pos, c1, colons, p.ns)
		}
		if le != nil {
			return 0, feats[:n0], le
		}
		feats = append(feats, f)
	}
	return label, feats, nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// Byte classes for the token scanner.
const (
	classOther = iota
	classBlank
	classColon
)

var byteClass = [256]uint8{' ': classBlank, '\t': classBlank, ':': classColon}

func skipBlank(b []byte, i int) int {
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	return i
}

func nextBlank(b []byte, i int) int {
	for i < len(b) && !isBlank(b[i]) {
		i++
	}
	return i
}

// parseFM parses "token:value" at position pos; c is the index of the first
// of the token's colons.
func parseFM(tok []byte, pos, c, colons int, ns []uint32) (Feature, *LineError) {
	switch {
	case colons == 0:
		return Feature{}, malformed("feature %q: want token:value", clip(tok))
	case colons > 1:
		return Feature{}, malformed("feature %q: want token:value, found more than one ':' (a libFFM line?)", clip(tok))
	case c == 0:
		return Feature{}, malformed("feature %q: empty token", clip(tok))
	case pos >= MaxField:
		return Feature{}, malformed("more than %d features", MaxField)
	}
	v, le := parseValue(tok, tok[c+1:])
	if le != nil {
		return Feature{}, le
	}
	return Feature{Field: uint32(pos), ID: FeatureID(namespace(ns, uint32(pos)), tok[:c]), Value: v}, nil
}

// parseFFM parses "field:token:value"; c1 and c2 index the first two of the
// token's colons.
func parseFFM(tok []byte, c1, c2, colons int, ns []uint32) (Feature, *LineError) {
	if colons != 2 {
		return Feature{}, malformed("feature %q: want field:token:value", clip(tok))
	}
	field, ok := parseField(tok[:c1])
	if !ok {
		return Feature{}, malformed("feature %q: field %q is not an integer in [0, %d)", clip(tok), clip(tok[:c1]), MaxField)
	}
	if c2 == c1+1 {
		return Feature{}, malformed("feature %q: empty token", clip(tok))
	}
	v, le := parseValue(tok, tok[c2+1:])
	if le != nil {
		return Feature{}, le
	}
	return Feature{Field: field, ID: FeatureID(namespace(ns, field), tok[c1+1:c2]), Value: v}, nil
}

func parseField(b []byte) (uint32, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint32
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint32(c-'0')
		if n >= MaxField {
			return 0, false
		}
	}
	return n, true
}

// parseLabel parses a label token; it returns 1 for a number > 0, else 0.
func parseLabel(b []byte) (float32, bool) {
	switch string(b) {
	case "1", "+1":
		return 1, true
	case "0", "-1":
		return 0, true
	}
	y, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
		return 0, false
	}
	if y > 0 {
		return 1, true
	}
	return 0, true
}

// pow10f holds the powers of ten that float32 represents exactly.
var pow10f = [...]float32{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// parseValue parses a feature value; tok is the whole feature, for messages.
func parseValue(tok, b []byte) (float32, *LineError) {
	if v, ok := fastFloat32(b); ok {
		return v, nil
	}
	if len(b) == 0 {
		return 0, malformed("feature %q: empty value", clip(tok))
	}
	f, err := strconv.ParseFloat(string(b), 32)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && !math.IsInf(f, 0) {
			return float32(f), nil // underflow to zero or a subnormal
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, malformed("feature %q: value %q overflows float32", clip(tok), clip(b))
		}
		return 0, malformed("feature %q: value %q is not a number", clip(tok), clip(b))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, malformed("feature %q: value %q is not finite", clip(tok), clip(b))
	}
	return float32(f), nil
}

// fastFloat32 parses [+-]digits[.digits] when the digits form an integer
// below 2^24 and there are at most 10 decimals. Both the integer and the power
// of ten are then exact float32s and one correctly rounded division gives
// the same result as strconv.ParseFloat(s, 32) (Clinger's fast path).
func fastFloat32(b []byte) (float32, bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var m uint32
	digits, decimals, dot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint32(c-'0')
			if m >= 1<<24 {
				return 0, false
			}
			digits++
			if dot {
				decimals++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || decimals >= len(pow10f) {
		return 0, false
	}
	v := float32(m)
	if decimals > 0 {
		v /= pow10f[decimals]
	}
	if neg {
		v = -v
	}
	return v, true
}
