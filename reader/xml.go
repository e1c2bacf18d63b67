package reader

import (
	"fmt"
	"math"
)

// maxXMLLabel is the largest label an XMLRepository line may hold: labels
// are stored as float32, which holds every integer up to 2^24 exactly.
const maxXMLLabel = 1 << 24

// xmlDecoder decodes XMLRepository multi-label lines: one group of one level
// and one line per input line, with all the line's labels.
type xmlDecoder struct {
	// header is whether the file's header was read; features and labels
	// are then its F and L, which bound the indices and labels of the lines.
	header           bool
	features, labels uint64
	buf              lineBuf
	lbuf             []float32
}

// Header parses the header "N F L" (three non-negative integers) and keeps F
// and L to check the lines of the file. Any other first line is an error.
func (d *xmlDecoder) Header(line []byte) (bool, error) {
	d.header, d.features, d.labels = false, 0, 0
	line = trimCR(line)
	var nums [3]uint64
	n := 0
	for i := skipBlank(line, 0); i < len(line); i = skipBlank(line, i) {
		j := nextBlank(line, i)
		v, ok := parseDecimal(line[i:j])
		if !ok || n == len(nums) || v == math.MaxUint64 {
			n = -1
			break
		}
		nums[n] = v
		n++
		i = j
	}
	if n != len(nums) {
		return false, fmt.Errorf("missing XMLRepository header N F L (three non-negative integers), found %q", clip(line))
	}
	d.header, d.features, d.labels = true, nums[1], nums[2]
	return true, nil
}

// Starts reports true: every line is a group.
func (d *xmlDecoder) Starts([]byte) bool { return true }

// Decode resets g to one level and adds line "l1,l2,... index:value ..." as
// its only sample, with every label in order.
func (d *xmlDecoder) Decode(line []byte, g *Group) error {
	g.Reset(1)
	line = trimCR(line)
	if i := skipBlank(line, 0); i == len(line) || line[i] == '#' {
		return errNoSample
	}
	d.lbuf = d.lbuf[:0]
	j := 0
	if !isBlank(line[0]) {
		j = nextBlank(line, 0)
		if err := d.parseLabels(line[:j]); err != nil {
			return err
		}
	}
	d.buf.reset()
	for {
		i := skipBlank(line, j)
		if i == len(line) {
			break
		}
		j = nextBlank(line, i)
		if err := d.feature(line[i:j]); err != nil {
			return err
		}
	}
	g.AddLine(0, 0, d.buf.fields, d.buf.ids, d.buf.values)
	g.AddLabels(d.lbuf...)
	return nil
}

// parseLabels parses "l1,l2,..." into d.lbuf.
func (d *xmlDecoder) parseLabels(tok []byte) error {
	for k := 0; k <= len(tok); {
		e := k
		for e < len(tok) && tok[e] != ',' {
			e++
		}
		v, ok := parseDecimal(tok[k:e])
		switch {
		case !ok:
			return fmt.Errorf("labels %q: label %q is not a non-negative integer", clip(tok), clip(tok[k:e]))
		case v > maxXMLLabel:
			return fmt.Errorf("labels %q: label %q is above 2^24 (float32 holds labels exactly only up to 2^24)", clip(tok), clip(tok[k:e]))
		case d.header && v >= d.labels:
			return fmt.Errorf("labels %q: label %d is not below the header's %d labels", clip(tok), v, d.labels)
		}
		d.lbuf = append(d.lbuf, float32(v))
		k = e + 1
	}
	return nil
}

// feature parses "index:value" into d.buf, in field 0.
func (d *xmlDecoder) feature(tok []byte) error {
	c, colons := -1, 0
	for k, b := range tok {
		if b == ':' {
			if colons == 0 {
				c = k
			}
			colons++
		}
	}
	if colons != 1 {
		return fmt.Errorf("feature %q: want index:value", clip(tok))
	}
	idx, ok := parseDecimal(tok[:c])
	if !ok {
		return fmt.Errorf("feature %q: index %q is not a non-negative integer", clip(tok), clip(tok[:c]))
	}
	if d.header && idx >= d.features {
		return fmt.Errorf("feature %q: index %q is not below the header's %d features", clip(tok), clip(tok[:c]), d.features)
	}
	v, le := parseValue(tok, tok[c+1:])
	if le != nil {
		return reasonOf(le)
	}
	d.buf.add(0, FeatureID(0, tok[:c]), v)
	return nil
}

// End checks nothing: a decoded line is a complete group.
func (d *xmlDecoder) End(*Group) error { return nil }
