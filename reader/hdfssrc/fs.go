package hdfssrc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/colinmarc/hdfs/v2"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
)

// ErrOtherFS is wrapped by the errors about a name an FS does not serve.
var ErrOtherFS = errors.New("hdfs: name is not on this file system")

// ErrMixedPaths is wrapped by ForPaths's error for paths on more than one
// file system.
var ErrMixedPaths = errors.New("hdfs: paths on more than one file system")

// FS is reader.FS over one HDFS namenode.
type FS struct {
	c     *hdfs.Client
	addr  string
	chunk int
}

var _ reader.FS = (*FS)(nil)

// Dial returns an FS over the namenode at addr (host:port) acting as user
// (hdfsconn.DefaultUser when empty). Close it when done.
func Dial(addr, user string) (*FS, error) {
	c, chunk, err := hdfsconn.Dial(addr, user)
	if err != nil {
		return nil, err
	}
	return &FS{c: c, addr: addr, chunk: chunk}, nil
}

// ForPaths returns the file system that names (paths or patterns of a job)
// are on: reader.LocalFS when none is an HDFS URI, an FS dialled as user
// when all are on one namenode. Mixing local and HDFS names, or two
// namenodes, is an error wrapping ErrMixedPaths. Close the returned closer
// (a no-op for local files) when done.
func ForPaths(names []string, user string) (reader.FS, io.Closer, error) {
	addr, local := "", 0
	for _, n := range names {
		if !hdfsconn.IsURI(n) {
			local++
			continue
		}
		u, err := hdfsconn.ParseURI(n)
		if err != nil {
			return nil, nil, err
		}
		if addr != "" && u.Addr != addr {
			return nil, nil, fmt.Errorf("%w: namenodes %s and %s", ErrMixedPaths, addr, u.Addr)
		}
		addr = u.Addr
	}
	switch {
	case addr == "":
		return reader.LocalFS{}, io.NopCloser(nil), nil
	case local > 0:
		return nil, nil, fmt.Errorf("%w: local paths and hdfs://%s", ErrMixedPaths, addr)
	}
	f, err := Dial(addr, user)
	if err != nil {
		return nil, nil, err
	}
	return f, f, nil
}

// Client returns the FS's client.
func (f *FS) Client() *hdfs.Client { return f.c }

// Addr returns the namenode's address.
func (f *FS) Addr() string { return f.addr }

// Close closes the client.
func (f *FS) Close() error { return f.c.Close() }

// path returns the HDFS path of name, which must be a URI on f's namenode.
func (f *FS) path(name string) (string, error) {
	u, err := hdfsconn.ParseURI(name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrOtherFS, err)
	}
	if u.Addr != f.addr {
		return "", fmt.Errorf("%w: %s is on namenode %s, not %s", ErrOtherFS, name, u.Addr, f.addr)
	}
	return u.Path, nil
}

// Open implements reader.FS. The file's reads are verified
// (hdfsconn.VerifiedReader).
func (f *FS) Open(name string) (reader.File, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	r, err := f.c.Open(p)
	if err != nil {
		return nil, err
	}
	if r.Stat().IsDir() {
		r.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	return &file{FileReader: r, v: hdfsconn.VerifiedReader{R: r, Chunk: f.chunk}}, nil
}

// file is an open HDFS file whose reads are verified.
type file struct {
	*hdfs.FileReader
	v  hdfsconn.VerifiedReader
	mu sync.Mutex // ReadAt's seek and read
}

func (f *file) Read(b []byte) (int, error) { return f.v.Read(b) }

// ReadAt implements io.ReaderAt (Parquet's footer and pages) with verified
// reads: the client's own ReadAt reads a long range at once, unverified
// (see hdfsconn.VerifiedReader), and fails with "invalid checksum" on
// reads that follow a short forward seek in a block. It moves the file's
// offset, so it is not for use beside Read.
func (f *file) ReadAt(b []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.FileReader.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.ReadFull(&f.v, b)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF // as os.File.ReadAt
	}
	return n, err
}

// Stat implements reader.FS.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	return f.c.Stat(p)
}

// ReadDir implements reader.FS.
func (f *FS) ReadDir(name string) ([]fs.FileInfo, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	return f.c.ReadDir(p)
}

// Join implements reader.FS.
func (f *FS) Join(dir, name string) string { return strings.TrimRight(dir, "/") + "/" + name }

// Clean implements reader.FS: the URI with its path cleaned, or name
// itself when it is not a URI.
func (f *FS) Clean(name string) string {
	u, err := hdfsconn.ParseURI(name)
	if err != nil {
		return name
	}
	return u.String()
}

// Glob implements reader.FS: path.Match per element of the path, as
// filepath.Glob does locally. A pattern on another namenode is an error;
// elements under a directory that does not exist match nothing.
func (f *FS) Glob(pattern string) ([]string, error) {
	p, err := f.path(pattern)
	if err != nil {
		return nil, err
	}
	if _, err := path.Match(p, ""); err != nil {
		return nil, err
	}
	dirs := []string{"/"}
	elems := strings.Split(strings.Trim(p, "/"), "/")
	for i, e := range elems {
		last := i == len(elems)-1
		var next []string
		for _, d := range dirs {
			if !hasMeta(e) {
				c := path.Join(d, e)
				if _, err := f.c.Stat(c); err == nil {
					next = append(next, c)
				} else if !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
				continue
			}
			ents, err := f.c.ReadDir(d)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
					continue
				}
				return nil, err
			}
			for _, ent := range ents {
				if !last && !ent.IsDir() {
					continue
				}
				if ok, _ := path.Match(e, ent.Name()); ok {
					next = append(next, path.Join(d, ent.Name()))
				}
			}
		}
		dirs = next
	}
	slices.Sort(dirs)
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = hdfsconn.FormatURI(f.addr, d)
	}
	return out, nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// isNotDir reports whether err is the namenode's refusal to list a file.
func isNotDir(err error) bool {
	return err != nil && strings.Contains(err.Error(), "not a directory")
}
