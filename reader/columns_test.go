package reader

import (
	"errors"
	"strings"
	"testing"
)

// TestColumnMapValidate: every problem of a map is reported at once.
func TestColumnMapValidate(t *testing.T) {
	two := uint32(2)
	big := uint32(MaxField)
	ok := ColumnMap{Label: "y", Fields: []ColumnField{{Column: "a"}, {Column: "b", Weights: "w"},
		{Column: "c", Kind: KindBucket, Boundaries: []float64{1, 2}}, {Column: "u", User: true}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good map: %v", err)
	}
	if !ok.Grouped() || ok.FieldOf(1) != 1 {
		t.Fatal("Grouped or FieldOf wrong")
	}
	bad := ColumnMap{Fields: []ColumnField{
		{Column: "a"}, {Column: "a", Field: &two}, {Column: "b"}, {Column: ""},
		{Column: "c", Kind: "onehot"}, {Column: "d", Kind: KindBucket}, {Column: "e", Boundaries: []float64{1}},
		{Column: "f", Kind: KindBucket, Boundaries: []float64{2, 1}}, {Column: "g", Field: &big},
		{Column: "h", Kind: KindDense, Weights: "hw"},
	}}
	err := bad.Validate()
	for _, want := range []string{"no label", `column "a" is already`, "field 2 is fields[1]'s too", "fields[3]: no column",
		`unknown kind "onehot"`, "needs boundaries", "boundaries go with kind bucket", "increasing", "not below", "weights go with kind token"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v\nwant it to say %q", err, want)
		}
	}
	if !errors.Is(err, ErrBadOptions) {
		t.Errorf("%v does not wrap ErrBadOptions", err)
	}
}
