package reader

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FS is a file system the reader reads training files from: the local one
// (LocalFS, the default everywhere a nil FS is accepted) or a remote one
// such as HDFS (package reader/hdfssrc). Names are whatever the file system
// takes (local paths, or URIs such as hdfs://namenode:8020/data/part-0); a
// FileSource's positions carry them unchanged.
type FS interface {
	// Open opens a regular file for reading.
	Open(name string) (File, error)
	// Stat describes the file or directory name, following symbolic links.
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory: each entry's name (not its path) and
	// description, where a symbolic link is described as itself.
	ReadDir(name string) ([]fs.FileInfo, error)
	// Glob returns the names matching pattern, with the syntax of
	// path.Match applied to each element of the name.
	Glob(pattern string) ([]string, error)
	// Join joins a directory's name and an entry's name.
	Join(dir, name string) string
	// Clean returns the shortest name of the same file (filepath.Clean
	// locally).
	Clean(name string) string
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.Seeker
	io.Closer
}

// LocalFS is the local file system (package os).
type LocalFS struct{}

var _ FS = LocalFS{}

// Open implements FS.
func (LocalFS) Open(name string) (File, error) { return os.Open(name) }

// Stat implements FS.
func (LocalFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// ReadDir implements FS.
func (LocalFS) ReadDir(name string) ([]fs.FileInfo, error) {
	ents, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			if os.IsNotExist(err) { // removed since the listing
				continue
			}
			return nil, err
		}
		out = append(out, fi)
	}
	return out, nil
}

// Glob implements FS with filepath.Glob.
func (LocalFS) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

// Join implements FS with filepath.Join.
func (LocalFS) Join(dir, name string) string { return filepath.Join(dir, name) }

// Clean implements FS with filepath.Clean.
func (LocalFS) Clean(name string) string { return filepath.Clean(name) }

// orLocal returns fsys, or LocalFS when it is nil.
func orLocal(fsys FS) FS {
	if fsys == nil {
		return LocalFS{}
	}
	return fsys
}

// baseName is the last element of a slash- or OS-separated name.
func baseName(name string) string {
	name = strings.TrimRight(name, "/"+string(filepath.Separator))
	if i := strings.LastIndexAny(name, "/"+string(filepath.Separator)); i >= 0 {
		return name[i+1:]
	}
	return name
}

// walkFiles appends the regular files below directory dir of fsys to out,
// in name order, skipping hidden entries (and the trees below hidden
// directories). A symbolic link is followed when it names a regular file,
// never into a directory.
func walkFiles(fsys FS, out []string, dir string) ([]string, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		if hiddenName(e.Name()) {
			continue
		}
		p := fsys.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if out, err = walkFiles(fsys, out, p); err != nil {
				return nil, err
			}
		case e.Mode().IsRegular():
			out = append(out, p)
		case e.Mode()&fs.ModeSymlink != 0:
			if fi, err := fsys.Stat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// readAtFull reads len(b) bytes of f at offset off, leaving f's offset
// after them.
func readAtFull(f File, b []byte, off int64) (int, error) {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.ReadFull(f, b)
}
