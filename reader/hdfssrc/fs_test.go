package hdfssrc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/hdfssrc"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
	"github.com/xdlgo/xps/tests/hdfstest"
	"github.com/xdlgo/xps/tests/testutil"
)

const testBlockSize = 4096 // many blocks per file, so reads cross them

// cluster is a test HDFS server with files of sample groups, written both
// on HDFS (under /data) and in a local directory with the same layout.
type cluster struct {
	srv   *hdfstest.Server
	fs    *hdfssrc.FS
	local string            // local directory mirroring /data
	known map[uint64]string // sample id -> name
}

func (c *cluster) uri(p string) string { return hdfsconn.FormatURI(c.srv.NamenodeAddr(), p) }

// localPath maps a URI under /data to the local mirror.
func (c *cluster) localPath(t testing.TB, uri string) string {
	u, err := hdfsconn.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(c.local, strings.TrimPrefix(u.Path, "/data/"))
}

func startCluster(t testing.TB) *cluster {
	t.Helper()
	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: testBlockSize})
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := hdfssrc.Dial(srv.NamenodeAddr(), "test")
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fsys.Close()
		srv.Close()
	})
	c := &cluster{srv: srv, fs: fsys, local: t.TempDir(), known: map[uint64]string{}}
	for i, name := range []string{"part-0", "part-1", "part-2", "sub/part-3"} {
		c.put(t, name, c.groups(fmt.Sprintf("f%d", i), 300+100*i, uint64(i)))
	}
	// Hidden files and directories are skipped by directory and glob
	// expansion, as Hadoop's are.
	c.put(t, "_SUCCESS", nil)
	c.put(t, ".part-0.crc", []byte("x"))
	c.put(t, "_logs/history", []byte("x"))
	return c
}

// groups returns n sample groups in the sample-group text format, 1-4
// samples each, named prefix+"m<msg>s<k>".
func (c *cluster) groups(prefix string, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 9))
	var b strings.Builder
	for m := range n {
		fmt.Fprintf(&b, "group 2\n1 - - 1:u%d\n", m%7)
		for k := range 1 + rng.IntN(4) {
			name := fmt.Sprintf("%sm%ds%d", prefix, m, k)
			c.known[reader.FeatureID(0, []byte(name))] = name
			fmt.Fprintf(&b, "0 0 %d 0:%s\n", k%2, name)
		}
	}
	return []byte(b.String())
}

// put writes data to /data/name on HDFS and to the local mirror.
func (c *cluster) put(t testing.TB, name string, data []byte) {
	t.Helper()
	testutil.PutHDFS(t, c.fs, "/data/"+name, data)
	lp := filepath.Join(c.local, name)
	if err := os.MkdirAll(filepath.Dir(lp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lp, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// names returns the names of g's samples from g.Pos.Index on.
func (c *cluster) names(t testing.TB, g *reader.Group) []string {
	t.Helper()
	var out []string
	for i := g.Pos.Index; i < g.NumSamples(); i++ {
		_, id, _ := g.Levels[0].Line(i)
		name, ok := c.known[id[0]]
		if !ok {
			t.Fatalf("unknown sample id %d at %v", id[0], g.Pos)
		}
		out = append(out, name)
	}
	return out
}

func (c *cluster) open(t testing.TB, fsys reader.FS, splits []reader.FileSplit, start reader.Position) *reader.FileSource {
	t.Helper()
	dec, err := reader.NewDecoder(reader.SampleGroup)
	if err != nil {
		t.Fatal(err)
	}
	src, err := reader.NewFileSource(splits, reader.FileSourceOptions{Decoder: dec, FS: fsys, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// readAll reads src to its end and returns the sample names.
func (c *cluster) readAll(t testing.TB, src reader.Source) []string {
	t.Helper()
	defer src.Close()
	var out []string
	var g reader.Group
	for {
		err := src.Next(context.Background(), &g)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.names(t, &g)...)
	}
}

func (c *cluster) assign(t testing.TB, workers int, splitBytes int64) ([]reader.FileInfo, [][]reader.FileSplit) {
	t.Helper()
	paths, err := reader.ExpandPathsFS(c.fs, []string{c.uri("/data")})
	if err != nil {
		t.Fatal(err)
	}
	files, err := reader.StatFilesFS(c.fs, paths)
	if err != nil {
		t.Fatal(err)
	}
	asg, err := reader.Assign(files, workers, splitBytes, true)
	if err != nil {
		t.Fatal(err)
	}
	return files, asg
}

func TestExpandPathsAndStat(t *testing.T) {
	c := startCluster(t)
	parts := []string{c.uri("/data/part-0"), c.uri("/data/part-1"), c.uri("/data/part-2")}
	all := append(slices.Clone(parts), c.uri("/data/sub/part-3"))
	for _, tc := range []struct {
		patterns []string
		want     []string
	}{
		{[]string{c.uri("/data")}, all},
		{[]string{c.uri("/data/")}, all},
		{[]string{c.uri("/data/part-*")}, parts},
		{[]string{c.uri("/data/*")}, all},
		{[]string{c.uri("/data/*/part-?")}, all[3:]},
		{[]string{c.uri("/data/part-[12]"), c.uri("/data/part-1")}, parts[1:]},
		{[]string{c.uri("/data/sub/part-3")}, all[3:]},
		{[]string{c.uri("/data/_logs")}, []string{c.uri("/data/_logs/history")}}, // named: not hidden
		{[]string{"hdfs://" + c.srv.NamenodeAddr() + "//data/./sub/part-3"}, all[3:]},
	} {
		got, err := reader.ExpandPathsFS(c.fs, tc.patterns)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ExpandPathsFS(%q) = %q, %v; want %q", tc.patterns, got, err, tc.want)
		}
	}
	files, err := reader.StatFilesFS(c.fs, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		fi, err := os.Stat(c.localPath(t, f.Path))
		if err != nil || fi.Size() != f.Size {
			t.Errorf("%s: size %d on HDFS, local copy %v %v", f.Path, f.Size, fi.Size(), err)
		}
	}

	for _, tc := range []struct {
		patterns []string
		want     error
	}{
		{[]string{c.uri("/nope")}, reader.ErrNoFiles},
		{[]string{c.uri("/data/nope-*")}, reader.ErrNoFiles},
		{[]string{c.uri("/nope/*")}, reader.ErrNoFiles},
		{[]string{"hdfs://127.0.0.1:1/data"}, hdfssrc.ErrOtherFS},
		{[]string{"/data"}, hdfssrc.ErrOtherFS},
	} {
		if _, err := reader.ExpandPathsFS(c.fs, tc.patterns); !errors.Is(err, tc.want) {
			t.Errorf("ExpandPathsFS(%q) = %v, want %v", tc.patterns, err, tc.want)
		}
	}
	if _, err := reader.StatFilesFS(c.fs, []string{c.uri("/data/sub")}); err == nil {
		t.Error("StatFilesFS of a directory succeeded")
	}
	if _, err := c.fs.Open(c.uri("/data/sub")); err == nil {
		t.Error("Open of a directory succeeded")
	}
}

// TestReadAcrossWorkers splits the files into byte ranges that fall inside
// blocks and across their boundaries, reads each worker's share from HDFS
// and from the local copy, and checks both give the same samples and that
// the workers together read every sample exactly once.
func TestReadAcrossWorkers(t *testing.T) {
	c := startCluster(t)
	files, _ := c.assign(t, 1, 0)
	var want []string
	for _, f := range files {
		want = append(want, c.readAll(t, c.open(t, nil, []reader.FileSplit{{Path: c.localPath(t, f.Path)}}, reader.Position{}))...)
	}
	if len(want) < 1000 {
		t.Fatalf("test data: %d samples", len(want))
	}
	for _, workers := range []int{1, 2, 3, 5} {
		_, asg := c.assign(t, workers, 3000)
		var got []string
		for w, splits := range asg {
			fromHDFS := c.readAll(t, c.open(t, c.fs, splits, reader.Position{}))
			local := make([]reader.FileSplit, len(splits))
			for i, s := range splits {
				local[i] = reader.FileSplit{Path: c.localPath(t, s.Path), Start: s.Start, End: s.End}
			}
			if fromLocal := c.readAll(t, c.open(t, nil, local, reader.Position{})); !slices.Equal(fromHDFS, fromLocal) {
				t.Fatalf("%d workers, worker %d: %d samples from HDFS, %d from the local copy of %v",
					workers, w, len(fromHDFS), len(fromLocal), splits)
			}
			got = append(got, fromHDFS...)
		}
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(want))
		if !slices.Equal(got, sorted) {
			t.Fatalf("%d workers read %d samples, want each of %d once", workers, len(got), len(want))
		}
	}
}

// TestResumeAtRandomPoints stops reading at random points, inside groups
// too, and resumes from the position: nothing is lost or repeated.
func TestResumeAtRandomPoints(t *testing.T) {
	c := startCluster(t)
	_, asg := c.assign(t, 2, 3000)
	for w, splits := range asg {
		full := c.readAll(t, c.open(t, c.fs, splits, reader.Position{}))
		for seed := range uint64(6) {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			var got []string
			pos := reader.Position{}
			for round := 0; ; round++ {
				if round > len(full)+10 {
					t.Fatal("no progress")
				}
				src := c.open(t, c.fs, splits, pos)
				var g reader.Group
				stop, eof := rng.IntN(len(full)/3+2), false
				for k := 0; ; k++ {
					err := src.Next(context.Background(), &g)
					if errors.Is(err, io.EOF) {
						pos, eof = src.Position(), true
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					ns := c.names(t, &g)
					if k == stop {
						j := rng.IntN(len(ns) + 1) // keep some of the group: resume inside it
						got = append(got, ns[:j]...)
						pos = reader.Position{File: g.Pos.File, Offset: g.Pos.Offset, Index: g.Pos.Index + j}
						break
					}
					got = append(got, ns...)
				}
				src.Close()
				if eof {
					break
				}
			}
			if !slices.Equal(got, full) {
				t.Fatalf("worker %d seed %d: resumed reads give %d samples, want %d", w, seed, len(got), len(full))
			}
		}
	}
}

// TestCorruptBlockDetected flips a byte in a block (the first, one in the
// middle, the last) and reads the file through a FileSource, whose large
// buffered reads are where the client alone would let the damage through:
// the read must fail with a checksum error.
func TestCorruptBlockDetected(t *testing.T) {
	c := startCluster(t)
	data := c.groups("corrupt", 400, 77)
	blocks := (len(data) + testBlockSize - 1) / testBlockSize
	for _, b := range []int{0, blocks / 2, blocks - 1} {
		name := fmt.Sprintf("corrupt-%d", b)
		c.put(t, name, data)
		if err := c.srv.CorruptBlock("/data/"+name, b); err != nil {
			t.Fatal(err)
		}
		src := c.open(t, c.fs, []reader.FileSplit{{Path: c.uri("/data/" + name)}}, reader.Position{})
		var err error
		for g := new(reader.Group); err == nil; {
			err = src.Next(context.Background(), g)
		}
		src.Close()
		if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("block %d of %d corrupt: read ends with %v, want a checksum error", b, blocks, err)
		}
	}
}

func TestForPaths(t *testing.T) {
	c := startCluster(t)
	for _, tc := range []struct {
		names []string
		hdfs  bool
		err   error
	}{
		{[]string{"a", "/b/c*"}, false, nil},
		{nil, false, nil},
		{[]string{c.uri("/data"), c.uri("/x")}, true, nil},
		{[]string{c.uri("/data"), "local"}, false, hdfssrc.ErrMixedPaths},
		{[]string{c.uri("/data"), "hdfs://127.0.0.1:1/x"}, false, hdfssrc.ErrMixedPaths},
		{[]string{"hdfs:///nohost"}, false, hdfsconn.ErrBadURI},
	} {
		fsys, closer, err := hdfssrc.ForPaths(tc.names, "test")
		if !errors.Is(err, tc.err) {
			t.Errorf("ForPaths(%q) = %v, want %v", tc.names, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if _, isHDFS := fsys.(*hdfssrc.FS); isHDFS != tc.hdfs {
			t.Errorf("ForPaths(%q) = %T", tc.names, fsys)
		}
		closer.Close()
	}
	// A namenode that does not answer is reported when dialling.
	start := time.Now()
	if _, _, err := hdfssrc.ForPaths([]string{"hdfs://127.0.0.1:1/x"}, "test"); err == nil {
		t.Error("ForPaths of a namenode that is not there succeeded")
	} else if time.Since(start) > 20*time.Second {
		t.Errorf("ForPaths took %v to fail", time.Since(start))
	}
}

// TestReadAt: reads at random offsets of an open file (Parquet reads its
// footer and then pages here and there), after forward and backward seeks
// within and across blocks, give the file's bytes.
func TestReadAt(t *testing.T) {
	srv, fsys := testutil.HDFS(t, 16<<10)
	r := rand.New(rand.NewPCG(1, 1))
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	testutil.PutHDFS(t, fsys, "/d/x", data)
	f, err := fsys.Open(hdfsconn.FormatURI(srv.NamenodeAddr(), "/d/x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ra, ok := f.(io.ReaderAt)
	if !ok {
		t.Fatal("an HDFS file is not an io.ReaderAt")
	}
	for i := range 500 {
		off := r.IntN(len(data))
		b := make([]byte, 1+r.IntN(min(5000, len(data)-off)))
		if n, err := ra.ReadAt(b, int64(off)); err != nil || n != len(b) {
			t.Fatalf("read %d: ReadAt(%d bytes at %d) = %d, %v", i, len(b), off, n, err)
		}
		if !slices.Equal(b, data[off:off+len(b)]) {
			t.Fatalf("read %d: ReadAt(%d bytes at %d): other bytes", i, len(b), off)
		}
	}
	if n, err := ra.ReadAt(make([]byte, 10), int64(len(data)-4)); n != 4 || err != io.EOF {
		t.Fatalf("ReadAt past the end: %d, %v; want 4, io.EOF", n, err)
	}
}
