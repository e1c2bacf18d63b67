package reader

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// The Criteo display-advertising layout: a label, then integer columns
// I1..I13 (fields 0..12), then categorical columns C1..C26 (fields 13..38).
const (
	criteoInts    = 13
	criteoCats    = 26
	criteoColumns = 1 + criteoInts + criteoCats
)

// criteoDecoder decodes Criteo TSV lines: one group of one level and one
// line per input line.
type criteoDecoder struct {
	buf lineBuf
	tok []byte // scratch for the token of an integer column
}

// Header reports false: Criteo files have no header.
func (d *criteoDecoder) Header([]byte) (bool, error) { return false, nil }

// Starts reports true: every line is a group.
func (d *criteoDecoder) Starts([]byte) bool { return true }

// Decode resets g to one level and adds line as its only sample.
func (d *criteoDecoder) Decode(line []byte, g *Group) error {
	g.Reset(1)
	line = trimCR(line)
	if n := bytes.Count(line, []byte{'\t'}) + 1; n != criteoColumns {
		hint := ""
		if n == criteoColumns-1 {
			hint = " (a test file without the label column?)"
		}
		return fmt.Errorf("want %d tab-separated columns (label, I1-I13, C1-C26), found %d%s", criteoColumns, n, hint)
	}
	d.buf.reset()
	var label float32
	rest := line
	for col := 0; col < criteoColumns; col++ {
		tok := rest
		if k := bytes.IndexByte(rest, '\t'); k >= 0 {
			tok, rest = rest[:k], rest[k+1:]
		}
		switch {
		case col == 0:
			switch string(tok) {
			case "0":
				label = 0
			case "1":
				label = 1
			default:
				return fmt.Errorf("label %q is not 0 or 1", clip(tok))
			}
		case len(tok) == 0: // a missing value: no feature
		case col <= criteoInts:
			x, ok := parseInt64(tok)
			if !ok {
				return fmt.Errorf("column I%d: %q is not an integer", col, clip(tok))
			}
			field := uint32(col - 1)
			d.tok = criteoIntToken(d.tok[:0], x)
			d.buf.add(field, FeatureID(field, d.tok), 1)
		default:
			field := uint32(col - 1)
			d.buf.add(field, FeatureID(field, tok), 1)
		}
	}
	g.AddLine(0, 0, d.buf.fields, d.buf.ids, d.buf.values)
	g.AddLabels(label)
	return nil
}

// End checks nothing: a decoded line is a complete group.
func (d *criteoDecoder) End(*Group) error { return nil }

// criteoIntToken appends the token of integer value x: the decimal of
// floor(ln(x)^2) when x > 2, else the decimal of x.
func criteoIntToken(dst []byte, x int64) []byte {
	if x > 2 {
		l := math.Log(float64(x))
		return strconv.AppendInt(dst, int64(math.Floor(l*l)), 10)
	}
	return strconv.AppendInt(dst, x, 10)
}

// parseInt64 parses an optionally signed ('+' or '-') decimal integer that
// fits in an int64.
func parseInt64(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	m, ok := parseDecimal(b)
	switch {
	case !ok:
		return 0, false
	case neg && m <= 1<<63:
		return int64(-m), true // -(1<<63) wraps to math.MinInt64
	case !neg && m < 1<<63:
		return int64(m), true
	}
	return 0, false
}
