package reader

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/xdlgo/xps/model/hashmix"
)

// refFeatureID is the documented hash written the slow, obvious way.
func refFeatureID(field uint32, token string) uint64 {
	h := fnv.New64a()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], field)
	h.Write(b[:])
	h.Write([]byte(token))
	return hashmix.Mix64(h.Sum64())
}

func TestFeatureIDGolden(t *testing.T) {
	// These values are part of the data format. If this test fails, the hash
	// changed and every stored model and snapshot would be invalidated.
	golden := []struct {
		field uint32
		token string
		id    uint64
	}{
		{0, "1", 0xb62d47a677df3c59},
		{0, "", 0xaca6d6b54be3ed05},
		{1, "1", 0xb28dbc32b69febf7},
		{7, "user_42", 0x789f46ca8fb45532},
		{1048575, "12345", 0xcb9715c136799863},
		{3735928559, "x", 0xbedac2199b6b526c},
	}
	for _, g := range golden {
		if got := FeatureID(g.field, []byte(g.token)); got != g.id {
			t.Errorf("FeatureID(%d, %q) = %#x, want %#x", g.field, g.token, got, g.id)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		tok := make([]byte, r.IntN(20))
		for i := range tok {
			tok[i] = byte(r.Uint32())
		}
		f := r.Uint32()
		if got, want := FeatureID(f, tok), refFeatureID(f, string(tok)); got != want {
			t.Fatalf("FeatureID(%d, %q) = %#x, reference %#x", f, tok, got, want)
		}
	}
}

type wantFeat struct {
	field uint32
	token string
	value float32
}

func TestParseLineGood(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		line   string
		label  float32
		feats  []wantFeat
	}{
		{"fm basic", LibFM, "1 266:1 1244:1", 1, []wantFeat{{0, "266", 1}, {1, "1244", 1}}},
		{"fm minus one", LibFM, "-1 5:0.5", 0, []wantFeat{{0, "5", 0.5}}},
		{"fm plus one", LibFM, "+1 a:2", 1, []wantFeat{{0, "a", 2}}},
		{"fm zero label", LibFM, "0 a:1", 0, []wantFeat{{0, "a", 1}}},
		{"fm float label", LibFM, "0.3 a:1", 1, []wantFeat{{0, "a", 1}}},
		{"fm negative float label", LibFM, "-2.5e3 a:1", 0, []wantFeat{{0, "a", 1}}},
		{"fm label only", LibFM, "1", 1, nil},
		{"fm label and blanks", LibFM, "  1 \t ", 1, nil},
		{"fm tabs and runs", LibFM, "1\ta:1  \t b:-3e-2", 1, []wantFeat{{0, "a", 1}, {1, "b", -0.03}}},
		{"fm crlf", LibFM, "1 a:1 b:2\r\n", 1, []wantFeat{{0, "a", 1}, {1, "b", 2}}},
		{"fm cr", LibFM, "1 a:1 b:2\r", 1, []wantFeat{{0, "a", 1}, {1, "b", 2}}},
		{"fm utf8 token", LibFM, "1 čaj:1", 1, []wantFeat{{0, "čaj", 1}}},
		{"fm duplicate token", LibFM, "1 a:1 a:1", 1, []wantFeat{{0, "a", 1}, {1, "a", 1}}},
		{"fm exponent value", LibFM, "1 a:1e3", 1, []wantFeat{{0, "a", 1000}}},
		{"fm hex value", LibFM, "1 a:0x1p-2", 1, []wantFeat{{0, "a", 0.25}}},
		{"fm long decimal", LibFM, "1 a:0.1234567890123", 1, []wantFeat{{0, "a", 0.1234567890123}}},
		{"fm underflow", LibFM, "1 a:1e-50", 1, []wantFeat{{0, "a", 0}}},
		{"ffm basic", LibFFM, "1 0:5:1 3:x:0.5", 1, []wantFeat{{0, "5", 1}, {3, "x", 0.5}}},
		{"ffm any field order", LibFFM, "0 9:a:1 2:b:1 9:c:1", 0, []wantFeat{{9, "a", 1}, {2, "b", 1}, {9, "c", 1}}},
		{"ffm leading zero field", LibFFM, "1 007:a:1", 1, []wantFeat{{7, "a", 1}}},
		{"ffm max field", LibFFM, "1 1048575:a:1", 1, []wantFeat{{1048575, "a", 1}}},
		{"ffm label only", LibFFM, "-1", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(tc.format)
			prefix := []Feature{{Field: 99, ID: 1, Value: 9}}
			label, out, err := p.ParseLine([]byte(tc.line), prefix)
			if err != nil {
				t.Fatalf("ParseLine(%q): %v", tc.line, err)
			}
			if label != tc.label {
				t.Errorf("label = %v, want %v", label, tc.label)
			}
			if len(out) != 1+len(tc.feats) || out[0] != prefix[0] {
				t.Fatalf("got %d features %v, want the prefix and %d more", len(out), out, len(tc.feats))
			}
			for i, w := range tc.feats {
				want := Feature{Field: w.field, ID: FeatureID(w.field, []byte(w.token)), Value: w.value}
				if got := out[1+i]; got != want {
					t.Errorf("feature %d = %+v, want %+v (token %q)", i, got, want, w.token)
				}
			}
		})
	}
}

func TestParseLineEmpty(t *testing.T) {
	for _, f := range []Format{LibFM, LibFFM} {
		for _, line := range []string{"", "\n", "\r\n", "   ", "\t \t", "#", "# comment 1 a:1", "  # indented", "\r"} {
			_, out, err := NewParser(f).ParseLine([]byte(line), nil)
			if err != ErrEmptyLine || len(out) != 0 {
				t.Errorf("%v: ParseLine(%q) = %v, %v; want ErrEmptyLine", f, line, out, err)
			}
		}
	}
}

func TestParseLineBad(t *testing.T) {
	tests := []struct {
		format Format
		line   string
		reason string
	}{
		{LibFM, "x a:1", `label "x" is not a finite number`},
		{LibFM, "nan a:1", `label "nan" is not a finite number`},
		{LibFM, "inf a:1", `label "inf" is not a finite number`},
		{LibFM, "1e999 a:1", `label "1e999" is not a finite number`},
		{LibFM, "1:1 a:1", `label "1:1" is not a finite number`},
		{LibFM, "1 5:x", `feature "5:x": value "x" is not a number`},
		{LibFM, "1 5", `feature "5": want token:value`},
		{LibFM, "1 5:", `feature "5:": empty value`},
		{LibFM, "1 :1", `feature ":1": empty token`},
		{LibFM, "1 0:5:1", `feature "0:5:1": want token:value, found more than one ':' (a libFFM line?)`},
		{LibFM, "1 a:1 b:nan", `feature "b:nan": value "nan" is not finite`},
		{LibFM, "1 a:-Inf", `feature "a:-Inf": value "-Inf" is not finite`},
		{LibFM, "1 a:1e39", `feature "a:1e39": value "1e39" overflows float32`},
		{LibFM, "1 a:1.2.3", `feature "a:1.2.3": value "1.2.3" is not a number`},
		{LibFM, "1 a:1\r\r", `feature "a:1\r": value "1\r" is not a number`},
		{LibFFM, "1 5:1", `feature "5:1": want field:token:value`},
		{LibFFM, "1 5", `feature "5": want field:token:value`},
		{LibFFM, "1 0:a:b:1", `feature "0:a:b:1": want field:token:value`},
		{LibFFM, "1 x:a:1", `feature "x:a:1": field "x" is not an integer in [0, 1048576)`},
		{LibFFM, "1 :a:1", `feature ":a:1": field "" is not an integer in [0, 1048576)`},
		{LibFFM, "1 -1:a:1", `feature "-1:a:1": field "-1" is not an integer in [0, 1048576)`},
		{LibFFM, "1 1048576:a:1", `feature "1048576:a:1": field "1048576" is not an integer in [0, 1048576)`},
		{LibFFM, "1 99999999999999999999:a:1", `feature "99999999999999999999:a:1": field "99999999999999999999" is not an integer in [0, 1048576)`},
		{LibFFM, "1 0::1", `feature "0::1": empty token`},
		{LibFFM, "1 0:a:", `feature "0:a:": empty value`},
		{LibFFM, "1 0:a:1 1:b:one", `feature "1:b:one": value "one" is not a number`},
	}
	for _, tc := range tests {
		p := NewParser(tc.format)
		prefix := []Feature{{Field: 1}}
		label, out, err := p.ParseLine([]byte(tc.line), prefix)
		var le *LineError
		if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) {
			t.Errorf("%v %q: err = %v, want a *LineError wrapping ErrMalformed", tc.format, tc.line, err)
			continue
		}
		if le.Reason != tc.reason {
			t.Errorf("%v %q: reason\n got %s\nwant %s", tc.format, tc.line, le.Reason, tc.reason)
		}
		if label != 0 || len(out) != 1 {
			t.Errorf("%v %q: on error got label %v and %d features, want 0 and the prefix only", tc.format, tc.line, label, len(out))
		}
	}
}

func TestLineErrorMessage(t *testing.T) {
	reason := `feature "5:x": value "x" is not a number`
	tests := []struct {
		e    LineError
		want string
	}{
		{LineError{"frappe.libfm", 17, reason}, `reader: frappe.libfm:17: malformed line: feature "5:x": value "x" is not a number`},
		{LineError{"", 17, reason}, `reader: line 17: malformed line: ` + reason},
		{LineError{"f", 0, reason}, `reader: f: malformed line: ` + reason},
		{LineError{"", 0, ""}, `reader: malformed line`},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestParseLineNoAllocs(t *testing.T) {
	lines := map[Format][]byte{
		LibFM:  []byte("-1 266:1 1244:0.5 5042:1 5049:1 abc:0.1234567891 x:1e-3 y:123456789\r\n"),
		LibFFM: []byte("1 0:266:1 1:1244:0.5 2:5042:1 3:5049:1 7:abcdefghijklmnop:0.1234567891 9:x:1e-3\n"),
	}
	for f, line := range lines {
		p := NewParser(f)
		feats := make([]Feature, 0, 64)
		allocs := testing.AllocsPerRun(200, func() {
			var err error
			_, feats, err = p.ParseLine(line, feats[:0])
			if err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per line, want 0", f, allocs)
		}
	}
}

func TestFastFloat32MatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	digits := "0123456789"
	for range 200000 {
		var b []byte
		if r.IntN(4) == 0 {
			b = append(b, "+-"[r.IntN(2)])
		}
		for range r.IntN(10) {
			b = append(b, digits[r.IntN(10)])
		}
		if r.IntN(2) == 0 {
			b = append(b, '.')
			for range r.IntN(12) {
				b = append(b, digits[r.IntN(10)])
			}
		}
		got, ok := fastFloat32(b)
		if !ok {
			continue
		}
		want, err := strconv.ParseFloat(string(b), 32)
		if err != nil {
			t.Fatalf("fastFloat32 accepted %q that strconv rejects: %v", b, err)
		}
		if math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("fastFloat32(%q) = %v, strconv %v", b, got, float32(want))
		}
	}
}

func TestParseFormat(t *testing.T) {
	for s, want := range map[string]Format{"libfm": LibFM, "libsvm": LibFM, "LibFFM": LibFFM, " libffm ": LibFFM} {
		got, err := ParseFormat(s)
		if err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv) succeeded")
	}
	for _, f := range []Format{LibFM, LibFFM} {
		b, err := f.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var g Format
		if err := g.UnmarshalText(b); err != nil || g != f {
			t.Errorf("text round trip of %v gave %v, %v", f, g, err)
		}
	}
	if s := Format(0).String(); s != "Format(0)" {
		t.Errorf("Format(0).String() = %q", s)
	}
	if _, err := Format(0).MarshalText(); err == nil {
		t.Error("Format(0).MarshalText succeeded")
	}
}
