package reader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHoldoutSplitsTheGroups: the held-out groups and the rest are
// complementary (every group in exactly one), about 1 in every is held
// out, and the choice follows the group's position, not the order or
// the split it is read in.
func TestHoldoutSplitsTheGroups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.libffm")
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "%d 0:u%d:1 1:i%d:1\n", i%2, i, i%97)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(splits []FileSplit, every int, held bool) map[Position]bool {
		out := map[Position]bool{}
		for _, sp := range splits {
			src, err := OpenFiles([]FileSplit{sp}, LibFFM, StopOnBad)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := ReadAll(context.Background(), Holdout(src, every, held))
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range gs {
				if HeldOut(g.Pos, every) != held {
					t.Fatalf("%v: held %v, HeldOut says otherwise", g.Pos, held)
				}
				out[g.Pos] = true
			}
		}
		return out
	}
	whole := []FileSplit{{Path: path}}
	cut := []FileSplit{{Path: path, End: 33333}, {Path: path, Start: 33333, End: 70001}, {Path: path, Start: 70001}}
	held, rest := read(whole, 10, true), read(whole, 10, false)
	if len(held)+len(rest) != 5000 || len(held) < 400 || len(held) > 600 {
		t.Fatalf("%d held out and %d not, of 5000", len(held), len(rest))
	}
	for p := range held {
		if rest[p] {
			t.Fatalf("%v held out and not", p)
		}
	}
	if cheld := read(cut, 10, true); len(cheld) != len(held) {
		t.Fatalf("read in 3 splits: %d held out, whole: %d", len(cheld), len(held))
	}
	if none := read(whole, 1, true); len(none) != 0 {
		t.Fatalf("every 1: %d held out, want none", len(none))
	}
}
