package snapshot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/xdlgo/xps/snapshot/hdfsconn"
)

// ErrBadName is wrapped by the errors about a name that is not a valid
// relative slash-separated path.
var ErrBadName = errors.New("snapshot: bad name")

// Store is a tree of files under one root.
type Store interface {
	// Create starts writing the file name, creating its directories. The
	// file appears only on Commit.
	Create(name string) (Writer, error)
	// Open opens the file name for reading.
	Open(name string) (Reader, error)
	// List returns the entries of directory dir ("" for the root), sorted
	// by name.
	List(dir string) ([]Entry, error)
	// Remove removes the file or the directory tree name; a name that does
	// not exist is not an error.
	Remove(name string) error
	// String describes the store's root (a directory or a URI).
	String() string
	// Close releases the store's connections.
	Close() error
}

// Writer writes a new file of a Store.
type Writer interface {
	io.Writer
	// Commit makes the file visible under its name, whole; after an error
	// the file does not exist.
	Commit() error
	// Abort discards the file. It may be called after Commit, as a no-op,
	// so that `defer w.Abort()` is the idiom.
	Abort() error
}

// Reader reads a file of a Store.
type Reader interface {
	io.Reader
	io.ReaderAt
	io.Closer
	// Size is the file's length in bytes.
	Size() int64
}

// Entry is a file or a directory in a listing.
type Entry struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Dir  bool   `json:"dir,omitempty"`
}

// OpenStore returns the store at location: HDFSStore for an
// hdfs://HOST:PORT/PATH URI (as user, hdfsconn.DefaultUser when empty),
// else DirStore for a local directory (created if missing).
func OpenStore(location, user string) (Store, error) {
	if hdfsconn.IsURI(location) {
		return OpenHDFS(location, user)
	}
	return OpenDir(location)
}

// checkName validates a file name (dir false) or a directory name that
// may be "" for the root (dir true).
func checkName(name string, dir bool) error {
	if (dir && name == "") || fs.ValidPath(name) && name != "." {
		return nil
	}
	return fmt.Errorf("%w: %q (want a relative slash-separated path such as \"a/b\")", ErrBadName, name)
}

// hiddenTemp reports whether a directory entry is an unfinished writer's
// temporary file.
func hiddenTemp(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "._COPYING_")
}

// DirStore is a Store in a local directory.
type DirStore struct{ root string }

var _ Store = (*DirStore)(nil)

// OpenDir returns the store rooted at directory root, creating it.
func OpenDir(root string) (*DirStore, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: empty store directory", ErrBadName)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("snapshot: store %s: %w", root, err)
	}
	return &DirStore{root: root}, nil
}

func (d *DirStore) path(name string) string { return filepath.Join(d.root, filepath.FromSlash(name)) }

// String implements Store.
func (d *DirStore) String() string { return d.root }

// Close implements Store.
func (d *DirStore) Close() error { return nil }

// Create implements Store: a temporary file in the same directory, synced
// and renamed on Commit, the directory synced after.
func (d *DirStore) Create(name string) (Writer, error) {
	if err := checkName(name, false); err != nil {
		return nil, err
	}
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("snapshot: create %s: %w", name, err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("snapshot: create %s: %w", name, err)
	}
	return &tempWriter{w: f, name: name,
		commit: func() error {
			err := f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(f.Name(), p)
			}
			if err == nil { // make the rename durable
				err = syncDir(filepath.Dir(p))
			}
			return err
		},
		discard: func() error {
			f.Close()
			return os.Remove(f.Name())
		}}, nil
}

// tempWriter is a Writer over a temporary file: commit makes it the real
// one (rename), discard removes it. Both stores use it.
type tempWriter struct {
	w       io.Writer
	name    string
	commit  func() error
	discard func() error
	done    bool
}

func (w *tempWriter) Write(b []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("snapshot: write %s: %w", w.name, fs.ErrClosed)
	}
	n, err := w.w.Write(b)
	if err != nil {
		err = fmt.Errorf("snapshot: write %s: %w", w.name, err)
	}
	return n, err
}

func (w *tempWriter) Commit() error {
	if w.done {
		return fmt.Errorf("snapshot: commit %s: %w", w.name, fs.ErrClosed)
	}
	w.done = true
	if err := w.commit(); err != nil {
		w.discard()
		return fmt.Errorf("snapshot: commit %s: %w", w.name, err)
	}
	return nil
}

func (w *tempWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	if err := w.discard(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot: abort %s: %w", w.name, err)
	}
	return nil
}

// syncDir fsyncs a directory, so that a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Open implements Store.
func (d *DirStore) Open(name string) (Reader, error) {
	if err := checkName(name, false); err != nil {
		return nil, err
	}
	f, err := os.Open(d.path(name))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", name)
		}
		return nil, fmt.Errorf("snapshot: open: %w", err)
	}
	return &dirReader{File: f, size: fi.Size()}, nil
}

type dirReader struct {
	*os.File
	size int64
}

func (r *dirReader) Size() int64 { return r.size }

// List implements Store.
func (d *DirStore) List(dir string) ([]Entry, error) {
	if err := checkName(dir, true); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(d.path(dir))
	if err != nil {
		return nil, fmt.Errorf("snapshot: list: %w", err)
	}
	out := make([]Entry, 0, len(ents))
	for _, e := range ents {
		if hiddenTemp(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot: list: %w", err)
		}
		out = append(out, Entry{Name: e.Name(), Size: fi.Size(), Dir: fi.IsDir()})
	}
	return out, nil
}

// Remove implements Store.
func (d *DirStore) Remove(name string) error {
	if err := checkName(name, true); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: Remove of the store's root", ErrBadName)
	}
	if err := os.RemoveAll(d.path(name)); err != nil {
		return fmt.Errorf("snapshot: remove: %w", err)
	}
	return nil
}
