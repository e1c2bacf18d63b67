package snapshot

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/colinmarc/hdfs/v2"

	"github.com/xdlgo/xps/snapshot/hdfsconn"
)

// HDFSStore is a Store in a directory on HDFS.
type HDFSStore struct {
	c     *hdfs.Client
	addr  string
	root  string
	chunk int
}

var _ Store = (*HDFSStore)(nil)

// OpenHDFS returns the store rooted at uri (hdfs://HOST:PORT/PATH),
// connecting as user (hdfsconn.DefaultUser when empty) and creating the
// root directory.
func OpenHDFS(uri, user string) (*HDFSStore, error) {
	u, err := hdfsconn.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	c, chunk, err := hdfsconn.Dial(u.Addr, user)
	if err != nil {
		return nil, err
	}
	if err := c.MkdirAll(u.Path, 0o755); err != nil {
		c.Close()
		return nil, fmt.Errorf("snapshot: store %s: %w", uri, err)
	}
	return &HDFSStore{c: c, addr: u.Addr, root: u.Path, chunk: chunk}, nil
}

func (h *HDFSStore) path(name string) string { return path.Join(h.root, name) }

// String implements Store.
func (h *HDFSStore) String() string { return hdfsconn.FormatURI(h.addr, h.root) }

// Close implements Store.
func (h *HDFSStore) Close() error { return h.c.Close() }

// Create implements Store: a temporary NAME.<random>._COPYING_ file (the
// suffix Hadoop's own tools use) completed and renamed over NAME on Commit.
func (h *HDFSStore) Create(name string) (Writer, error) {
	if err := checkName(name, false); err != nil {
		return nil, err
	}
	p := h.path(name)
	if err := h.c.MkdirAll(path.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("snapshot: create %s: %w", name, err)
	}
	var r [6]byte
	rand.Read(r[:])
	tmp := p + "." + hex.EncodeToString(r[:]) + "._COPYING_"
	w, err := h.c.Create(tmp)
	if err != nil {
		return nil, fmt.Errorf("snapshot: create %s: %w", name, err)
	}
	return &tempWriter{w: w, name: name,
		commit: func() error {
			if err := w.Close(); err != nil { // completes the file: every block acknowledged
				return err
			}
			return h.c.Rename(tmp, p)
		},
		discard: func() error {
			w.Close()
			return h.c.Remove(tmp)
		}}, nil
}

// Open implements Store.
func (h *HDFSStore) Open(name string) (Reader, error) {
	if err := checkName(name, false); err != nil {
		return nil, err
	}
	f, err := h.c.Open(h.path(name))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if f.Stat().IsDir() {
		f.Close()
		return nil, fmt.Errorf("snapshot: open: %s is not a regular file", name)
	}
	return &hdfsReader{f: f, v: hdfsconn.VerifiedReader{R: f, Chunk: h.chunk}}, nil
}

// hdfsReader serialises its reads: the client's file has one offset, which
// ReadAt moves.
type hdfsReader struct {
	mu  sync.Mutex
	f   *hdfs.FileReader
	v   hdfsconn.VerifiedReader
	off int64 // offset of Read
}

func (r *hdfsReader) Size() int64 { return r.f.Stat().Size() }

func (r *hdfsReader) Read(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Seek(r.off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := r.v.Read(b)
	r.off += int64(n)
	return n, err
}

func (r *hdfsReader) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("snapshot: ReadAt at negative offset %d", off)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if off >= r.f.Stat().Size() {
		if len(b) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	if _, err := r.f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.ReadFull(&r.v, b)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}

func (r *hdfsReader) Close() error { return r.f.Close() }

// List implements Store.
func (h *HDFSStore) List(dir string) ([]Entry, error) {
	if err := checkName(dir, true); err != nil {
		return nil, err
	}
	p := h.path(dir)
	fi, err := h.c.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("snapshot: list: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("snapshot: list: %s is not a directory", dir)
	}
	ents, err := h.c.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("snapshot: list: %w", err)
	}
	out := make([]Entry, 0, len(ents))
	for _, e := range ents {
		if hiddenTemp(e.Name()) {
			continue
		}
		out = append(out, Entry{Name: e.Name(), Size: e.Size(), Dir: e.IsDir()})
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Remove implements Store.
func (h *HDFSStore) Remove(name string) error {
	if err := checkName(name, true); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: Remove of the store's root", ErrBadName)
	}
	if err := h.c.RemoveAll(h.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot: remove: %w", err)
	}
	return nil
}
