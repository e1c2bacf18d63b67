package reader

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// MaxLevels is the largest number of levels of a group in the sample-group
// format.
const MaxLevels = 8

// errOutsideGroup is the reason for a data line before any group header.
var errOutsideGroup = errors.New("line outside a group: missing `group L` header")

// groupDecoder decodes the sample-group format (see the package
// documentation). Its state is the number of levels of the open group.
type groupDecoder struct {
	// levels is the number of levels of the open group, 0 when none is open
	// (at the start of a file, or after a malformed group header).
	levels int
	ns     []uint32 // DecoderOptions.Namespace
	buf    lineBuf
	labels []float32
	// Dense features of the line being decoded: field j holds
	// denseValues[denseEnds[j-1]:denseEnds[j]].
	denseFields []uint32
	denseEnds   []int
	denseValues []float32
}

// Header reports false (the format has no file header) and forgets any open
// group: a new file starts.
func (d *groupDecoder) Header([]byte) (bool, error) {
	d.levels = 0
	return false, nil
}

// Starts reports whether the first token of line is "group".
func (d *groupDecoder) Starts(line []byte) bool {
	line = trimCR(line)
	i := skipBlank(line, 0)
	return string(line[i:nextBlank(line, i)]) == "group"
}

// Decode starts a group on a "group L" line and adds a feature line to the
// open group otherwise. A malformed line leaves g as it was.
func (d *groupDecoder) Decode(line []byte, g *Group) error {
	line = trimCR(line)
	i := skipBlank(line, 0)
	j := nextBlank(line, i)
	if i == len(line) || line[i] == '#' {
		return errNoSample
	}
	if string(line[i:j]) == "group" {
		return d.decodeHeader(line, j, g)
	}
	return d.decodeLine(line, i, j, g)
}

// decodeHeader decodes "group L"; line[j:] follows the word "group".
func (d *groupDecoder) decodeHeader(line []byte, j int, g *Group) error {
	d.levels = 0
	i := skipBlank(line, j)
	j = nextBlank(line, i)
	if i == len(line) {
		return fmt.Errorf("group header: want `group L`, missing the number of levels L")
	}
	if k := skipBlank(line, j); k < len(line) {
		return fmt.Errorf("group header: want `group L`, found %q after the number of levels", clip(line[k:]))
	}
	n, ok := parseDecimal(line[i:j])
	if !ok || n < 1 || n > MaxLevels {
		return fmt.Errorf("group header: number of levels %q is not an integer in [1, %d]", clip(line[i:j]), MaxLevels)
	}
	d.levels = int(n)
	g.Reset(d.levels)
	return nil
}

// decodeLine decodes "level parent labels feature ..."; line[i:j] is the
// first token.
func (d *groupDecoder) decodeLine(line []byte, i, j int, g *Group) error {
	if d.levels == 0 {
		return errOutsideGroup
	}
	if len(g.Levels) != d.levels {
		return fmt.Errorf("the group of %d levels was replaced by one of %d: a line outside its group", d.levels, len(g.Levels))
	}
	lv, ok := parseDecimal(line[i:j])
	if !ok || lv > uint64(d.levels-1) {
		return fmt.Errorf("level %q is not an integer in [0, %d)", clip(line[i:j]), d.levels)
	}
	level := int(lv)
	i = skipBlank(line, j)
	j = nextBlank(line, i)
	if i == len(line) {
		return fmt.Errorf("want `level parent labels feature...`, missing the parent")
	}
	parent, err := d.parent(line[i:j], level, g)
	if err != nil {
		return err
	}
	i = skipBlank(line, j)
	j = nextBlank(line, i)
	if i == len(line) {
		return fmt.Errorf("want `level parent labels feature...`, missing the labels")
	}
	if err := d.decodeLabels(line[i:j], level); err != nil {
		return err
	}
	if err := d.features(line, j); err != nil {
		return err
	}
	return d.addLine(g, level, parent)
}

// parent decodes tok, the parent of a level-level line of g: "-" on the
// top level (parent 0), else the index of a line of the level above.
func (d *groupDecoder) parent(tok []byte, level int, g *Group) (int32, error) {
	top := d.levels - 1
	switch {
	case level == top && string(tok) != "-":
		return 0, fmt.Errorf("parent %q of a line of the top level %d: top-level lines have no parent, write -", clip(tok), level)
	case level < top && string(tok) == "-":
		return 0, fmt.Errorf("parent - of a level-%d line: only top-level (level %d) lines have no parent", level, top)
	case level < top:
		p, ok := parseDecimal(tok)
		if !ok {
			return 0, fmt.Errorf("parent %q is not a line index", clip(tok))
		}
		if n := g.Levels[level+1].Len(); p >= uint64(n) {
			return 0, fmt.Errorf("parent %d of a level-%d line: level %d has %d lines so far", p, level, level+1, n)
		}
		return int32(p), nil
	}
	return 0, nil
}

// decodeLabels decodes tok, the labels of a level-level line ("-" for
// none, else comma-separated values, only on level 0), into d.labels.
func (d *groupDecoder) decodeLabels(tok []byte, level int) error {
	d.labels = d.labels[:0]
	if string(tok) == "-" {
		return nil
	}
	if level != 0 {
		return fmt.Errorf("labels %q on a level-%d line: only level-0 lines (samples) have labels, write -", clip(tok), level)
	}
	var bad []byte
	var why string
	if d.labels, bad, why = appendFloats(d.labels, tok); why != "" {
		return fmt.Errorf("labels %q: label %q %s", clip(tok), clip(bad), why)
	}
	return nil
}

// appendFloats appends the comma-separated values of tok to dst, each
// finite (parseFinite32); at the first that is not, it stops and returns
// that value and why.
func appendFloats(dst []float32, tok []byte) (out []float32, bad []byte, why string) {
	for k := 0; k <= len(tok); {
		e := k
		for e < len(tok) && tok[e] != ',' {
			e++
		}
		v, why := parseFinite32(tok[k:e])
		if why != "" {
			return dst, tok[k:e], why
		}
		dst = append(dst, v)
		k = e + 1
	}
	return dst, nil, ""
}

// features decodes the features of line, those after line[:j], into the
// decoder's scratch.
func (d *groupDecoder) features(line []byte, j int) error {
	d.buf.reset()
	d.denseFields, d.denseEnds, d.denseValues = d.denseFields[:0], d.denseEnds[:0], d.denseValues[:0]
	for {
		i := skipBlank(line, j)
		if i == len(line) {
			return nil
		}
		j = nextBlank(line, i)
		if err := d.feature(line[i:j]); err != nil {
			return err
		}
	}
}

// addLine adds the decoded line (the decoder's scratch and labels) to
// level of g, with parent.
func (d *groupDecoder) addLine(g *Group, level int, parent int32) error {
	// Offsets are int32: refuse a group that would overflow them.
	l := &g.Levels[level]
	if len(l.IDs)+len(d.buf.ids) > math.MaxInt32 || len(l.DenseValues)+len(d.denseValues) > math.MaxInt32 ||
		l.Len() >= math.MaxInt32 {
		return fmt.Errorf("group too large: more than %d lines or features on level %d", math.MaxInt32, level)
	}
	g.AddLine(level, parent, d.buf.fields, d.buf.ids, d.buf.values)
	lo := 0
	for k, f := range d.denseFields {
		g.AddDense(level, f, d.denseValues[lo:d.denseEnds[k]])
		lo = d.denseEnds[k]
	}
	if level == 0 {
		g.AddLabels(d.labels...)
	}
	return nil
}

// feature decodes one sparse ("field:token[:weight]") or dense
// ("field=v1,v2,...") feature into the decoder's scratch.
func (d *groupDecoder) feature(tok []byte) error {
	c1, c2, colons, eq := -1, -1, 0, -1
	for k, c := range tok {
		switch c {
		case ':':
			switch colons {
			case 0:
				c1 = k
			case 1:
				c2 = k
			}
			colons++
		case '=':
			if eq < 0 {
				eq = k
			}
		}
	}
	if eq >= 0 && (c1 < 0 || eq < c1) {
		return d.dense(tok, eq)
	}
	if c1 < 0 {
		return fmt.Errorf("feature %q: want field:token[:weight] or field=v1,v2,...", clip(tok))
	}
	field, ok := parseField(tok[:c1])
	if !ok {
		return fmt.Errorf("feature %q: field %q is not an integer in [0, %d)", clip(tok), clip(tok[:c1]), MaxField)
	}
	if colons > 2 {
		return fmt.Errorf("feature %q: want field:token[:weight], found more than two ':'", clip(tok))
	}
	end := len(tok)
	if colons == 2 {
		end = c2
	}
	if end == c1+1 {
		return fmt.Errorf("feature %q: empty token", clip(tok))
	}
	if eq >= 0 && eq < end {
		return fmt.Errorf("feature %q: the token contains '='", clip(tok))
	}
	v := float32(1)
	if colons == 2 {
		var le *LineError
		if v, le = parseValue(tok, tok[c2+1:]); le != nil {
			return errors.New(le.Reason)
		}
	}
	d.buf.add(field, FeatureID(namespace(d.ns, field), tok[c1+1:end]), v)
	return nil
}

// dense decodes "field=v1,v2,..." with '=' at tok[eq].
func (d *groupDecoder) dense(tok []byte, eq int) error {
	field, ok := parseField(tok[:eq])
	if !ok {
		return fmt.Errorf("dense feature %q: field %q is not an integer in [0, %d)", clip(tok), clip(tok[:eq]), MaxField)
	}
	vals := tok[eq+1:]
	if len(vals) == 0 {
		return fmt.Errorf("dense feature %q: no values", clip(tok))
	}
	var bad []byte
	var why string
	if d.denseValues, bad, why = appendFloats(d.denseValues, vals); why != "" {
		return fmt.Errorf("dense feature %q: value %q %s", clip(tok), clip(bad), why)
	}
	d.denseFields = append(d.denseFields, field)
	d.denseEnds = append(d.denseEnds, len(d.denseValues))
	return nil
}

// End checks that the open group has at least one sample.
func (d *groupDecoder) End(g *Group) error {
	if d.levels == 0 || len(g.Levels) != d.levels {
		return errOutsideGroup
	}
	if g.Levels[0].Len() == 0 {
		return errors.New("group without samples: no level-0 line after `group L`")
	}
	return nil
}

// WriteGroup writes g in the sample-group format: the header "group L", then
// the lines of the top level, then those of each level below, each level in
// order, so that every parent precedes its children and decoding the output
// gives back the same levels, parents, labels, fields, values and dense
// features. Labels and values are written in shortest float32 form, a weight
// of exactly 1 is left out, and each sparse feature's id is written as its
// decimal token ("field:id"): reading the output hashes those tokens again,
// so ids are renamed consistently (one new id FeatureID(field, decimal id) per
// (field, id)), as with WriteLibFFM. Pos and Next are not written; every
// sample is, including those before Pos.Index.
//
// WriteGroup returns an error wrapping ErrBadGroup, and writes nothing, for a
// group the format cannot hold: one that fails Validate, has no sample, more
// than MaxLevels levels, a field >= MaxField, a dense feature without values,
// or a label or value that is not finite.
func WriteGroup(w io.Writer, g *Group) error {
	if err := checkWritable(g); err != nil {
		return fmt.Errorf("reader: write group: %w", err)
	}
	const flushAt = 64 << 10
	buf := make([]byte, 0, 512)
	buf = append(buf, "group "...)
	buf = strconv.AppendInt(buf, int64(len(g.Levels)), 10)
	buf = append(buf, '\n')
	top := len(g.Levels) - 1
	for k := top; k >= 0; k-- {
		l := &g.Levels[k]
		for i := 0; i < l.Len(); i++ {
			buf = strconv.AppendInt(buf, int64(k), 10)
			buf = append(buf, ' ')
			if k == top {
				buf = append(buf, '-')
			} else {
				buf = strconv.AppendInt(buf, int64(l.Parent[i]), 10)
			}
			buf = append(buf, ' ')
			var labels []float32
			if k == 0 {
				labels = g.SampleLabels(i)
			}
			if len(labels) == 0 {
				buf = append(buf, '-')
			}
			for n, y := range labels {
				if n > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendFloat(buf, float64(y), 'g', -1, 32)
			}
			fields, ids, values := l.Line(i)
			for n, id := range ids {
				buf = append(buf, ' ')
				buf = strconv.AppendUint(buf, uint64(fields[n]), 10)
				buf = append(buf, ':')
				buf = strconv.AppendUint(buf, id, 10)
				if values[n] != 1 {
					buf = append(buf, ':')
					buf = strconv.AppendFloat(buf, float64(values[n]), 'g', -1, 32)
				}
			}
			l.Dense(i, func(field uint32, vals []float32) {
				buf = append(buf, ' ')
				buf = strconv.AppendUint(buf, uint64(field), 10)
				buf = append(buf, '=')
				for n, v := range vals {
					if n > 0 {
						buf = append(buf, ',')
					}
					buf = strconv.AppendFloat(buf, float64(v), 'g', -1, 32)
				}
			})
			buf = append(buf, '\n')
			if len(buf) >= flushAt {
				if _, err := w.Write(buf); err != nil {
					return fmt.Errorf("reader: write group: %w", err)
				}
				buf = buf[:0]
			}
		}
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("reader: write group: %w", err)
	}
	return nil
}

// checkWritable reports why WriteGroup cannot write g, or nil.
func checkWritable(g *Group) error {
	if err := g.Validate(); err != nil {
		return err
	}
	if len(g.Levels) > MaxLevels {
		return fmt.Errorf("%w: %d levels, more than %d", ErrBadGroup, len(g.Levels), MaxLevels)
	}
	if g.NumSamples() == 0 {
		return fmt.Errorf("%w: no samples", ErrBadGroup)
	}
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	for _, y := range g.Labels {
		if !finite(y) {
			return fmt.Errorf("%w: label %v is not finite", ErrBadGroup, y)
		}
	}
	for k := range g.Levels {
		l := &g.Levels[k]
		for _, f := range l.Fields {
			if f >= MaxField {
				return fmt.Errorf("%w: level %d: field %d >= %d", ErrBadGroup, k, f, MaxField)
			}
		}
		for _, v := range l.Values {
			if !finite(v) {
				return fmt.Errorf("%w: level %d: value %v is not finite", ErrBadGroup, k, v)
			}
		}
		for j, f := range l.DenseFields {
			lo := int32(0)
			if j > 0 {
				lo = l.DenseEnds[j-1]
			}
			if f >= MaxField {
				return fmt.Errorf("%w: level %d: dense field %d >= %d", ErrBadGroup, k, f, MaxField)
			}
			if l.DenseEnds[j] == lo {
				return fmt.Errorf("%w: level %d: dense field %d has no values", ErrBadGroup, k, f)
			}
		}
		for _, v := range l.DenseValues {
			if !finite(v) {
				return fmt.Errorf("%w: level %d: dense value %v is not finite", ErrBadGroup, k, v)
			}
		}
	}
	return nil
}
