package reader

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fuzzDecode feeds data, split into lines, to decoders of format f and
// checks that nothing panics and every group accepted is valid:
//
//  1. through decodeLines, as a Source would (every group returned passes
//     Validate and has samples);
//  2. adversarially: Header on the first line, then Starts, Decode and End
//     on every line, blank and comment lines included, whatever the state;
//     after any call that succeeds the group passes Validate;
//  3. line by line against check, a format-specific reference, when set.
func fuzzDecode(t *testing.T, f Format, data []byte, check func(t *testing.T, d Decoder, header, line []byte)) {
	lines := bytes.Split(data, []byte("\n"))
	groups, _ := decodeLines(t, mustDecoder(t, f), lines)
	for i, g := range groups {
		if g.NumSamples() < 1 {
			t.Fatalf("group %d has no samples: %+v", i, g)
		}
	}

	d := mustDecoder(t, f)
	d.Header(lines[0])
	var g Group
	for _, line := range lines {
		d.Starts(line)
		err := d.Decode(line, &g)
		if len(g.Levels) > 0 {
			if verr := g.Validate(); verr != nil {
				t.Fatalf("after Decode(%q) = %v: %v", line, err, verr)
			}
		}
		if err := d.End(&g); err == nil {
			if verr := g.Validate(); verr != nil {
				t.Fatalf("End after %q accepted an invalid group: %v", line, verr)
			}
		}
	}

	if check != nil {
		d := mustDecoder(t, f)
		d.Header(lines[0])
		for _, line := range lines {
			check(t, d, lines[0], line)
		}
	}
}

// checkOne decodes line with d and compares the result with the reference:
// ok false means the reference rejects the line.
func checkOne(t *testing.T, d Decoder, line []byte, ok bool, labels []float32, feats []Feature) {
	t.Helper()
	var g Group
	err := d.Decode(line, &g)
	switch {
	case !ok && err == nil:
		t.Fatalf("%q: the reference rejects the line, Decode accepted it: %+v", line, &g)
	case ok && err != nil:
		t.Fatalf("%q: the reference accepts the line, Decode: %v", line, err)
	case !ok:
		if strings.HasPrefix(err.Error(), "reader:") {
			t.Fatalf("%q: error %q is not a plain reason", line, err)
		}
		return
	}
	want := &Group{}
	want.Reset(1)
	var fields []uint32
	var ids []uint64
	var values []float32
	for _, f := range feats {
		fields, ids, values = append(fields, f.Field), append(ids, f.ID), append(values, f.Value)
	}
	want.AddLine(0, 0, fields, ids, values)
	want.AddLabels(labels...)
	if !reflect.DeepEqual(float32Bits(g.Clone()), float32Bits(want.Clone())) {
		t.Fatalf("%q:\n got %+v\nwant %+v", line, &g, want)
	}
}

// checkLibSVM compares the decoder with Parser.ParseLine.
func checkLibSVM(f Format) func(t *testing.T, d Decoder, _, line []byte) {
	return func(t *testing.T, d Decoder, _, line []byte) {
		label, feats, err := NewParser(f).ParseLine(line, nil)
		checkOne(t, d, line, err == nil, []float32{label}, feats)
	}
}

func isBlankRune(r rune) bool { return r == ' ' || r == '\t' }

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// refValue parses a feature value as documented, with strconv.
func refValue(s string) (float32, bool) {
	v, err := strconv.ParseFloat(s, 32)
	if err != nil && !(errors.Is(err, strconv.ErrRange) && !math.IsInf(v, 0)) {
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return float32(v), true
}

// refXMLHeader parses "N F L" as documented.
func refXMLHeader(line string) (features, labels uint64, ok bool) {
	toks := strings.FieldsFunc(strings.TrimSuffix(line, "\r"), isBlankRune)
	if len(toks) != 3 {
		return 0, 0, false
	}
	var n [3]uint64
	for i, tok := range toks {
		v, err := strconv.ParseUint(tok, 10, 64)
		if !allDigits(tok) || err != nil || v == math.MaxUint64 {
			return 0, 0, false
		}
		n[i] = v
	}
	return n[1], n[2], true
}

// checkXML compares the decoder with a reference written from the package
// documentation with strings and strconv.
func checkXML(t *testing.T, d Decoder, header, line []byte) {
	F, L, hdr := refXMLHeader(string(header))
	s := strings.TrimSuffix(string(line), "\r")
	ok := true
	var labels []float32
	var feats []Feature
	if trimmed := strings.TrimLeft(s, " \t"); trimmed == "" || trimmed[0] == '#' {
		ok = false
	}
	rest := s
	if ok && s[0] != ' ' && s[0] != '\t' {
		tok := s
		if k := strings.IndexAny(s, " \t"); k >= 0 {
			tok, rest = s[:k], s[k:]
		} else {
			rest = ""
		}
		for _, p := range strings.Split(tok, ",") {
			v, err := strconv.ParseUint(p, 10, 64)
			if !allDigits(p) || err != nil || v > 1<<24 || (hdr && v >= L) {
				ok = false
				break
			}
			labels = append(labels, float32(v))
		}
	}
	for _, tok := range strings.FieldsFunc(rest, isBlankRune) {
		if !ok {
			break
		}
		parts := strings.Split(tok, ":")
		if len(parts) != 2 || !allDigits(parts[0]) {
			ok = false
			break
		}
		if idx, err := strconv.ParseUint(parts[0], 10, 64); hdr && (err != nil || idx >= F) {
			ok = false
			break
		}
		v, vok := refValue(parts[1])
		if !vok {
			ok = false
			break
		}
		feats = append(feats, Feature{Field: 0, ID: FeatureID(0, []byte(parts[0])), Value: v})
	}
	checkOne(t, d, line, ok, labels, feats)
}

// checkCriteo compares the decoder with a reference written from the
// package documentation with strings and strconv.
func checkCriteo(t *testing.T, d Decoder, _, line []byte) {
	cols := strings.Split(strings.TrimSuffix(string(line), "\r"), "\t")
	ok := len(cols) == 40 && (cols[0] == "0" || cols[0] == "1")
	var feats []Feature
	for j := 1; ok && j < len(cols); j++ {
		c, field := cols[j], uint32(j-1)
		switch {
		case c == "":
		case j <= 13:
			x, err := strconv.ParseInt(c, 10, 64)
			if err != nil {
				ok = false
				break
			}
			tok := strconv.FormatInt(x, 10)
			if x > 2 {
				l := math.Log(float64(x))
				tok = strconv.Itoa(int(math.Floor(l * l)))
			}
			feats = append(feats, Feature{Field: field, ID: FeatureID(field, []byte(tok)), Value: 1})
		default:
			feats = append(feats, Feature{Field: field, ID: FeatureID(field, []byte(c)), Value: 1})
		}
	}
	var label float32
	if ok && cols[0] == "1" {
		label = 1
	}
	checkOne(t, d, line, ok, []float32{label}, feats)
}

func FuzzDecodeLibFM(f *testing.F) {
	for _, s := range []string{
		"1 266:1 1244:1 5042:1\n-1 a:0.5\tb:-2e-3\r\n0\n# comment\n",
		"+1 x:1e39 y:nan\n0.5 :1 a: a:b:c\n\n  \n",
		"group 2\n1 - - 0:u\n0 0 1 1:a",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, LibFM, data, checkLibSVM(LibFM)) })
}

func FuzzDecodeLibFFM(f *testing.F) {
	for _, s := range []string{
		"1 0:266:1 1:1244:1 2:5042:0.25\n-1 7:a:0.5\t007:b:-2e-3\r\n",
		"1 1048576:a:1 -1:b:1 x:c:1\n1 0::1 0:a: 0:a:b:1 5:1\n#x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, LibFFM, data, checkLibSVM(LibFFM)) })
}

func FuzzDecodeXML(f *testing.F) {
	for _, s := range []string{
		"3 10 5\n1,4 0:1 9:0.5\n 3:1\n2\n",
		"2515 1836 159\n52,131 44:1 347:1 1129:1\n1,6,12 44:1 1129:1\r\n",
		"1 2 3\n5 7:1\n1,,2 1:1\n1 a:1\n16777217 1:1\n1 1:nan\n1 1:1:1\n",
		"1,2 3:1\n",
		"0 0 0\n\t\n# x\n0 0:1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, XML, data, checkXML) })
}

func FuzzDecodeCriteo(f *testing.F) {
	for _, s := range []string{
		criteoLine("1", []string{"0", "1", "2", "3", "-5", "10", "", "100"}, []string{"68fd1e64", "", "a b"}),
		criteoLine("0", nil, nil) + "\r\n" + criteoLine("1", []string{"9223372036854775807", "-9223372036854775808"}, nil),
		criteoLine("1", nil, nil)[2:] + "\n" + criteoLine("2", []string{"x", "1.5", "+"}, nil),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, Criteo, data, checkCriteo) })
}

func FuzzDecodeSampleGroup(f *testing.F) {
	for _, s := range []string{
		movieLens,
		"group 3\n2 - - 0:ad1\n1 0 - 1:u1\n0 0 1 2:x\n1 0 - 1:u2\n0 1 0 2:y\n0 0 0.5,1,3 2:z:-2 9=1,2,3\n",
		"0 - 1 0:a\ngroup 1\n0 - - 0:b 1=1e-50\ngroup 2\n1 - -\ngroup 9\ngroup\n",
		"group 2\n0 0 1 0:b\n1 - - 1:c\n2 - -\n1 0 - 0:a\n0 - 1,x 0:a=b 7= 7=1,,2 x:a 0:a:1:2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, SampleGroup, data, nil)
		// Every group read back from WriteGroup's output is the same group,
		// with ids renamed.
		groups, _ := decodeLines(t, mustDecoder(t, SampleGroup), bytes.Split(data, []byte("\n")))
		for _, g := range groups {
			var buf bytes.Buffer
			if err := WriteGroup(&buf, g); err != nil {
				t.Fatalf("WriteGroup of a decoded group: %v", err)
			}
			back, errs := decodeText(t, SampleGroup, buf.String())
			if len(back) != 1 || len(errs) > 0 {
				t.Fatalf("%q read back as %d groups, errors %v", buf.String(), len(back), errs)
			}
			if err := checkRenamed(g, back[0]); err != nil {
				t.Fatalf("%q: %v", buf.String(), err)
			}
		}
	})
}
