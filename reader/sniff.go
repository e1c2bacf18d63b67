package reader

import (
	"bufio"
	"bytes"
	"io"
	"path"
	"strings"
	"unicode/utf8"
)

// FormatOfName returns the format a file name's extension names: .libfm,
// .libsvm and .svm name LibFM, .libffm and .ffm LibFFM, .group
// SampleGroup, .parquet Parquet; false for any other (the name of a directory, a glob
// without an extension, .txt, .tsv, ...).
func FormatOfName(name string) (Format, bool) {
	switch strings.ToLower(path.Ext(name)) {
	case ".libfm", ".libsvm", ".svm":
		return LibFM, true
	case ".libffm", ".ffm":
		return LibFFM, true
	case ".group":
		return SampleGroup, true
	case ".parquet":
		return Parquet, true
	}
	return 0, false
}

// SniffFormat guesses the text format of one line of a file: group for a
// "group L" header; criteo for a line of exactly 40 tab-separated columns,
// empty ones included (only a trailing "\n" or "\r\n" is dropped before
// counting, so an empty last column still counts), whose first column is
// the label "0" or "1" and which holds no ':' (as libFFM features do); else
// the first of libffm and libfm the line reads as; false when none fits (a
// blank or comment line too). It is a hint for an error message, not a
// check: a label without features reads as libffm.
func SniffFormat(line []byte) (Format, bool) {
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("group ")) {
		return SampleGroup, true
	}
	if looksCriteo(line) {
		return Criteo, true
	}
	for _, f := range []Format{LibFFM, LibFM} {
		if _, _, err := NewParser(f).ParseLine(line, nil); err == nil {
			return f, true
		}
	}
	return 0, false
}

// looksCriteo reports whether line, with its line ending but nothing else
// stripped, has the Criteo layout: criteoColumns tab-separated columns
// (empty columns count: Criteo data leaves missing values empty, the last
// one too), the first "0" or "1", and no ':'.
func looksCriteo(line []byte) bool {
	line = trimCR(bytes.TrimSuffix(line, []byte("\n")))
	if bytes.Count(line, []byte{'\t'}) != criteoColumns-1 || bytes.IndexByte(line, ':') >= 0 {
		return false
	}
	label, _, _ := bytes.Cut(line, []byte{'\t'})
	return string(label) == "0" || string(label) == "1"
}

// SniffFileFS guesses the format of file name of fsys (nil: the local
// file system) from its first line that holds a sample, among the first
// 64 KiB (see SniffFormat).
func SniffFileFS(fsys FS, name string) (Format, bool) {
	if fsys == nil {
		fsys = LocalFS{}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		return SniffFormat(sc.Bytes())
	}
	return 0, false
}

// binaryMagics are the starts of binary files a text format is often given
// by mistake, with why such input cannot be read.
var binaryMagics = []struct{ magic, why string }{
	{"PAR1", "is a Parquet file (it starts with PAR1): give format parquet and map its columns (train.columns)"},
	{"\x1f\x8b", "is gzip-compressed (it starts with the bytes 1f 8b): compressed input is not supported, decompress it first (gunzip)"},
}

// magicLen is how many leading bytes binaryInput looks at.
const magicLen = 4

// binaryInput returns why input whose first bytes are head cannot be read
// as text, "the file is a Parquet file ..." with what = "the file", or ""
// when head starts none of binaryMagics.
func binaryInput(what string, head []byte) string {
	for _, m := range binaryMagics {
		if bytes.HasPrefix(head, []byte(m.magic)) {
			return what + " " + m.why
		}
	}
	return ""
}

// binaryNote is appended to the reason a line was rejected when the line is
// not text (see isBinary).
const binaryNote = "; the line is not text (it holds control bytes or invalid UTF-8): is the input binary or compressed?"

// withBinaryNote returns reason, why line was rejected, with binaryNote
// appended when line is not text. Reasons quote input bytes with %q (see
// clip), so they are printable either way; the note says why they look odd.
func withBinaryNote(reason string, line []byte) string {
	if isBinary(line) {
		return reason + binaryNote
	}
	return reason
}

// isBinary reports whether line holds a control byte other than tab and
// carriage return (a text file with old Mac line endings is one long line
// holding them), DEL, or is not valid UTF-8.
func isBinary(line []byte) bool {
	for _, c := range line {
		if c < 0x20 && c != '\t' && c != '\r' || c == 0x7f {
			return true
		}
	}
	return !utf8.Valid(line)
}
