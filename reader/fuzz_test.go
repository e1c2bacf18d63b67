package reader

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// refParse is a slow reference parser written straight from the package
// documentation with strings and strconv. It returns the tokens of the
// features (for re-serialising) and ok=false for a malformed line.
func refParse(format Format, line string) (label float32, feats []Feature, tokens []string, empty, ok bool) {
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	toks := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(toks) == 0 || toks[0][0] == '#' {
		return 0, nil, nil, true, false
	}
	y, err := strconv.ParseFloat(toks[0], 64)
	if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
		return 0, nil, nil, false, false
	}
	if y > 0 {
		label = 1
	}
	for pos, tok := range toks[1:] {
		parts := strings.Split(tok, ":")
		var field uint64
		switch {
		case format == LibFM && len(parts) == 2:
			field = uint64(pos)
			parts = append([]string{""}, parts...)
		case format == LibFFM && len(parts) == 3:
			if parts[0] == "" || strings.Trim(parts[0], "0123456789") != "" {
				return 0, nil, nil, false, false
			}
			field, err = strconv.ParseUint(parts[0], 10, 64)
			if err != nil || field >= MaxField {
				return 0, nil, nil, false, false
			}
		default:
			return 0, nil, nil, false, false
		}
		if parts[1] == "" {
			return 0, nil, nil, false, false
		}
		v, err := strconv.ParseFloat(parts[2], 32)
		if err != nil && !(errors.Is(err, strconv.ErrRange) && !math.IsInf(v, 0)) {
			return 0, nil, nil, false, false
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, nil, nil, false, false
		}
		feats = append(feats, Feature{Field: uint32(field), ID: FeatureID(uint32(field), []byte(parts[1])), Value: float32(v)})
		tokens = append(tokens, parts[1])
	}
	return label, feats, tokens, false, true
}

func sameFeatures(a, b []Feature) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Field != b[i].Field || a[i].ID != b[i].ID || math.Float32bits(a[i].Value) != math.Float32bits(b[i].Value) {
			return false
		}
	}
	return true
}

func fuzzParse(t *testing.T, format Format, line []byte) {
	p := NewParser(format)
	label, feats, err := p.ParseLine(line, nil)
	rLabel, rFeats, tokens, rEmpty, rOK := refParse(format, string(line))
	switch {
	case rEmpty:
		if err != ErrEmptyLine {
			t.Fatalf("%q: reference says empty line, ParseLine: %v", line, err)
		}
		return
	case !rOK:
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: reference rejects the line, ParseLine: %v, %v", line, feats, err)
		}
		return
	case err != nil:
		t.Fatalf("%q: reference accepts the line, ParseLine: %v", line, err)
	}
	if label != rLabel || !sameFeatures(feats, rFeats) {
		t.Fatalf("%q:\n got %v %v\nwant %v %v", line, label, feats, rLabel, rFeats)
	}
	// Re-serialise canonically and parse again.
	var b []byte
	b = strconv.AppendFloat(b, float64(label), 'g', -1, 32)
	for i, f := range feats {
		b = append(b, ' ')
		if format == LibFFM {
			b = strconv.AppendUint(b, uint64(f.Field), 10)
			b = append(b, ':')
		}
		b = append(b, tokens[i]...)
		b = append(b, ':')
		b = strconv.AppendFloat(b, float64(f.Value), 'g', -1, 32)
	}
	label2, feats2, err := p.ParseLine(b, nil)
	if err != nil || label2 != label || !sameFeatures(feats, feats2) {
		t.Fatalf("%q re-serialised as %q: got %v %v %v, want %v %v", line, b, label2, feats2, err, label, feats)
	}
}

func FuzzParseLibFM(f *testing.F) {
	for _, s := range []string{
		"1 266:1 1244:1 5042:1",
		"-1 a:0.5\tb:-2e-3\r\n",
		"0",
		"# comment",
		"+1 x:1e39 y:nan",
		"0.5 :1 a: a:b:c",
		"1 a:0x1p-3 b:1_0 c:.5 d:5. e:-0",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { fuzzParse(t, LibFM, line) })
}

func FuzzParseLibFFM(f *testing.F) {
	for _, s := range []string{
		"1 0:266:1 1:1244:1 2:5042:0.25",
		"-1 7:a:0.5\t007:b:-2e-3\r\n",
		"0",
		"  #x",
		"1 1048576:a:1 -1:b:1 x:c:1",
		"1 0::1 0:a: 0:a:b:1 5:1",
		"1 3:a:1e-50 4:b:3.4028235e38",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { fuzzParse(t, LibFFM, line) })
}
