package parquetsrc

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/xdlgo/xps/reader"
)

// ErrCorrupt is wrapped by the errors about a file that cannot be read as
// Parquet: a bad footer, a page that does not decode. They name the file,
// and for a page the row group and the column.
var ErrCorrupt = errors.New("parquetsrc: corrupt Parquet data")

// pqFile is one open Parquet file with the column map bound to it.
type pqFile struct {
	name string
	f    reader.File
	pf   *parquet.File
	lay  layout
	plan *plan
}

// openFile opens name on fsys and binds m to its schema.
func openFile(fsys reader.FS, name string, m *reader.ColumnMap, ns []uint32) (*pqFile, error) {
	st, err := fsys.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("parquetsrc: %w", err)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("parquetsrc: %w", err)
	}
	pf, err := openParquet(readerAt(f), st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: not a Parquet file, or its footer is corrupt: %v", ErrCorrupt, name, err)
	}
	p, err := bind(name, pf, m, ns)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &pqFile{name: name, f: f, pf: pf, lay: newLayout(pf.Metadata()), plan: p}, nil
}

func (f *pqFile) close() error { return f.f.Close() }

// readBuffer is the read-ahead of a column chunk's pages: reads of the
// file at an offset are few (a remote file's cost a round trip each; an
// HDFS one that seeks back reconnects), and the memory is a few MiB for
// dozens of columns.
const readBuffer = 256 << 10

// openParquet reads a file's footer, a panic of the library on a corrupt
// one returned as an error.
func openParquet(r io.ReaderAt, size int64) (pf *parquet.File, err error) {
	defer recovered(&err)
	return parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(readBuffer))
}

// readerAt gives f as an io.ReaderAt: itself when it is one (a local or
// an HDFS file), else reads at an offset by seeking, one at a time.
func readerAt(f reader.File) io.ReaderAt {
	if ra, ok := f.(io.ReaderAt); ok {
		return ra
	}
	return &seekReaderAt{f: f}
}

type seekReaderAt struct {
	mu sync.Mutex
	f  reader.File
}

func (s *seekReaderAt) ReadAt(b []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.ReadFull(s.f, b)
}

// Check opens the footer of every file of paths on fsys (nil: the local
// file system) and checks the column map against each schema and that
// the files' mapped columns have the same types, reporting every problem
// at once (a file that differs from the first is named with it). It
// reads no pages.
func Check(fsys reader.FS, paths []string, m reader.ColumnMap, ns []uint32) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if fsys == nil {
		fsys = reader.LocalFS{}
	}
	var errs []error
	var first *pqFile
	for _, name := range paths {
		f, err := openFile(fsys, name, &m, ns)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.close()
		if first == nil {
			first = f
		} else if f.plan.sig != first.plan.sig {
			errs = append(errs, schemaChange(first, f))
		}
	}
	return errors.Join(errs...)
}

// schemaChange is the error about file b whose mapped columns differ from
// file a's.
func schemaChange(a, b *pqFile) error {
	return fmt.Errorf("%w: the schema changes between part files: %s has %s, %s has %s",
		ErrSchema, a.name, a.plan.sig, b.name, b.plan.sig)
}
