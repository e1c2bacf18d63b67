package snapshot

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

// MemStore is a Store in memory, under the same contract as DirStore
// (a file appears whole on Commit; names are slash-separated paths, as
// fs.ValidPath takes them), with no durability: for tests and fuzz
// targets, where a DirStore's fsyncs would be most of the work. Safe for
// concurrent use.
type MemStore struct {
	mu    sync.Mutex
	files map[string][]byte // guarded by mu
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{files: map[string][]byte{}} }

// Create starts writing the file name.
func (s *MemStore) Create(name string) (Writer, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, ErrBadName
	}
	return &memWriter{s: s, name: name}, nil
}

// Open opens the file name.
func (s *MemStore) Open(name string) (Reader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.files[name]
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return memReader{bytes.NewReader(b)}, nil
}

// List returns the entries of directory dir ("" for the root), sorted by
// name.
func (s *MemStore) List(dir string) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]Entry{}
	for name, b := range s.files {
		rest, ok := strings.CutPrefix(name, dir+"/")
		if dir == "" {
			rest, ok = name, true
		}
		if ok {
			first, _, sub := strings.Cut(rest, "/")
			seen[first] = Entry{Name: first, Size: int64(len(b)), Dir: sub}
		}
	}
	out := make([]Entry, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Remove removes the file or the directory tree name.
func (s *MemStore) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.files {
		if k == name || strings.HasPrefix(k, name+"/") {
			delete(s.files, k)
		}
	}
	return nil
}

// String returns "memory".
func (*MemStore) String() string { return "memory" }

// Close does nothing.
func (*MemStore) Close() error { return nil }

type memWriter struct {
	s    *MemStore
	name string
	buf  bytes.Buffer
}

func (w *memWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *memWriter) Abort() error                { return nil }
func (w *memWriter) Commit() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.files[w.name] = slices.Clone(w.buf.Bytes())
	return nil
}

type memReader struct{ *bytes.Reader }

func (memReader) Close() error { return nil }
