package reader

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// allFormats are the formats a FileSource reads.
var allFormats = []Format{LibFM, LibFFM, SampleGroup, XML, Criteo}

// goodStart is a valid beginning of a file of format f: a header when f has
// one and one group.
var goodStart = map[Format]string{
	LibFM:       "1 a:1 b:1\n",
	LibFFM:      "1 0:a:1 1:b:1\n",
	SampleGroup: "group 1\n0 - 1 0:a\n",
	XML:         "2 10 3\n0,1 3:1 4:0.5\n",
	Criteo:      criteoTSV(false) + "\n",
}

// checkPrintable fails unless msg is valid UTF-8 without control bytes
// other than tab and newline, and is at most max bytes long.
func checkPrintable(t *testing.T, what, msg string, max int) {
	t.Helper()
	if !utf8.ValidString(msg) {
		t.Errorf("%s: message is not valid UTF-8: %q", what, msg)
	}
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			t.Errorf("%s: message holds the raw byte %#x at %d: %q", what, c, i, msg)
			break
		}
	}
	if len(msg) > max {
		t.Errorf("%s: message has %d bytes, want at most %d (input quoted unclipped?): %.300q...", what, len(msg), max, msg)
	}
}

// readFileErr reads the file at p in format f with a FileSource under
// StopOnBad and returns its error, which must be a *LineError.
func readFileErr(t *testing.T, p string, f Format) *LineError {
	t.Helper()
	src, err := OpenFiles([]FileSplit{{Path: p}}, f, StopOnBad)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = ReadAll(context.Background(), src)
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("%s read as %v: %v, want a *LineError", p, f, err)
	}
	return le
}

// TestBinaryFileMagic: a Parquet or gzip file given as training data is
// reported as such, in every format and by Read and DecodeMessage, instead
// of as a bad label or header quoting its bytes; the message is printable.
func TestBinaryFileMagic(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Repeat("1 0:a:1 1:b:1\n", 100)))
	zw.Close()
	// The start of a Parquet file: magic, then a data page header (Thrift).
	parquet := append([]byte("PAR1\x15\x00\x15\x9c\x01\x15\x9c\x01,\x15\x14\x15\x00\x15\x06\x15\x06\x00\x00\n\x00\x00\x00\x01"),
		bytes.Repeat([]byte{0, 0xff, 0x8b, '\n', 7}, 300)...)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want []string
	}{
		{"train.parquet", parquet, []string{"is a Parquet file", "give format parquet", "train.columns"}},
		{"train.libffm.gz", gz.Bytes(), []string{"gzip-compressed", "decompress it first"}},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: %v, want a malformed-input error", what, err)
				return
			}
			checkPrintable(t, what, err.Error(), 500)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %v, want %q in it", what, err, w)
				}
			}
			if strings.Contains(err.Error(), "label") || strings.Contains(err.Error(), `\x`) {
				t.Errorf("%s: %v, want the file's kind, not a bad label or its bytes", what, err)
			}
		}
		for _, f := range allFormats {
			le := readFileErr(t, p, f)
			check(tc.name+" as "+f.String(), le)
			if le.Line != 1 {
				t.Errorf("%s as %v: line %d, want 1", tc.name, f, le.Line)
			}
		}
		for _, f := range []Format{LibFM, LibFFM} {
			_, _, err := ReadFile(p, ReadOptions{Format: f})
			check(tc.name+" by ReadFile as "+f.String(), err)
			dec := mustDecoder(t, f)
			var g Group
			check(tc.name+" by DecodeMessage as "+f.String(), DecodeMessage(dec, tc.data, &g))
		}
		// A split not at the file's start does not see the magic bytes, but
		// its messages stay printable.
		src, err := OpenFiles([]FileSplit{{Path: p, Start: 10}}, LibFFM, StopOnBad)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadAll(context.Background(), src)
		src.Close()
		if err != nil {
			checkPrintable(t, tc.name+" from byte 10", err.Error(), 500)
		}
	}
}

// TestBinaryLine: a binary line in a text file of any format gives an
// error that quotes a short escaped prefix of its bytes, never the raw
// bytes, and says that the line is not text.
func TestBinaryLine(t *testing.T) {
	// A long run of binary without spaces or newlines, as in a compressed
	// block: the first token is the whole run.
	bin := bytes.Repeat([]byte{0x00, 0x01, 0xff, 0x1b, '[', '2', 'J', 0xc3, 0x28, 0x7f, 0x80, '\r'}, 1000)
	dir := t.TempDir()
	for _, f := range allFormats {
		data := goodStart[f] + string(bin) + "\n" + goodStart[f]
		if f == XML || f == SampleGroup {
			data = goodStart[f] + string(bin) + "\n"
		}
		p := filepath.Join(dir, "train."+f.String())
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		le := readFileErr(t, p, f)
		what := f.String()
		checkPrintable(t, what, le.Error(), 500)
		if want := strings.Count(goodStart[f], "\n") + 1; le.Line != int64(want) {
			t.Errorf("%s: %v: line %d, want %d", what, le, le.Line, want)
		}
		if !strings.Contains(le.Error(), "the line is not text") {
			t.Errorf("%s: %v, want it to say that the line is not text", what, le)
		}
	}
	for _, f := range []Format{LibFM, LibFFM} {
		_, _, err := Read(bytes.NewReader(append([]byte(goodStart[f]), bin...)), "stdin", ReadOptions{Format: f})
		if err == nil || !strings.Contains(err.Error(), "the line is not text") {
			t.Errorf("Read as %v: %v, want an error saying that the line is not text", f, err)
		} else {
			checkPrintable(t, "Read as "+f.String(), err.Error(), 500)
		}
		var g Group
		err = DecodeMessage(mustDecoder(t, f), bin, &g)
		if err == nil || !strings.Contains(err.Error(), "the line is not text") {
			t.Errorf("DecodeMessage as %v: %v, want an error saying that the line is not text", f, err)
		} else {
			checkPrintable(t, "DecodeMessage as "+f.String(), err.Error(), 500)
		}
	}
	// Text that is not ASCII is not binary: no note, and clip cuts at a
	// rune boundary.
	line := []byte("1 " + strings.Repeat("é", 40) + ":1")
	_, _, err := NewParser(LibFFM).ParseLine(line, nil)
	if err == nil || strings.Contains(err.Error(), "not text") || isBinary(line) {
		t.Errorf("ParseLine(%q) = %v, want an error without the binary note", line, err)
	} else {
		checkPrintable(t, "UTF-8 line", err.Error(), 500)
		if strings.Contains(err.Error(), `\x`) {
			t.Errorf("ParseLine(%q) = %v: clip cut inside a rune", line, err)
		}
	}
}

// TestClip: clip keeps the %q form of its result (without the quotes and
// the "...") within 64 bytes, cuts at rune boundaries, and keeps short
// input whole.
func TestClip(t *testing.T) {
	for _, in := range []string{"", "abc", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat(`"'`, 40),
		strings.Repeat("é", 40), strings.Repeat("\x00\xff", 40), "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14\x15",
		strings.Repeat("\u2028x", 20), strings.Repeat("\U0001F600", 20)} {
		got := clip([]byte(in))
		body := strings.TrimSuffix(got, "...")
		if q := strconv.Quote(body); len(q)-2 > 64 {
			t.Errorf("clip(%q) = %q: quoted %d bytes, want at most 64", in, got, len(q)-2)
		}
		if !strings.HasPrefix(in, body) || (body == in) != (got == in) {
			t.Errorf("clip(%q) = %q, want a prefix, marked with ... when cut", in, got)
		}
		if utf8.ValidString(in) && !utf8.ValidString(body) {
			t.Errorf("clip(%q) = %q: cut inside a rune", in, got)
		}
		if len(in) <= 64 && utf8.ValidString(in) && !strings.ContainsAny(in, "\"\x00\x01\u2028") && got != in {
			t.Errorf("clip(%q) = %q, want it whole", in, got)
		}
	}
}
