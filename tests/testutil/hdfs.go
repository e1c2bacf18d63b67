package testutil

import (
	"path"
	"testing"

	"github.com/xdlgo/xps/reader/hdfssrc"
	"github.com/xdlgo/xps/tests/hdfstest"
)

// HDFS starts the HDFS test server with blocks of blockSize bytes and
// returns it and a file system on it, both closed when the test ends.
func HDFS(t testing.TB, blockSize int64) (*hdfstest.Server, *hdfssrc.FS) {
	t.Helper()
	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	fsys, err := hdfssrc.Dial(srv.NamenodeAddr(), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return srv, fsys
}

// PutHDFS writes data to the file name (a path) of fsys, making its
// directory.
func PutHDFS(t testing.TB, fsys *hdfssrc.FS, name string, data []byte) {
	t.Helper()
	if err := fsys.Client().MkdirAll(path.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := fsys.Client().Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
