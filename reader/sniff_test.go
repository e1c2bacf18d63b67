package reader

import (
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
