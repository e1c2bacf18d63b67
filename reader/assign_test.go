package reader

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestAssignExamples(t *testing.T) {
	files := []FileInfo{{"d", 10}, {"a", 100}, {"c", 50}, {"b", 60}}
	for _, tc := range []struct {
		name       string
		files      []FileInfo
		workers    int
		splitBytes int64
		splittable bool
		want       [][]FileSplit
	}{
		{"whole files, largest first", files, 2, 0, true,
			[][]FileSplit{{{"a", 0, 0}, {"d", 0, 0}}, {{"b", 0, 0}, {"c", 0, 0}}}},
		{"one worker", files, 1, 1, true,
			[][]FileSplit{{{"a", 0, 0}, {"b", 0, 0}, {"c", 0, 0}, {"d", 0, 0}}}},
		{"a large file is cut", files, 3, 20, true,
			// share 73: a is cut into ranges of max(20, 100/3) bytes.
			[][]FileSplit{{{"b", 0, 0}, {"d", 0, 0}}, {{"a", 67, 0}, {"c", 0, 0}}, {{"a", 0, 34}, {"a", 34, 67}}}},
		{"split bytes larger than a share: a file larger than a share stays whole", files, 3, 200, true,
			[][]FileSplit{{{"a", 0, 0}}, {{"b", 0, 0}}, {{"c", 0, 0}, {"d", 0, 0}}}},
		{"header formats are not cut", files, 3, 20, false,
			[][]FileSplit{{{"a", 0, 0}}, {{"b", 0, 0}}, {{"c", 0, 0}, {"d", 0, 0}}}},
		{"fewer files than workers", []FileInfo{{"x", 1000}}, 3, 400, true,
			[][]FileSplit{{{"x", 0, 334}}, {{"x", 334, 667}}, {{"x", 667, 0}}}},
		{"split bytes bound ranges from below", []FileInfo{{"x", 1000}}, 2, 600, true,
			// ranges of max(600, 500) bytes: 2, so that both workers have one
			[][]FileSplit{{{"x", 0, 500}}, {{"x", 500, 0}}}},
		{"one file smaller than split bytes is cut for every worker", []FileInfo{{"x", 27_900_000}}, 2, 64 << 20, true,
			[][]FileSplit{{{"x", 0, 13_950_000}}, {{"x", 13_950_000, 0}}}},
		{"a small file beside a large one stays whole (the fault test's gate)", []FileInfo{{"big", 1000}, {"gate", 10}}, 3, 500, true,
			[][]FileSplit{{{"big", 0, 500}}, {{"big", 500, 0}}, {{"gate", 0, 0}}}},
		{"a file of fewer bytes than workers", []FileInfo{{"x", 2}}, 3, 100, true,
			[][]FileSplit{{{"x", 0, 1}}, {{"x", 1, 0}}, {}}},
		{"whole files when split bytes is 0", []FileInfo{{"x", 1000}}, 2, 0, true,
			[][]FileSplit{{{"x", 0, 0}}, {}}},
		{"no files", nil, 2, 100, true, [][]FileSplit{{}, {}}},
	} {
		got, err := Assign(tc.files, tc.workers, tc.splitBytes, tc.splittable)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAssignProperties checks on random inputs that the pieces of each file
// tile it exactly, that each worker's list is sorted, that the result does
// not depend on the order of the files, that a cut file's pieces number a
// multiple of the workers (or one per byte) and are no larger than split
// bytes, that every worker gets a share when the data
// allows it, and that no worker gets much more than its share.
func TestAssignProperties(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 3))
		var files []FileInfo
		var total, largest int64
		for i := range r.IntN(8) {
			size := r.Int64N(5000)
			if r.IntN(5) == 0 {
				size = r.Int64N(3)
			}
			files = append(files, FileInfo{Path: fmt.Sprintf("f%02d", i), Size: size})
			total += size
			largest = max(largest, size)
		}
		workers := 1 + r.IntN(7)
		splitBytes := []int64{0, 1, 100, 1000, 1 << 20}[r.IntN(5)]
		splittable := r.IntN(4) != 0
		name := fmt.Sprintf("seed %d: Assign(%v, %d, %d, %v)", seed, files, workers, splitBytes, splittable)
		got, err := Assign(files, workers, splitBytes, splittable)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != workers {
			t.Fatalf("%s: %d lists", name, len(got))
		}
		shuffled := slices.Clone(files)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again, _ := Assign(shuffled, workers, splitBytes, splittable); !reflect.DeepEqual(again, got) {
			t.Fatalf("%s: not deterministic: %v then %v", name, got, again)
		}
		byFile := map[string][]FileSplit{}
		var maxLoad int64
		for _, splits := range got {
			if splits == nil {
				t.Fatalf("%s: a nil list", name)
			}
			if !slices.IsSortedFunc(splits, func(a, b FileSplit) int {
				return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Start, b.Start))
			}) {
				t.Fatalf("%s: unsorted %v", name, splits)
			}
			var load int64
			for _, sp := range splits {
				byFile[sp.Path] = append(byFile[sp.Path], sp)
				end := sp.End
				if end <= 0 {
					end = sizeOf(files, sp.Path)
				}
				load += end - sp.Start
			}
			maxLoad = max(maxLoad, load)
		}
		for _, f := range files {
			checkPieces(t, name, f, byFile[f.Path], workers, splitBytes, splittable)
		}
		// Every worker has a share whenever the data allows it.
		if len(files) >= workers || splittable && splitBytes > 0 && largest >= int64(workers) {
			for i, splits := range got {
				if len(splits) == 0 {
					t.Fatalf("%s: worker %d has no share: %v", name, i, got)
				}
			}
		}
		// Largest first to the least loaded: the maximum load exceeds the
		// average by at most the largest piece.
		if bound := total/int64(workers) + largest + 1; maxLoad > bound {
			t.Fatalf("%s: a worker has %d bytes, bound %d", name, maxLoad, bound)
		}
	}
}

// checkPieces checks that the pieces of file f tile it, that only a
// splittable file is cut (never with splitBytes 0), and into at most
// 2*workers-1 pieces (at most workers of max(splitBytes, a w-th), then
// one more per worker that had no piece) of at least one byte.
func checkPieces(t *testing.T, name string, f FileInfo, pieces []FileSplit, workers int, splitBytes int64, splittable bool) {
	t.Helper()
	slices.SortFunc(pieces, func(a, b FileSplit) int { return cmp.Compare(a.Start, b.Start) })
	if len(pieces) == 0 || pieces[0].Start != 0 || pieces[len(pieces)-1].End != 0 {
		t.Fatalf("%s: %s has pieces %v", name, f.Path, pieces)
	}
	if n := len(pieces); n > 1 && (!splittable || splitBytes == 0 || n > 2*workers-1) {
		t.Fatalf("%s: %s cut into %v", name, f.Path, pieces)
	}
	for i := 1; i < len(pieces); i++ {
		if pieces[i-1].End != pieces[i].Start || pieces[i].Start <= pieces[i-1].Start {
			t.Fatalf("%s: %s has pieces %v", name, f.Path, pieces)
		}
	}
}

func sizeOf(files []FileInfo, path string) int64 {
	for _, f := range files {
		if f.Path == path {
			return f.Size
		}
	}
	return -1
}

func TestAssignErrors(t *testing.T) {
	for _, tc := range []struct {
		files      []FileInfo
		workers    int
		splitBytes int64
		want       string
	}{
		{nil, 0, 0, "0 workers"},
		{nil, 1, -1, "split bytes -1"},
		{[]FileInfo{{"a", 1}, {"a", 2}}, 1, 0, "a appears twice"},
		{[]FileInfo{{"", 1}}, 1, 0, "without a path"},
		{[]FileInfo{{"a", -5}}, 1, 0, "size -5"},
	} {
		if _, err := Assign(tc.files, tc.workers, tc.splitBytes, true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Assign(%v, %d, %d): %v, want %q", tc.files, tc.workers, tc.splitBytes, err, tc.want)
		}
	}
}

func TestStatFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := StatFiles([]string{b, a})
	if err != nil || !slices.Equal(got, []FileInfo{{b, 0}, {a, 5}}) {
		t.Fatalf("StatFiles = %v, %v", got, err)
	}
	if _, err := StatFiles([]string{a, dir}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := StatFiles([]string{filepath.Join(dir, "nope")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
