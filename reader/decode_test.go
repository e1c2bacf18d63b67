package reader

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func mustDecoder(t testing.TB, f Format) Decoder {
	t.Helper()
	d, err := NewDecoder(f)
	if err != nil {
		t.Fatalf("NewDecoder(%v): %v", f, err)
	}
	return d
}

// skippedLine reports whether a Source drops line before the Decoder sees
// it: empty, only blanks, or a comment.
func skippedLine(line []byte) bool {
	i := skipBlank(line, 0)
	return i == len(line) || line[i] == '#'
}

// decodeLines drives d over lines the way a Source does under SkipBad: blank
// and comment lines are dropped, the first remaining line goes to Header, a
// line where Starts is true ends the group before it (End) and starts a new
// one, and after a Decode error the rest of the group is skipped. It returns
// clones of the groups that decoded and ended without error, and the errors,
// each prefixed with its 1-based line number. After every Decode, g must
// still satisfy Validate whenever it has levels.
func decodeLines(t testing.TB, d Decoder, lines [][]byte) (groups []*Group, errs []error) {
	t.Helper()
	var g Group
	first, open, bad := true, false, false
	start := 0
	end := func() {
		if open && !bad {
			if err := d.End(&g); err != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", start, err))
			} else {
				if err := g.Validate(); err != nil {
					t.Fatalf("group of line %d passed End but not Validate: %v", start, err)
				}
				groups = append(groups, g.Clone())
			}
		}
		open = false
	}
	for n, line := range lines {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if skippedLine(line) {
			continue
		}
		if first {
			first = false
			ok, err := d.Header(line)
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
				return nil, errs
			}
			if ok {
				continue
			}
		}
		if d.Starts(line) {
			end()
			open, bad, start = true, false, n+1
		} else if bad || !open {
			if !open {
				// A line before the first group: the decoder must reject it.
				open, bad, start = true, true, n+1
				if err := d.Decode(line, &g); err == nil {
					t.Fatalf("line %d %q before any group was accepted", n+1, line)
				} else {
					errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
				}
			}
			continue
		}
		if err := d.Decode(line, &g); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
			bad = true
		}
		if len(g.Levels) > 0 {
			if err := g.Validate(); err != nil {
				t.Fatalf("after line %d %q: %v", n+1, line, err)
			}
		}
	}
	end()
	return groups, errs
}

func decodeText(t testing.TB, f Format, text string) ([]*Group, []error) {
	t.Helper()
	return decodeLines(t, mustDecoder(t, f), bytes.Split([]byte(text), []byte("\n")))
}

// decodeOne decodes a single line (after header when it is non-empty).
func decodeOne(t *testing.T, f Format, header, line string) (*Group, error) {
	t.Helper()
	d := mustDecoder(t, f)
	if header != "" {
		if ok, err := d.Header([]byte(header)); !ok || err != nil {
			t.Fatalf("Header(%q) = %v, %v", header, ok, err)
		}
	}
	var g Group
	if err := d.Decode([]byte(line), &g); err != nil {
		return nil, err
	}
	if err := d.End(&g); err != nil {
		return nil, err
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("Decode(%q) gave an invalid group: %v", line, err)
	}
	return &g, nil
}

type wantDense struct {
	field  uint32
	values []float32
}

// wantLine describes one line of an expected group.
type wantLine struct {
	level  int
	parent int32
	labels []float32 // level 0 only
	sparse []wantFeat
	dense  []wantDense
}

// buildGroup builds the group with the given lines, added in order.
func buildGroup(levels int, lines ...wantLine) *Group {
	g := &Group{}
	g.Reset(levels)
	for _, l := range lines {
		var fields []uint32
		var ids []uint64
		var values []float32
		for _, f := range l.sparse {
			fields = append(fields, f.field)
			ids = append(ids, FeatureID(f.field, []byte(f.token)))
			values = append(values, f.value)
		}
		g.AddLine(l.level, l.parent, fields, ids, values)
		for _, d := range l.dense {
			g.AddDense(l.level, d.field, d.values)
		}
		if l.level == 0 {
			g.AddLabels(l.labels...)
		}
	}
	return g
}

// sameGroup reports whether a and b hold the same data (ignoring spare
// capacity and nil versus empty slices).
func sameGroup(a, b *Group) bool { return reflect.DeepEqual(a.Clone(), b.Clone()) }

func TestFormatNames(t *testing.T) {
	tests := []struct {
		name string
		want Format
	}{
		{"libfm", LibFM}, {"libsvm", LibFM}, {"libffm", LibFFM}, {"group", SampleGroup},
		{"GROUP", SampleGroup}, {"xml", XML}, {"xmlrepo", XML}, {" XMLRepo ", XML}, {"criteo", Criteo}, {"Parquet", Parquet},
	}
	for _, tc := range tests {
		got, err := ParseFormat(tc.name)
		if err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, f := range []Format{LibFM, LibFFM, SampleGroup, XML, Criteo} {
		b, err := f.MarshalText()
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		var g Format
		if err := g.UnmarshalText(b); err != nil || g != f {
			t.Errorf("text round trip of %v gave %v, %v", f, g, err)
		}
		if _, err := NewDecoder(f); err != nil {
			t.Errorf("NewDecoder(%v): %v", f, err)
		}
	}
	_, err := ParseFormat("csv")
	if err == nil || !strings.Contains(err.Error(), "want libfm, libsvm, libffm, group, xml, xmlrepo, criteo or parquet") {
		t.Errorf("ParseFormat(csv) error = %v", err)
	}
	// Parquet is a format of the job's files, not of lines.
	if _, err := NewDecoder(Parquet); err == nil || !strings.Contains(err.Error(), "reader/parquetsrc") {
		t.Errorf("NewDecoder(parquet): %v", err)
	}
	if b, err := Parquet.MarshalText(); err != nil || string(b) != "parquet" {
		t.Errorf("parquet.MarshalText: %q, %v", b, err)
	}
	for _, f := range []Format{0, Parquet + 1} {
		if _, err := NewDecoder(f); err == nil {
			t.Errorf("NewDecoder(%v) succeeded", f)
		}
		if _, err := f.MarshalText(); err == nil {
			t.Errorf("%v.MarshalText succeeded", f)
		}
	}
}

// criteoLine joins a label, 13 integer and 26 categorical columns; missing
// trailing columns are empty.
func criteoLine(label string, ints []string, cats []string) string {
	cols := make([]string, criteoColumns)
	cols[0] = label
	copy(cols[1:], ints)
	copy(cols[1+criteoInts:], cats)
	return strings.Join(cols, "\t")
}

func TestDecodeLineGood(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		header string // given to Header first when non-empty
		line   string
		labels []float32
		feats  []wantFeat
	}{
		{"libfm", LibFM, "", "1 266:1 1244:0.5", []float32{1}, []wantFeat{{0, "266", 1}, {1, "1244", 0.5}}},
		{"libfm minus one", LibFM, "", "-1 a:2", []float32{0}, []wantFeat{{0, "a", 2}}},
		{"libfm label only", LibFM, "", "+1", []float32{1}, nil},
		{"libffm", LibFFM, "", "0.7 3:a:2\t0:b:1\r", []float32{1}, []wantFeat{{3, "a", 2}, {0, "b", 1}}},
		{"libffm zero", LibFFM, "", "0 1048575:x:-1e-3", []float32{0}, []wantFeat{{1048575, "x", -1e-3}}},
		{"xml", XML, "3 10 5", "1,4 0:1 9:0.5", []float32{1, 4}, []wantFeat{{0, "0", 1}, {0, "9", 0.5}}},
		{"xml no labels", XML, "3 10 5", " 3:1", nil, []wantFeat{{0, "3", 1}}},
		{"xml no labels tab", XML, "3 10 5", "\t3:1\t4:2", nil, []wantFeat{{0, "3", 1}, {0, "4", 2}}},
		{"xml labels only", XML, "3 10 5", "2", []float32{2}, nil},
		{"xml label order kept", XML, "3 10 5", "4,1,4 2:1", []float32{4, 1, 4}, []wantFeat{{0, "2", 1}}},
		{"xml token as written", XML, "3 10 5", "0 007:1", []float32{0}, []wantFeat{{0, "007", 1}}},
		{"xml no header", XML, "", "16777216 123456789:2\r", []float32{16777216}, []wantFeat{{0, "123456789", 2}}},
		{"criteo", Criteo, "", criteoLine("1",
			[]string{"0", "1", "2", "3", "-5", "10", "", "100", "1000", "+7", "-0", "1000000", ""},
			[]string{"68fd1e64", "", "a b", "x"}),
			[]float32{1}, []wantFeat{{0, "0", 1}, {1, "1", 1}, {2, "2", 1}, {3, "1", 1}, {4, "-5", 1},
				{5, "5", 1}, {7, "21", 1}, {8, "47", 1}, {9, "3", 1}, {10, "0", 1}, {11, "190", 1},
				{13, "68fd1e64", 1}, {15, "a b", 1}, {16, "x", 1}}},
		{"criteo all missing", Criteo, "", criteoLine("0", nil, nil), []float32{0}, nil},
		{"criteo crlf", Criteo, "", criteoLine("0", nil, []string{"", "", "", "", "", "", "", "", "", "", "", "", "",
			"", "", "", "", "", "", "", "", "", "", "", "", "e5"}) + "\r", []float32{0}, []wantFeat{{38, "e5", 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := decodeOne(t, tc.format, tc.header, tc.line)
			if err != nil {
				t.Fatalf("Decode(%q): %v", tc.line, err)
			}
			want := buildGroup(1, wantLine{labels: tc.labels, sparse: tc.feats})
			if !sameGroup(g, want) {
				t.Errorf("Decode(%q):\n got %+v\nwant %+v", tc.line, g, want)
			}
		})
	}
}

func TestDecodeLineBad(t *testing.T) {
	tests := []struct {
		format Format
		header string
		line   string
		reason string
		exact  bool // reason is the whole error text, not a part of it
	}{
		{LibFM, "", "x a:1", `label "x" is not a finite number`, true},
		{LibFM, "", "1 a:x", `feature "a:x": value "x" is not a number`, true},
		{LibFM, "", "1 a:1:1", "more than one ':'", false},
		{LibFM, "", "  # comment", "line holds no sample", false},
		{LibFFM, "", "1 5:x", `feature "5:x": want field:token:value`, true},
		{LibFFM, "", "1 x:a:1", `field "x" is not an integer`, false},
		{XML, "3 10 5", "5 1:1", `labels "5": label 5 is not below the header's 5 labels`, true},
		{XML, "3 10 5", "1 10:1", `feature "10:1": index "10" is not below the header's 10 features`, true},
		{XML, "3 10 5", "1,,2 1:1", `label "" is not a non-negative integer`, false},
		{XML, "3 10 5", "1, 1:1", `label "" is not a non-negative integer`, false},
		{XML, "3 10 5", "-1 1:1", `label "-1" is not a non-negative integer`, false},
		{XML, "3 10 5", "1.5 1:1", `label "1.5" is not a non-negative integer`, false},
		{XML, "3 10 5", "1 a:1", `feature "a:1": index "a" is not a non-negative integer`, true},
		{XML, "3 10 5", "1 :1", `index "" is not a non-negative integer`, false},
		{XML, "3 10 5", "1 1:1:1", `feature "1:1:1": want index:value`, true},
		{XML, "3 10 5", "1 1", `feature "1": want index:value`, true},
		{XML, "3 10 5", "1 1:nan", `feature "1:nan": value "nan" is not finite`, true},
		{XML, "3 10 5", "1 1:", `feature "1:": empty value`, true},
		{XML, "", "16777217 1:1", "above 2^24", false},
		{XML, "", "99999999999999999999999 1:1", "above 2^24", false},
		{XML, "", "1:1 2:1", `label "1:1" is not a non-negative integer`, false},
		{Criteo, "", criteoLine("1", nil, nil)[2:], "want 40 tab-separated columns (label, I1-I13, C1-C26), found 39 (a test file without the label column?)", true},
		{Criteo, "", criteoLine("1", nil, nil) + "\t", "want 40 tab-separated columns (label, I1-I13, C1-C26), found 41", true},
		{Criteo, "", "1 2 3", "found 1", false},
		{Criteo, "", criteoLine("2", nil, nil), `label "2" is not 0 or 1`, true},
		{Criteo, "", criteoLine("", nil, nil), `label "" is not 0 or 1`, true},
		{Criteo, "", criteoLine("1", []string{"1.5"}, nil), `column I1: "1.5" is not an integer`, true},
		{Criteo, "", criteoLine("1", []string{"", "", "9223372036854775808"}, nil), `column I3: "9223372036854775808" is not an integer`, true},
		{Criteo, "", criteoLine("1", []string{"", "-"}, nil), `column I2: "-" is not an integer`, true},
	}
	for _, tc := range tests {
		t.Run(tc.format.String()+"/"+tc.line, func(t *testing.T) {
			_, err := decodeOne(t, tc.format, tc.header, tc.line)
			switch {
			case err == nil:
				t.Fatalf("Decode(%q) succeeded, want %q", tc.line, tc.reason)
			case tc.exact && err.Error() != tc.reason:
				t.Errorf("Decode(%q) = %q, want %q", tc.line, err, tc.reason)
			case !strings.Contains(err.Error(), tc.reason):
				t.Errorf("Decode(%q) = %q, want it to contain %q", tc.line, err, tc.reason)
			}
			if errors.Is(err, ErrMalformed) || strings.HasPrefix(err.Error(), "reader:") {
				t.Errorf("Decode(%q) = %q: want a plain reason, the Source wraps it", tc.line, err)
			}
		})
	}
}

func TestCriteoIntToken(t *testing.T) {
	tests := []struct {
		x    int64
		want string
	}{
		{math.MinInt64, "-9223372036854775808"}, {-1, "-1"}, {0, "0"}, {1, "1"}, {2, "2"},
		{3, "1"}, {7, "3"}, {8, "4"}, {10, "5"}, {100, "21"}, {1000, "47"}, {1000000, "190"},
		{1 << 62, "1846"}, {math.MaxInt64, "1906"},
	}
	for _, tc := range tests {
		if got := string(criteoIntToken(nil, tc.x)); got != tc.want {
			t.Errorf("criteoIntToken(%d) = %q, want %q", tc.x, got, tc.want)
		}
	}
}

func TestXMLHeader(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{"3 10 5", true},
		{"  4880\t1836 159 ", true},
		{"0 0 0", true},
		{"3 10", false},
		{"3 10 5 7", false},
		{"a b c", false},
		{"1,2 3:1", false},
		{"-1 2 3", false},
		{"1 2 +3", false},
		{"", false},
		{"99999999999999999999 1 1", false},
	}
	for _, tc := range tests {
		d := mustDecoder(t, XML)
		ok, err := d.Header([]byte(tc.line))
		if tc.ok != ok || tc.ok != (err == nil) {
			t.Errorf("Header(%q) = %v, %v; want %v", tc.line, ok, err, tc.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "missing XMLRepository header N F L") {
			t.Errorf("Header(%q) error %q", tc.line, err)
		}
	}
	// A file without the header is an error, and the header's bounds apply
	// only to its own file.
	_, errs := decodeText(t, XML, "1,2 3:1\n")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "missing XMLRepository header") {
		t.Errorf("file without a header: %v", errs)
	}
	d := mustDecoder(t, XML)
	var g Group
	if _, err := d.Header([]byte("1 2 2")); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode([]byte("5 7:1"), &g); err == nil {
		t.Error("label 5 >= L = 2 accepted")
	}
	if _, err := d.Header([]byte("1 8 6")); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode([]byte("5 7:1"), &g); err != nil {
		t.Errorf("after a new header: %v", err)
	}
}

func TestOneLineFormatsStartAlways(t *testing.T) {
	for _, f := range []Format{LibFM, LibFFM, XML, Criteo} {
		d := mustDecoder(t, f)
		for _, line := range []string{"1 a:1", "group 2", "", "x"} {
			if !d.Starts([]byte(line)) {
				t.Errorf("%v: Starts(%q) = false", f, line)
			}
		}
		if f != XML {
			if ok, err := d.Header([]byte("1 2 3")); ok || err != nil {
				t.Errorf("%v: Header = %v, %v; want false, nil", f, ok, err)
			}
		}
		if err := d.End(&Group{}); err != nil {
			t.Errorf("%v: End: %v", f, err)
		}
	}
}

// movieLens is the example of the package documentation and the README.
const movieLens = `group 2
1 - - 0:u196 1:age49 2:M 3:writer 4:55105
0 0 1 5:i242 6:Comedy
0 0 0 5:i302 6:Crime 6:Film-Noir 7=0.25,1.5
`

// groupsCase is a text in the SampleGroup format, the groups it decodes
// to and parts of the errors it gives, in order.
type groupsCase struct {
	name string
	text string
	want []*Group
	errs []string
}

// unitFeat is a sparse feature of weight 1.
func unitFeat(field uint32, token string) wantFeat { return wantFeat{field, token, 1} }

// goodGroupsCases are texts of well-formed groups only.
func goodGroupsCases() []groupsCase {
	f := unitFeat
	return []groupsCase{
		{"movielens", movieLens, []*Group{buildGroup(2,
			wantLine{level: 1, sparse: []wantFeat{f(0, "u196"), f(1, "age49"), f(2, "M"), f(3, "writer"), f(4, "55105")}},
			wantLine{level: 0, labels: []float32{1}, sparse: []wantFeat{f(5, "i242"), f(6, "Comedy")}},
			wantLine{level: 0, labels: []float32{0}, sparse: []wantFeat{f(5, "i302"), f(6, "Crime"), f(6, "Film-Noir")},
				dense: []wantDense{{7, []float32{0.25, 1.5}}}},
		)}, nil},
		{"interleaved three levels", "# ads\ngroup 3\n2 - - 0:ad1\n1 0 - 1:u1\n0 0 1 2:x\n\n1 0 - 1:u2\r\n" +
			"0 1 0 2:y\n0 0 0.5,1,3 2:z:-2 9=1,2,3 8=4\n  0\t1\t-\t2:w:0.5\n", []*Group{buildGroup(3,
			wantLine{level: 2, sparse: []wantFeat{f(0, "ad1")}},
			wantLine{level: 1, parent: 0, sparse: []wantFeat{f(1, "u1")}},
			wantLine{level: 0, parent: 0, labels: []float32{1}, sparse: []wantFeat{f(2, "x")}},
			wantLine{level: 1, parent: 0, sparse: []wantFeat{f(1, "u2")}},
			wantLine{level: 0, parent: 1, labels: []float32{0}, sparse: []wantFeat{f(2, "y")}},
			wantLine{level: 0, parent: 0, labels: []float32{0.5, 1, 3}, sparse: []wantFeat{{2, "z", -2}},
				dense: []wantDense{{9, []float32{1, 2, 3}}, {8, []float32{4}}}},
			wantLine{level: 0, parent: 1, sparse: []wantFeat{{2, "w", 0.5}}},
		)}, nil},
		{"one level groups", "group 1\n0 - 1 0:a\ngroup 1\n0 - - 0:b\n0 - 2\n", []*Group{
			buildGroup(1, wantLine{labels: []float32{1}, sparse: []wantFeat{f(0, "a")}}),
			buildGroup(1, wantLine{sparse: []wantFeat{f(0, "b")}}, wantLine{labels: []float32{2}}),
		}, nil},
	}
}

// badGroupsCases are texts with malformed groups, headers, lines and
// features; the well-formed groups among them still decode.
func badGroupsCases() []groupsCase {
	f := unitFeat
	return []groupsCase{
		{"bad group skipped", "group 1\n0 - 1 0:a\ngroup 2\n0 0 1 0:b\n1 - - 1:c\ngroup 1\n0 - 0 0:d\n", []*Group{
			buildGroup(1, wantLine{labels: []float32{1}, sparse: []wantFeat{f(0, "a")}}),
			buildGroup(1, wantLine{labels: []float32{0}, sparse: []wantFeat{f(0, "d")}}),
		}, []string{"line 4: parent 0 of a level-0 line: level 1 has 0 lines so far"}},
		{"line before any group", "0 - 1 0:a\ngroup 1\n0 - 1 0:b\n", []*Group{
			buildGroup(1, wantLine{labels: []float32{1}, sparse: []wantFeat{f(0, "b")}}),
		}, []string{"line 1: line outside a group: missing `group L` header"}},
		{"group without samples", "group 2\n1 - - 0:u\n", nil,
			[]string{"line 1: group without samples: no level-0 line after `group L`"}},
		{"empty group", "group 1\ngroup 1\n0 - 1\n", []*Group{buildGroup(1, wantLine{labels: []float32{1}})},
			[]string{"line 1: group without samples"}},
		{"bad headers", "group 0\ngroup 9\ngroup\ngroup 2 x\ngroup x\n", nil, []string{
			"line 1: group header: number of levels \"0\" is not an integer in [1, 8]",
			"line 2: group header: number of levels \"9\"",
			"line 3: group header: want `group L`, missing the number of levels L",
			"line 4: group header: want `group L`, found \"x\" after the number of levels",
			"line 5: group header: number of levels \"x\"",
		}},
		{"bad lines", "group 2\n2 - -\ngroup 2\n1 0 - 0:a\ngroup 2\n1 - -\n0 - 1\ngroup 2\n1 - 1 0:a\n" +
			"group 2\n1\ngroup 2\n1 -\ngroup 1\n0 - 1,x 0:a\ngroup 1\n0 - 1, 0:a\ngroup 2\n1 - -\n0 x 1\n", nil, []string{
			`line 2: level "2" is not an integer in [0, 2)`,
			`line 4: parent "0" of a line of the top level 1: top-level lines have no parent, write -`,
			"line 7: parent - of a level-0 line: only top-level (level 1) lines have no parent",
			`line 9: labels "1" on a level-1 line: only level-0 lines (samples) have labels, write -`,
			"line 11: want `level parent labels feature...`, missing the parent",
			"line 13: want `level parent labels feature...`, missing the labels",
			`line 15: labels "1,x": label "x" is not a number`,
			`line 17: labels "1,": label "" is empty`,
			`line 20: parent "x" is not a line index`,
		}},
		{"bad features", "group 1\n0 - 1 0:\ngroup 1\n0 - 1 0:a=b\ngroup 1\n0 - 1 7=\ngroup 1\n0 - 1 7=1,,2\n" +
			"group 1\n0 - 1 x:a\ngroup 1\n0 - 1 0:a:1:2\ngroup 1\n0 - 1 abc\ngroup 1\n0 - 1 0:a:1e40\n" +
			"group 1\n0 - 1 1048576:a\ngroup 1\n0 - 1 x=1\ngroup 1\n0 - 1 0:a:nan\ngroup 1\n0 - 1 0::1\n", nil, []string{
			`line 2: feature "0:": empty token`,
			`line 4: feature "0:a=b": the token contains '='`,
			`line 6: dense feature "7=": no values`,
			`line 8: dense feature "7=1,,2": value "" is empty`,
			`line 10: feature "x:a": field "x" is not an integer in [0, 1048576)`,
			`line 12: feature "0:a:1:2": want field:token[:weight], found more than two ':'`,
			`line 14: feature "abc": want field:token[:weight] or field=v1,v2,...`,
			`line 16: feature "0:a:1e40": value "1e40" overflows float32`,
			`line 18: feature "1048576:a": field "1048576" is not an integer`,
			`line 20: dense feature "x=1": field "x" is not an integer`,
			`line 22: feature "0:a:nan": value "nan" is not finite`,
			`line 24: feature "0::1": empty token`,
		}},
	}
}

// checkDecodedGroups decodes tc.text and checks the groups and errors.
func checkDecodedGroups(t *testing.T, tc groupsCase) {
	groups, errs := decodeText(t, SampleGroup, tc.text)
	if len(groups) != len(tc.want) {
		t.Fatalf("%d groups, want %d (errors %v)", len(groups), len(tc.want), errs)
	}
	for i := range groups {
		if !sameGroup(groups[i], tc.want[i]) {
			t.Errorf("group %d:\n got %+v\nwant %+v", i, groups[i], tc.want[i])
		}
	}
	if len(errs) != len(tc.errs) {
		t.Fatalf("errors %q, want %q", errs, tc.errs)
	}
	for i, err := range errs {
		if !strings.Contains(err.Error(), tc.errs[i]) {
			t.Errorf("error %d = %q, want it to contain %q", i, err, tc.errs[i])
		}
	}
}

func TestDecodeGroups(t *testing.T) {
	for _, tc := range append(goodGroupsCases(), badGroupsCases()...) {
		t.Run(tc.name, func(t *testing.T) { checkDecodedGroups(t, tc) })
	}
}

func TestGroupStarts(t *testing.T) {
	d := mustDecoder(t, SampleGroup)
	for line, want := range map[string]bool{
		"group 2": true, "  group\t3": true, "group": true, "group\r": true, "group x y": true,
		"groups 2": false, "0 - 1 0:group": false, "# group 2": false, "": false, "grou": false,
	} {
		if got := d.Starts([]byte(line)); got != want {
			t.Errorf("Starts(%q) = %v, want %v", line, got, want)
		}
	}
	if ok, err := d.Header([]byte("group 2")); ok || err != nil {
		t.Errorf("Header = %v, %v; want false, nil", ok, err)
	}
}

// TestGroupDecodeAtomic checks that a rejected line leaves the group as it
// was, and that End refuses a group whose decoder lost track of it.
func TestGroupDecodeAtomic(t *testing.T) {
	d := mustDecoder(t, SampleGroup)
	var g Group
	for _, line := range []string{"group 2", "1 - - 0:u", "0 0 1 1:a 2=1"} {
		if err := d.Decode([]byte(line), &g); err != nil {
			t.Fatal(err)
		}
	}
	before := g.Clone()
	for _, line := range []string{"0 0 1 1:b 2=1 3:x:y", "0 0 1 2=1,x", "0 1 1 1:b", "0 0 1,y 1:b"} {
		if err := d.Decode([]byte(line), &g); err == nil {
			t.Fatalf("Decode(%q) succeeded", line)
		}
		if !sameGroup(&g, before) {
			t.Fatalf("Decode(%q) changed the group:\n got %+v\nwant %+v", line, &g, before)
		}
	}
	if err := d.End(&g); err != nil {
		t.Fatal(err)
	}
	if err := d.End(&Group{}); err == nil {
		t.Error("End of a group of 0 levels succeeded")
	}
	if err := d.Decode([]byte("0 0 1 1:b"), &Group{}); err == nil {
		t.Error("Decode into a group of 0 levels succeeded")
	}
	d.Header([]byte("x")) // a new file: no open group
	if err := d.Decode([]byte("0 0 1 1:b"), &g); err == nil || err.Error() != "line outside a group: missing `group L` header" {
		t.Errorf("data line after Header: %v", err)
	}
}

// randomFloat32 returns a finite float32: often a round value, sometimes
// any bit pattern.
func randomFloat32(r *rand.Rand) float32 {
	switch r.IntN(4) {
	case 0:
		return 1
	case 1:
		return float32(r.IntN(200)-100) / 8
	}
	for {
		v := math.Float32frombits(r.Uint32())
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			return v
		}
	}
}

// randomGroup returns a valid group of 1..4 levels.
func randomGroup(r *rand.Rand) *Group {
	levels := 1 + r.IntN(4)
	g := &Group{}
	g.Reset(levels)
	for k := levels - 1; k >= 0; k-- {
		for range 1 + r.IntN(4) {
			var parent int32
			if k < levels-1 {
				parent = int32(r.IntN(g.Levels[k+1].Len()))
			}
			n := r.IntN(5)
			fields, ids, values := make([]uint32, n), make([]uint64, n), make([]float32, n)
			for i := range n {
				fields[i] = uint32(r.IntN(MaxField))
				if r.IntN(2) == 0 {
					fields[i] %= 10
				}
				ids[i] = r.Uint64()
				values[i] = randomFloat32(r)
			}
			g.AddLine(k, parent, fields, ids, values)
			for range r.IntN(3) {
				vals := make([]float32, 1+r.IntN(3))
				for i := range vals {
					vals[i] = randomFloat32(r)
				}
				g.AddDense(k, uint32(r.IntN(20)), vals)
			}
			if k == 0 {
				labels := make([]float32, r.IntN(4))
				for i := range labels {
					labels[i] = randomFloat32(r)
				}
				g.AddLabels(labels...)
			}
		}
	}
	return g
}

// checkRenamed checks that b is a with every sparse id renamed to
// FeatureID(field, decimal id), as WriteGroup and decoding do, and otherwise
// bit-identical.
func checkRenamed(a, b *Group) error {
	want := a.Clone()
	for k := range want.Levels {
		l := &want.Levels[k]
		for i, id := range l.IDs {
			l.IDs[i] = FeatureID(l.Fields[i], strconv.AppendUint(nil, id, 10))
		}
	}
	got := b.Clone()
	got.Pos, got.Next, want.Pos, want.Next = Position{}, Position{}, Position{}, Position{}
	if !reflect.DeepEqual(float32Bits(got), float32Bits(want)) {
		return fmt.Errorf("\n got %+v\nwant %+v", got, want)
	}
	return nil
}

// float32Bits returns g with every float replaced by its bits, so that
// DeepEqual tells -0 from 0.
func float32Bits(g *Group) any {
	bits := func(v []float32) []uint32 {
		out := make([]uint32, len(v))
		for i, x := range v {
			out[i] = math.Float32bits(x)
		}
		return out
	}
	type level struct {
		Parent, Offsets, DenseOffsets, DenseEnds []int32
		Fields, DenseFields, Values, DenseValues []uint32
		IDs                                      []uint64
	}
	out := struct {
		Levels       []level
		LabelOffsets []int32
		Labels       []uint32
	}{LabelOffsets: g.LabelOffsets, Labels: bits(g.Labels)}
	for _, l := range g.Levels {
		out.Levels = append(out.Levels, level{l.Parent, l.Offsets, l.DenseOffsets, l.DenseEnds,
			l.Fields, l.DenseFields, bits(l.Values), bits(l.DenseValues), l.IDs})
	}
	return out
}

func TestWriteGroupRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var buf bytes.Buffer
	var want []*Group
	for range 300 {
		g := randomGroup(r)
		if err := WriteGroup(&buf, g); err != nil {
			t.Fatalf("WriteGroup(%+v): %v", g, err)
		}
		want = append(want, g)
	}
	text := buf.String()
	got, errs := decodeText(t, SampleGroup, text)
	if len(errs) > 0 || len(got) != len(want) {
		t.Fatalf("decoded %d groups of %d, errors %v", len(got), len(want), errs)
	}
	for i := range want {
		if err := checkRenamed(want[i], got[i]); err != nil {
			t.Fatalf("group %d: %v", i, err)
		}
	}
	// The example reads back to the same text.
	groups, _ := decodeText(t, SampleGroup, movieLens)
	buf.Reset()
	if err := WriteGroup(&buf, groups[0]); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "group 2\n1 - - 0:") || strings.Count(buf.String(), "\n") != 4 ||
		!strings.Contains(buf.String(), " 7=0.25,1.5\n") {
		t.Errorf("WriteGroup(movieLens) =\n%s", buf.String())
	}
}

func TestWriteGroupRejects(t *testing.T) {
	valid := func() *Group {
		return buildGroup(2, wantLine{level: 1}, wantLine{labels: []float32{1}, sparse: []wantFeat{{1, "a", 2}},
			dense: []wantDense{{3, []float32{1}}}})
	}
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		mutate func(g *Group)
		reason string
	}{
		{"invalid", func(g *Group) { g.Levels[0].Parent[0] = 5 }, "parent 5 outside"},
		{"no samples", func(g *Group) { g.Reset(1) }, "no samples"},
		{"too many levels", func(g *Group) {
			g.Reset(MaxLevels + 1)
			for k := MaxLevels; k >= 0; k-- {
				g.AddLine(k, 0, nil, nil, nil)
			}
			g.AddLabels()
		}, "9 levels"},
		{"nan label", func(g *Group) { g.Labels[0] = nan }, "label NaN"},
		{"nan value", func(g *Group) { g.Levels[0].Values[0] = nan }, "value NaN"},
		{"inf dense", func(g *Group) { g.Levels[0].DenseValues[0] = float32(math.Inf(1)) }, "dense value +Inf"},
		{"big field", func(g *Group) { g.Levels[0].Fields[0] = MaxField }, "field 1048576"},
		{"big dense field", func(g *Group) { g.Levels[0].DenseFields[0] = MaxField }, "dense field 1048576"},
		{"empty dense", func(g *Group) { g.AddDense(0, 4, nil) }, "dense field 4 has no values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := valid()
			var buf bytes.Buffer
			if err := WriteGroup(&buf, g); err != nil {
				t.Fatalf("valid group: %v", err)
			}
			tc.mutate(g)
			buf.Reset()
			err := WriteGroup(&buf, g)
			if !errors.Is(err, ErrBadGroup) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("WriteGroup = %v, want ErrBadGroup with %q", err, tc.reason)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q", buf.String())
			}
		})
	}
	w := errWriter{}
	if err := WriteGroup(w, valid()); !errors.Is(err, errWrite) {
		t.Errorf("write error: %v", err)
	}
}

var errWrite = errors.New("disk full")

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestDecodeNoAllocs checks that decoding allocates nothing once the
// decoder's scratch and the group have grown.
func TestDecodeNoAllocs(t *testing.T) {
	tests := []struct {
		format Format
		lines  []string
	}{
		{LibFM, []string{"-1 266:1 1244:0.5 5042:1 abc:0.1234567891 x:1e-3"}},
		{LibFFM, []string{"1 0:266:1 1:1244:0.5 2:5042:1 7:abcdefghijklmnop:0.1234567891"}},
		{XML, []string{"1,4,7 0:1 9:0.5 3:1e-3"}},
		{Criteo, []string{criteoLine("1", []string{"0", "1", "20", "", "-3", "123456"}, []string{"68fd1e64", "", "80e26c9b"})}},
		{SampleGroup, strings.Split(strings.TrimSpace(movieLens), "\n")},
	}
	for _, tc := range tests {
		d := mustDecoder(t, tc.format)
		var g Group
		lines := make([][]byte, len(tc.lines))
		for i, l := range tc.lines {
			lines[i] = []byte(l)
		}
		run := func() {
			for _, line := range lines {
				if err := d.Decode(line, &g); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.End(&g); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
			t.Errorf("%v: %v allocations per group, want 0", tc.format, allocs)
		}
	}
}

// bibtexPath is the Bibtex XMLRepository training split, relative to this
// package.
const bibtexPath = "../../shared/data/bibtex/train.txt"

func TestDecodeBibtex(t *testing.T) {
	f, err := os.Open(bibtexPath)
	if err != nil {
		t.Skipf("Bibtex data not present (%v); it lives at <project root>/../shared/data/bibtex", err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	groups, errs := decodeLines(t, mustDecoder(t, XML), lines)
	if len(errs) > 0 || len(groups) != 4880 {
		t.Fatalf("%d groups, want 4880; errors %v", len(groups), errs)
	}
	labels, feats := 0, 0
	for _, g := range groups {
		if g.NumSamples() != 1 || len(g.Levels) != 1 {
			t.Fatalf("group %+v is not one sample", g)
		}
		for _, y := range g.Labels {
			if y < 0 || y >= 159 || y != float32(int(y)) {
				t.Fatalf("label %v outside [0, 159)", y)
			}
		}
		labels += len(g.Labels)
		feats += len(g.Levels[0].IDs)
	}
	if labels < 4880 || feats < 4880 {
		t.Errorf("%d labels and %d features for 4880 samples", labels, feats)
	}
	// The first sample is "48,131 44:1 59:1 ...".
	if got := groups[0].SampleLabels(0); len(got) != 2 || got[0] != 48 || got[1] != 131 {
		t.Errorf("first sample's labels %v, want [48 131]", got)
	}
	if id := groups[0].Levels[0].IDs[0]; id != FeatureID(0, []byte("44")) {
		t.Errorf("first feature id %#x, want FeatureID(0, \"44\")", id)
	}
}
