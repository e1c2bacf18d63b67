package parquetsrc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestHDFSSameAsLocal: a file on the HDFS test server (blocks smaller than
// its row groups) read through hdfssrc, whole and in splits, gives the
// samples of the local file, bit for bit.
func TestHDFSSameAsLocal(t *testing.T) {
	srv, fsys := testutil.HDFS(t, 16<<10)
	local := filepath.Join(t.TempDir(), "p.parquet")
	writeArrow(t, local, genRows(3000, 10, true), wopts{codec: compress.Codecs.Zstd, dict: true, rowGroup: 1000})
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	testutil.PutHDFS(t, fsys, "/d/p.parquet", data)
	remote := hdfsconn.FormatURI(srv.NamenodeAddr(), "/d/p.parquet")
	cols := testColumns(true, true)
	want := drain(t, openSource(t, []reader.FileSplit{{Path: local}}, Options{Columns: cols}))
	third := int64(len(data) / 3)
	var got []*reader.Group
	for _, sp := range []reader.FileSplit{{Path: remote, End: third}, {Path: remote, Start: third, End: 2 * third}, {Path: remote, Start: 2 * third}} {
		got = append(got, drain(t, openSource(t, []reader.FileSplit{sp}, Options{Columns: cols, FS: fsys}))...)
	}
	compareGroups(t, got, want)
	if err := Check(fsys, []string{remote}, cols, nil); err != nil {
		t.Fatal(err)
	}
}
