package reader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormatOfName(t *testing.T) {
	for name, want := range map[string]Format{"a/train.libfm": LibFM, "x.LIBSVM": LibFM, "t.libffm": LibFFM,
		"hdfs://nn:9000/d/*.libffm": LibFFM, "u.group": SampleGroup} {
		if got, ok := FormatOfName(name); !ok || got != want {
			t.Errorf("FormatOfName(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"train.txt", "data/", "train", "x.tsv"} {
		if got, ok := FormatOfName(name); ok {
			t.Errorf("FormatOfName(%q) = %v, want none", name, got)
		}
	}
}

func TestSniffFormat(t *testing.T) {
	criteo := "1" + strings.Repeat("\t5", 13) + strings.Repeat("\tab12", 26)
	for line, want := range map[string]Format{"1 0:3:1 1:7:0.5": LibFFM, "0 3:1 5:0.5\n": LibFM, "group 2": SampleGroup, criteo: Criteo} {
		if got, ok := SniffFormat([]byte(line)); !ok || got != want {
			t.Errorf("SniffFormat(%q) = %v, %v; want %v", line, got, ok, want)
		}
	}
	for _, line := range []string{"", "# comment", "yes no", "1 a:b:c:d"} {
		if got, ok := SniffFormat([]byte(line)); ok {
			t.Errorf("SniffFormat(%q) = %v, want none", line, got)
		}
	}
	p := filepath.Join(t.TempDir(), "x.txt")
	if err := os.WriteFile(p, []byte("# libfm\n\n1 3:1 4:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, ok := SniffFileFS(nil, p); !ok || got != LibFM {
		t.Errorf("SniffFileFS = %v, %v; want libfm", got, ok)
	}
}

// criteoTSV is a Criteo TSV line (see criteoLine); lastEmpty leaves the
// last categorical column empty (a trailing tab), as Criteo data often does.
func criteoTSV(lastEmpty bool) string {
	ints := strings.Split(strings.Repeat("5,", 12)+"5", ",")
	cats := strings.Split(strings.Repeat("68fd1e64,", 25)+"c3dc6cef", ",")
	if lastEmpty {
		cats = cats[:25]
	}
	return criteoLine("1", ints, cats)
}

// TestSniffCriteoEmptyLastColumn: a Criteo file whose first line ends in an
// empty column, read as libffm (the default for train.txt) or by its
// .libffm extension, fails at line 1, and sniffing the file the error names
// says criteo, which job/ctrtrain's formatHint turns into "give -format
// criteo". Counting columns after trimming the trailing tab found 39
// columns and no hint.
func TestSniffCriteoEmptyLastColumn(t *testing.T) {
	for _, line := range []string{criteoTSV(true), criteoTSV(true) + "\r\n", criteoTSV(false),
		"0" + strings.Repeat("\t", 39), "0\t\t3" + strings.Repeat("\t", 37)} {
		if got, ok := SniffFormat([]byte(line)); !ok || got != Criteo {
			t.Errorf("SniffFormat(%q) = %v, %v; want criteo", line, got, ok)
		}
	}
	// Not Criteo: 39 columns, 41 columns, a label other than 0/1, libFFM
	// features separated by tabs.
	for _, line := range []string{strings.TrimSuffix(criteoTSV(true), "\t"), criteoTSV(true) + "\t",
		"2" + criteoTSV(true)[1:], "1" + strings.Repeat("\t0:a:1", 39)} {
		if got, ok := SniffFormat([]byte(line)); ok && got == Criteo {
			t.Errorf("SniffFormat(%q) = criteo, want another format or none", line)
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"train.txt", "train.libffm"} {
		p := filepath.Join(dir, name)
		data := criteoTSV(true) + "\n" + criteoTSV(false) + "\n"
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := OpenFiles([]FileSplit{{Path: p}}, LibFFM, StopOnBad)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadAll(context.Background(), src)
		var le *LineError
		if !errors.As(err, &le) || le.Source != p || le.Line != 1 {
			t.Fatalf("%s read as libffm: %v, want a line error at %s:1", name, err, p)
		}
		f, ok := SniffFileFS(nil, le.Source)
		if !ok || f != Criteo {
			t.Fatalf("%s: SniffFileFS = %v, %v; want criteo, so that the error hints -format criteo", name, f, ok)
		}
	}
}
