package reader

import (
	"bufio"
	"bytes"
	"io"
	"path"
	"strings"
)

// FormatOfName returns the format a file name's extension names: .libfm,
// .libsvm and .svm name LibFM, .libffm and .ffm LibFFM, .group
// SampleGroup; false for any other (the name of a directory, a glob
// without an extension, .txt, .tsv, ...).
func FormatOfName(name string) (Format, bool) {
	switch strings.ToLower(path.Ext(name)) {
	case ".libfm", ".libsvm", ".svm":
		return LibFM, true
	case ".libffm", ".ffm":
		return LibFFM, true
	case ".group":
		return SampleGroup, true
	}
	return 0, false
}

// SniffFormat guesses the text format of one line of a file: group for a
// "group L" header, criteo for 40 tab-separated columns, else the first of
// libffm and libfm the line reads as; false when none fits (a blank or
// comment line too). It is a hint for an error message, not a check: a
// label without features reads as libffm.
func SniffFormat(line []byte) (Format, bool) {
	t := bytes.TrimSpace(line)
	switch {
	case bytes.HasPrefix(t, []byte("group ")):
		return SampleGroup, true
	case bytes.Count(t, []byte{'\t'}) == 39:
		return Criteo, true
	}
	for _, f := range []Format{LibFFM, LibFM} {
		if _, _, err := NewParser(f).ParseLine(line, nil); err == nil {
			return f, true
		}
	}
	return 0, false
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
