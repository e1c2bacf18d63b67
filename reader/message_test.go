package reader

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		format  Format
		data    string
		samples int
		levels  int
		err     string
	}{
		{name: "libffm line", format: LibFFM, data: "1 0:5:1 1:7:1\n", samples: 1, levels: 1},
		{name: "libffm no newline", format: LibFFM, data: "0 0:5:1", samples: 1, levels: 1},
		{name: "crlf and comments", format: LibFM, data: "# c\r\n1 3:1 4:2\r\n\r\n", samples: 1, levels: 1},
		{name: "xml line", format: XML, data: "3,4 1:0.5 7:1", samples: 1, levels: 1},
		{name: "group", format: SampleGroup, data: "group 2\n1 - - 0:u1\n0 0 1 5:i1\n0 0 0 5:i2\n", samples: 2, levels: 2},
		{name: "two lines of a line format", format: LibFFM, data: "1 0:5:1\n0 0:6:1\n", err: "second sample group"},
		{name: "empty", format: LibFFM, data: "\n# only a comment\n", err: "no sample"},
		{name: "bad feature", format: LibFFM, data: "1 0:5:zz", err: "line 1"},
		{name: "group without its header", format: SampleGroup, data: "0 0 1 5:i1\n", err: "does not start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := NewDecoder(tc.format)
			if err != nil {
				t.Fatal(err)
			}
			var g Group
			err = DecodeMessage(dec, []byte(tc.data), &g)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrMalformedMessage) || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one wrapping ErrMalformedMessage with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.NumSamples() != tc.samples || len(g.Levels) != tc.levels {
				t.Fatalf("%d samples in %d levels, want %d in %d", g.NumSamples(), len(g.Levels), tc.samples, tc.levels)
			}
		})
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add(uint8(0), []byte("1 0:5:1 1:7:1\n"))
	f.Add(uint8(4), []byte("group 2\n1 - - 0:u1\n0 0 1 5:i1\n"))
	f.Fuzz(func(t *testing.T, fm uint8, data []byte) {
		format := Format(int(fm)%int(Criteo+1-LibFM) + int(LibFM))
		dec, err := NewDecoder(format)
		if err != nil {
			t.Skip()
		}
		var g Group
		if err := DecodeMessage(dec, data, &g); err != nil {
			if !errors.Is(err, ErrMalformedMessage) {
				t.Fatalf("error %v does not wrap ErrMalformedMessage", err)
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("decoded group is invalid: %v", err)
		}
	})
}
