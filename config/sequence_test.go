package config

import (
	"slices"
	"strings"
	"testing"
)

func TestSequenceDefaults(t *testing.T) {
	c, err := Parse([]byte("model: {kind: dien, sequence: {history: [8, 9], target: [5, 7], negatives: [10, 11]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Model.Sequence
	if s.MaxLen != 50 || !slices.Equal(s.Attention, []int{80, 40}) || *s.AuxWeight != 1 {
		t.Errorf("defaults: max_len %d, attention %v, aux_weight %v", s.MaxLen, s.Attention, *s.AuxWeight)
	}
	ns := s.Namespace(13)
	want := []uint32{0, 1, 2, 3, 4, 5, 6, 7, 5, 7, 5, 7, 12}
	if !slices.Equal(ns, want) {
		t.Errorf("Namespace = %v, want %v", ns, want)
	}
	c, err = Parse([]byte("model: {kind: din, sequence: {history: [8], target: [5], negatives: [10]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *c.Model.Sequence.AuxWeight != 0 {
		t.Errorf("din's aux_weight defaults to %v, want 0", *c.Model.Sequence.AuxWeight)
	}
	if (&SequenceConfig{}).Namespace(5) != nil {
		t.Error("no history: Namespace is not nil")
	}
}

func TestSequenceRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"model: {kind: din}\n", "needs a behaviour history"},
		{"model: {kind: dien, sequence: {history: [1, 2], target: [3]}}\n", "2 history fields"},
		{"model: {sequence: {target: [3]}}\n", "without history"},
		{"model: {kind: din, sequence: {history: [1], target: [1]}}\n", "named twice"},
		{"model: {kind: din, sequence: {history: [1], target: [2], max_len: 5000}}\n", "max_len"},
		{"model: {kind: din, sequence: {history: [1], target: [2], attention: [0]}}\n", "attention[0]"},
		{"model: {kind: dien, sequence: {history: [1], target: [2], aux_weight: 1}}\n", "needs model.sequence.negatives"},
		{"model: {kind: din, sequence: {history: [1], target: [2], negatives: [3], aux_weight: 1}}\n", "DIEN's"},
		{"model: {kind: din, wide: true, sequence: {history: [1], target: [2]}}\n", "wide part over sequence"},
		{"model: {kind: dien, sequence: {history: [1], target: [2], negatives: [3, 4]}}\n", "aligned"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
