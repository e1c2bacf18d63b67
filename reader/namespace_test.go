package reader

import (
	"slices"
	"strings"
	"testing"
)

// TestDecoderNamespace checks DecoderOptions.Namespace: field 2's tokens
// hash as field 0's, in libFFM, libFM and the group format, while the
// fields stay as written and field 3 keeps its own namespace.
func TestDecoderNamespace(t *testing.T) {
	id := func(f uint32, tok string) uint64 { return FeatureID(f, []byte(tok)) }
	for _, tc := range []struct {
		f     Format
		lines []string
		want  map[uint32][]uint64
	}{
		{LibFFM, []string{"1 0:a:1 2:b:1 2:a:1 3:c:1"},
			map[uint32][]uint64{0: {id(0, "a")}, 2: {id(0, "b"), id(0, "a")}, 3: {id(3, "c")}}},
		{LibFM, []string{"1 a:1 x:1 b:1 c:1"},
			map[uint32][]uint64{0: {id(0, "a")}, 1: {id(1, "x")}, 2: {id(0, "b")}, 3: {id(3, "c")}}},
		{SampleGroup, []string{"group 2", "1 - - 2:b 2:a", "0 0 1 0:a 3:c"},
			map[uint32][]uint64{0: {id(0, "a")}, 2: {id(0, "b"), id(0, "a")}, 3: {id(3, "c")}}},
	} {
		dec, err := NewDecoderWith(tc.f, DecoderOptions{Namespace: []uint32{0, 1, 0}})
		if err != nil {
			t.Fatal(err)
		}
		var g Group
		for _, line := range tc.lines {
			if err := dec.Decode([]byte(line), &g); err != nil {
				t.Fatalf("%v: %q: %v", tc.f, line, err)
			}
		}
		got := map[uint32][]uint64{}
		for _, lv := range g.Levels {
			for i, f := range lv.Fields {
				got[f] = append(got[f], lv.IDs[i])
			}
		}
		for f, want := range tc.want {
			if !slices.Equal(got[f], want) {
				t.Errorf("%v: field %d ids %x, want %x", tc.f, f, got[f], want)
			}
		}
	}
}

func TestDecoderNamespaceRefused(t *testing.T) {
	if _, err := NewDecoderWith(XML, DecoderOptions{Namespace: []uint32{0}}); err == nil || !strings.Contains(err.Error(), "namespaces") {
		t.Errorf("xml with namespaces: err = %v", err)
	}
	if _, err := NewDecoderWith(LibFFM, DecoderOptions{Namespace: []uint32{MaxField}}); err == nil {
		t.Error("a namespace beyond MaxField was accepted")
	}
}
