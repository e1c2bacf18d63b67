package reader

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
)

// FileInfo is a file and its size in bytes.
type FileInfo struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// StatFiles returns the sizes of the local files at paths: StatFilesFS on
// LocalFS.
func StatFiles(paths []string) ([]FileInfo, error) { return StatFilesFS(nil, paths) }

// StatFilesFS returns the sizes of the files of fsys (LocalFS when nil) at
// paths, in the same order. A path that cannot be stat'ed or is not a
// regular file is an error.
func StatFilesFS(fsys FS, paths []string) ([]FileInfo, error) {
	fsys = orLocal(fsys)
	out := make([]FileInfo, 0, len(paths))
	for _, p := range paths {
		fi, err := fsys.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reader: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("reader: %s is not a regular file", p)
		}
		out = append(out, FileInfo{Path: p, Size: fi.Size()})
	}
	return out, nil
}

// Assign divides files among workers so that every sample is read by exactly
// one worker, when each worker reads its splits with a FileSource.
//
// Files are first cut into pieces (see cuts): when splittable is true,
// splitBytes > 0 and workers > 1, a file of size S larger than the
// per-worker share (total bytes / workers), or any file when there are
// fewer files than workers, is cut into n = ceil(S / max(splitBytes,
// ceil(S/workers))) byte ranges of nearly equal size (at most workers of
// them): splitBytes is the smallest range worth cutting. Then, while there
// are fewer pieces of non-empty files than workers, the file with the
// largest pieces is cut into one more, so that every worker gets a share
// whenever the data allows (one 28 MB file and 2 workers: 14 MB each).
// Other files stay whole ({Path, 0, 0}). Ranges need not fall on lines: the split rules of
// FileSource make them exact. The last range of a file has End 0 (to the
// end of the file), so bytes appended after StatFiles are not lost. With
// splittable false (formats with a header, such as XMLRepository) files are
// never cut.
//
// The pieces are then dealt out largest first, each to the worker with the
// fewest bytes so far; ties between pieces are broken by path then start,
// ties between workers by the lower index. The result has one slice per
// worker, sorted by path then Start. Every worker gets at least one piece
// when there are at least as many files as workers, or when files are cut
// and one holds at least workers bytes. Otherwise workers may get no splits
// (an empty slice): fewer files than workers that are never cut (splittable
// false, splitBytes 0), or less data than one byte per worker; that is not
// an error. The result depends only on the arguments.
//
// Errors: workers < 1, splitBytes < 0, an empty or repeated path, a negative
// size.
func Assign(files []FileInfo, workers int, splitBytes int64, splittable bool) ([][]FileSplit, error) {
	if workers < 1 {
		return nil, fmt.Errorf("reader: assign: %d workers", workers)
	}
	if splitBytes < 0 {
		return nil, fmt.Errorf("reader: assign: split bytes %d < 0", splitBytes)
	}
	seen := make(map[string]bool, len(files))
	var total int64
	for _, f := range files {
		switch {
		case f.Path == "":
			return nil, fmt.Errorf("reader: assign: a file without a path")
		case seen[f.Path]:
			return nil, fmt.Errorf("reader: assign: %s appears twice", f.Path)
		case f.Size < 0:
			return nil, fmt.Errorf("reader: assign: %s has size %d", f.Path, f.Size)
		}
		seen[f.Path] = true
		total += f.Size
	}
	share := total / int64(workers)
	w := int64(workers)

	type piece struct {
		split FileSplit
		size  int64
	}
	ns := cuts(files, w, share, splitBytes, splittable)
	var pieces []piece
	for i, f := range files {
		n := ns[i]
		if n <= 1 {
			pieces = append(pieces, piece{FileSplit{Path: f.Path}, f.Size})
			continue
		}
		q, r := f.Size/n, f.Size%n
		for i := int64(0); i < n; i++ {
			lo := i*q + min(i, r)
			hi := lo + q
			if i < r {
				hi++
			}
			end := hi
			if i == n-1 {
				end = 0
			}
			pieces = append(pieces, piece{FileSplit{Path: f.Path, Start: lo, End: end}, hi - lo})
		}
	}
	slices.SortFunc(pieces, func(a, b piece) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.split.Path, b.split.Path),
			cmp.Compare(a.split.Start, b.split.Start))
	})

	out := make([][]FileSplit, workers)
	for i := range out {
		out[i] = []FileSplit{}
	}
	h := make(workerHeap, workers)
	for i := range h {
		h[i] = workerLoad{index: i}
	}
	for _, p := range pieces {
		out[h[0].index] = append(out[h[0].index], p.split)
		h[0].bytes += p.size
		heap.Fix(&h, 0)
	}
	for _, splits := range out {
		slices.SortFunc(splits, func(a, b FileSplit) int {
			return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Start, b.Start))
		})
	}
	return out, nil
}

// cuts returns the number of ranges each file is cut into (1: whole).
// When files may be cut (splittable, splitBytes > 0, workers > 1), a file
// larger than a share (or any file, with fewer files than workers) is cut
// into ranges of max(splitBytes, a w-th of it), at most w of them; then,
// while there are fewer pieces (of files not empty) than workers, the file
// with the largest pieces is cut into one more (a range holds at least one
// byte), so that every worker gets a share whenever the data allows.
func cuts(files []FileInfo, w, share, splitBytes int64, splittable bool) []int64 {
	ns := make([]int64, len(files))
	var pieces int64
	for i, f := range files {
		ns[i] = 1
		if splittable && splitBytes > 0 && w > 1 && (int64(len(files)) < w || f.Size > share) {
			size := max(splitBytes, (f.Size+w-1)/w)
			ns[i] = max(1, (f.Size+size-1)/size)
		}
		if f.Size > 0 { // an empty file is no one's share
			pieces += ns[i]
		}
	}
	for splittable && splitBytes > 0 && pieces < w {
		best := -1
		for i, f := range files { // the largest pieces that can still be cut
			if f.Size > ns[i] && (best < 0 || f.Size*ns[best] > files[best].Size*ns[i]) {
				best = i
			}
		}
		if best < 0 {
			break // less than a byte per worker
		}
		ns[best]++
		pieces++
	}
	return ns
}

// workerLoad is a worker's index and the bytes assigned to it.
type workerLoad struct {
	index int
	bytes int64
}

// workerHeap orders workers by bytes, then index.
type workerHeap []workerLoad

func (h workerHeap) Len() int { return len(h) }
func (h workerHeap) Less(i, j int) bool {
	return h[i].bytes < h[j].bytes || (h[i].bytes == h[j].bytes && h[i].index < h[j].index)
}
func (h workerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *workerHeap) Push(x any)   { *h = append(*h, x.(workerLoad)) }
func (h *workerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
