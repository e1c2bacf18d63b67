package hdfstest_test

// End-to-end tests: the unmodified github.com/colinmarc/hdfs/v2 client
// against the test server.

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.uber.org/goleak"

	"github.com/xdlgo/xps/tests/hdfstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The client's ack reader outlives a block write whose datanode went
		// away (TestCloseWithOpenConnections): its finish never closes the
		// packet channel after a failed write. A client bug, not ours.
		goleak.IgnoreTopFunction("github.com/colinmarc/hdfs/v2/internal/transfer.(*blockWriteStream).ackPackets"))
}

const testBlockSize = 64 << 10

func startServer(t *testing.T, opts hdfstest.Options) *hdfstest.Server {
	t.Helper()
	if opts.BlockSize == 0 {
		opts.BlockSize = testBlockSize
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	srv, err := hdfstest.Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// newClient connects a client; it is closed before the server (cleanups run
// last-in first-out).
func newClient(t *testing.T, srv *hdfstest.Server, user string) *hdfs.Client {
	t.Helper()
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{srv.NamenodeAddr()}, User: user})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func randomBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func writeFile(t *testing.T, c *hdfs.Client, name string, data []byte) {
	t.Helper()
	w, err := c.Create(name)
	if err != nil {
		t.Fatalf("Create %s: %v", name, err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatalf("Write %s: %v", name, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close %s: %v", name, err)
	}
}

func readFile(t *testing.T, c *hdfs.Client, name string) []byte {
	t.Helper()
	b, err := c.ReadFile(name)
	if err != nil {
		t.Fatalf("ReadFile %s: %v", name, err)
	}
	return b
}

// exception returns the Java exception class of a namenode error, or "".
func exception(err error) string {
	var he hdfs.Error
	if errors.As(err, &he) {
		return he.Exception()
	}
	return ""
}

func TestMkdirAndStat(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "alice")

	if err := c.Mkdir("/dir", 0o750); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if err := c.MkdirAll("/x/y/z", 0o755); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	if err := c.MkdirAll("/x/y", 0o755); err != nil {
		t.Fatalf("MkdirAll of an existing directory: %v", err)
	}
	writeFile(t, c, "/dir/file", []byte("hello"))

	fi, err := c.Stat("/dir")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	hfi := fi.(*hdfs.FileInfo)
	if !fi.IsDir() || fi.Mode() != os.ModeDir|0o750 || fi.Name() != "dir" || hfi.Owner() != "alice" || hfi.OwnerGroup() != "supergroup" {
		t.Errorf("Stat(/dir) = dir %v mode %v name %q owner %q group %q", fi.IsDir(), fi.Mode(), fi.Name(), hfi.Owner(), hfi.OwnerGroup())
	}
	if d := time.Since(fi.ModTime()); d < 0 || d > time.Minute {
		t.Errorf("Stat(/dir).ModTime() = %v, not recent", fi.ModTime())
	}
	fi, err = c.Stat("/dir/file")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if fi.IsDir() || fi.Size() != 5 || fi.Mode() != 0o644 || fi.Name() != "file" {
		t.Errorf("Stat(/dir/file) = dir %v size %d mode %v name %q", fi.IsDir(), fi.Size(), fi.Mode(), fi.Name())
	}

	for _, tc := range []struct {
		name    string
		op      func() error
		wantIs  error  // matched with errors.Is, if set
		wantExc string // Java exception class, if set
	}{
		{"mkdir existing", func() error { return c.Mkdir("/dir", 0o755) }, os.ErrExist, ""},
		{"mkdir without parent", func() error { return c.Mkdir("/nope/child", 0o755) }, os.ErrNotExist, ""},
		{"mkdir under a file", func() error { return c.Mkdir("/dir/file/sub", 0o755) }, nil, "org.apache.hadoop.fs.ParentNotDirectoryException"},
		{"mkdirall over a file", func() error { return c.MkdirAll("/dir/file", 0o755) }, os.ErrExist, ""},
		{"stat missing", func() error { _, err := c.Stat("/nope"); return err }, os.ErrNotExist, ""},
		{"stat below a file", func() error { _, err := c.Stat("/dir/file/x"); return err }, os.ErrNotExist, ""},
		{"relative path", func() error { _, err := c.Stat("dir"); return err }, nil, "org.apache.hadoop.fs.InvalidPathException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if tc.wantExc != "" && exception(err) != tc.wantExc {
				t.Errorf("error %v has exception %q, want %q", err, exception(err), tc.wantExc)
			}
		})
	}
}

// TestWriteRead writes files of sizes around chunk and block boundaries and
// reads them back whole.
func TestWriteRead(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")

	for _, tc := range []struct {
		size       int
		wantBlocks int
	}{
		{0, 0},
		{1, 1},
		{511, 1},
		{512, 1},
		{513, 1},
		{testBlockSize - 1, 1},
		{testBlockSize, 1}, // the client allocates a second, empty block: complete drops it
		{testBlockSize + 1, 2},
		{2 * testBlockSize, 2},
		{300_000, 5},
	} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			name := fmt.Sprintf("/f%d", tc.size)
			data := randomBytes(int64(tc.size), tc.size)
			writeFile(t, c, name, data)
			fi, err := c.Stat(name)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if fi.Size() != int64(tc.size) {
				t.Errorf("Size() = %d, want %d", fi.Size(), tc.size)
			}
			blocks, err := srv.Blocks(name)
			if err != nil {
				t.Fatalf("Blocks: %v", err)
			}
			if len(blocks) != tc.wantBlocks {
				t.Errorf("%d blocks, want %d: %+v", len(blocks), tc.wantBlocks, blocks)
			}
			var off int64
			for i, b := range blocks {
				if b.Offset != off || b.Length <= 0 || b.Length > testBlockSize {
					t.Errorf("block %d = %+v at offset %d", i, b, off)
				}
				off += b.Length
			}
			if got := readFile(t, c, name); !bytes.Equal(got, data) {
				t.Errorf("read back %d bytes that differ from the %d written", len(got), len(data))
			}
		})
	}
}

// TestWriteFlush flushes at odd offsets, so packets start in the middle of
// a chunk and the datanode must merge partial chunks.
func TestWriteFlush(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")
	data := randomBytes(7, 200_000)
	w, err := c.Create("/flushed")
	if err != nil {
		t.Fatal(err)
	}
	for off, step := 0, 1; off < len(data); off, step = off+step, step*3+7 {
		end := min(off+step, len(data))
		if _, err := w.Write(data[off:end]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if err := w.Flush(); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := readFile(t, c, "/flushed"); !bytes.Equal(got, data) {
		t.Error("read back differs")
	}
}

func TestReadRanges(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")
	const size = 300_000
	data := randomBytes(1, size)
	writeFile(t, c, "/ranges", data)

	f, err := c.Open("/ranges")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ranges := []struct{ off, n int }{
		{0, 100},
		{1, 1},
		{513, 7},                                 // unaligned: the datanode starts at the chunk boundary
		{testBlockSize - 10, 20},                 // across a block boundary
		{testBlockSize, testBlockSize},           // exactly one block
		{testBlockSize - 1, 2*testBlockSize + 2}, // three blocks
		{100, 200_000},
		{size - 10, 10}, // the tail
		{70_000, 3},     // a small backwards seek after the previous read
		{70_010, 5000},  // a small forward skip
	}
	t.Run("ReadAt", func(t *testing.T) {
		for _, r := range ranges {
			buf := make([]byte, r.n)
			n, err := f.ReadAt(buf, int64(r.off))
			if err != nil || n != r.n {
				t.Fatalf("ReadAt(%d, %d) = %d, %v", r.off, r.n, n, err)
			}
			if !bytes.Equal(buf, data[r.off:r.off+r.n]) {
				t.Errorf("ReadAt(%d, %d) returned the wrong bytes", r.off, r.n)
			}
		}
	})
	t.Run("SeekRead", func(t *testing.T) {
		for _, r := range ranges {
			if _, err := f.Seek(int64(r.off), io.SeekStart); err != nil {
				t.Fatalf("Seek(%d): %v", r.off, err)
			}
			buf := make([]byte, r.n)
			if _, err := io.ReadFull(f, buf); err != nil {
				t.Fatalf("Read %d at %d: %v", r.n, r.off, err)
			}
			if !bytes.Equal(buf, data[r.off:r.off+r.n]) {
				t.Errorf("Read %d at %d returned the wrong bytes", r.n, r.off)
			}
		}
		// Relative seeks.
		if pos, err := f.Seek(-1000, io.SeekEnd); err != nil || pos != size-1000 {
			t.Fatalf("Seek(-1000, end) = %d, %v", pos, err)
		}
		if pos, err := f.Seek(500, io.SeekCurrent); err != nil || pos != size-500 {
			t.Fatalf("Seek(500, current) = %d, %v", pos, err)
		}
		rest, err := io.ReadAll(f)
		if err != nil || !bytes.Equal(rest, data[size-500:]) {
			t.Errorf("ReadAll after seeks = %d bytes, %v", len(rest), err)
		}
	})
	t.Run("PastEOF", func(t *testing.T) {
		buf := make([]byte, 100)
		n, err := f.ReadAt(buf, size-40)
		if n != 40 || err != io.EOF || !bytes.Equal(buf[:40], data[size-40:]) {
			t.Errorf("ReadAt across EOF = %d, %v", n, err)
		}
	})
}

// TestFileChecksum checks OP_BLOCK_CHECKSUM against HDFS's MD5-of-MD5-of-
// CRC32C file checksum computed here from the data.
func TestFileChecksum(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")
	data := randomBytes(3, 200_000)
	writeFile(t, c, "/sum", data)
	f, err := c.Open("/sum")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Checksum()
	if err != nil {
		t.Fatalf("Checksum: %v", err)
	}
	if want := md5md5crc(data, testBlockSize); !bytes.Equal(got, want) {
		t.Errorf("Checksum = %x, want %x", got, want)
	}
}

// md5md5crc is the file checksum as the client computes it from the
// datanodes' per-block MD5s of the CRCs of 512-byte chunks.
func md5md5crc(data []byte, blockSize int) []byte {
	tab := crc32.MakeTable(crc32.Castagnoli)
	h := md5.New()
	padded, total := 32, 0
	for off := 0; off < len(data); off += blockSize {
		block := data[off:min(off+blockSize, len(data))]
		var crcs []byte
		for c := 0; c < len(block); c += 512 {
			crcs = binary.BigEndian.AppendUint32(crcs, crc32.Checksum(block[c:min(c+512, len(block))], tab))
		}
		s := md5.Sum(crcs)
		h.Write(s[:])
		if total += len(s); padded < total {
			padded *= 2
		}
	}
	h.Write(make([]byte, padded-total))
	return h.Sum(nil)
}

// TestReadDirPaging lists a directory larger than one getListing page.
func TestReadDirPaging(t *testing.T) {
	srv := startServer(t, hdfstest.Options{ListingLimit: 4})
	c := newClient(t, srv, "test")
	if err := c.Mkdir("/list", 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	isDir := map[string]bool{}
	for i := range 23 {
		name := fmt.Sprintf("e%02d", i)
		want = append(want, name)
		if i%5 == 0 {
			isDir[name] = true
			if err := c.Mkdir("/list/"+name, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeFile(t, c, "/list/"+name, []byte(name))
	}

	fis, err := c.ReadDir("/list")
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	var got []string
	for _, fi := range fis {
		got = append(got, fi.Name())
		if fi.IsDir() != isDir[fi.Name()] {
			t.Errorf("%s: IsDir() = %v", fi.Name(), fi.IsDir())
		}
		if !fi.IsDir() && fi.Size() != 3 {
			t.Errorf("%s: Size() = %d", fi.Name(), fi.Size())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadDir = %v, want %v", got, want)
	}

	// Readdir(n) pages on top of the server's pages.
	f, err := c.Open("/list")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got = nil
	for {
		names, err := f.Readdirnames(6)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Readdirnames: %v", err)
		}
		got = append(got, names...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Readdirnames(6)... = %v, want %v", got, want)
	}

	if _, err := c.ReadDir("/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadDir(/missing) = %v, want ErrNotExist", err)
	}
}

func TestWalk(t *testing.T) {
	srv := startServer(t, hdfstest.Options{ListingLimit: 2})
	c := newClient(t, srv, "test")
	for _, d := range []string{"/w/a/b", "/w/c"} {
		if err := c.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/w/a/b/f1", "/w/a/f2", "/w/c/f3", "/w/f4", "/w/f5"} {
		writeFile(t, c, f, []byte(f))
	}
	var got []string
	err := c.Walk("/w", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			p += "/"
		}
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	want := []string{"/w/", "/w/a/", "/w/a/b/", "/w/a/b/f1", "/w/a/f2", "/w/c/", "/w/c/f3", "/w/f4", "/w/f5"}
	if !slices.Equal(got, want) {
		t.Errorf("Walk = %v, want %v", got, want)
	}
	// Skipping a directory.
	got = nil
	err = c.Walk("/w", func(p string, fi os.FileInfo, err error) error {
		if fi.IsDir() && filepath.Base(p) == "a" {
			return filepath.SkipDir
		}
		got = append(got, p)
		return err
	})
	if want := []string{"/w", "/w/c", "/w/c/f3", "/w/f4", "/w/f5"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Walk with SkipDir = %v, %v; want %v", got, err, want)
	}
}

func TestRename(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")
	a := randomBytes(1, 150_000)
	b := randomBytes(2, 70_000)
	if err := c.MkdirAll("/src/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.MkdirAll("/dst/full", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c, "/src/a", a)
	writeFile(t, c, "/src/sub/b", b)
	writeFile(t, c, "/dst/full/x", []byte("x"))

	// Move a file to another directory.
	if err := c.Rename("/src/a", "/dst/a2"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if _, err := c.Stat("/src/a"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old name still there: %v", err)
	}
	if got := readFile(t, c, "/dst/a2"); !bytes.Equal(got, a) {
		t.Error("renamed file differs")
	}

	// Overwrite an existing file; its blocks go away.
	old, err := srv.Blocks("/dst/a2")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Rename("/src/sub/b", "/dst/a2"); err != nil {
		t.Fatalf("Rename over a file: %v", err)
	}
	if got := readFile(t, c, "/dst/a2"); !bytes.Equal(got, b) {
		t.Error("overwritten file has the wrong content")
	}
	if now, _ := srv.Blocks("/dst/a2"); len(now) == len(old) && now[0].ID == old[0].ID {
		t.Errorf("blocks after overwrite = %+v, same as before", now)
	}

	// Move a directory with its contents.
	writeFile(t, c, "/src/sub/c", []byte("c"))
	if err := c.Rename("/src", "/dst/moved"); err != nil {
		t.Fatalf("Rename directory: %v", err)
	}
	if got := readFile(t, c, "/dst/moved/sub/c"); string(got) != "c" {
		t.Errorf("moved directory content = %q", got)
	}

	for _, tc := range []struct {
		name     string
		src, dst string
		wantIs   error
		wantExc  string
	}{
		{"missing source", "/nope", "/dst/nope", os.ErrNotExist, ""},
		{"missing destination parent", "/dst/a2", "/nope/a2", os.ErrNotExist, ""},
		{"onto itself", "/dst/a2", "/dst/a2", os.ErrExist, ""},
		{"into own subdirectory", "/dst/moved", "/dst/moved/sub/m", nil, "java.io.IOException"},
		{"file onto directory", "/dst/a2", "/dst/full", nil, "java.io.IOException"},
		{"onto non-empty directory", "/dst/moved", "/dst/full", nil, "java.io.IOException"},
		{"under a file", "/dst/moved", "/dst/a2/m", nil, "org.apache.hadoop.fs.ParentNotDirectoryException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Rename(tc.src, tc.dst)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if tc.wantExc != "" && exception(err) != tc.wantExc {
				t.Errorf("error %v has exception %q, want %q", err, exception(err), tc.wantExc)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")
	if err := c.MkdirAll("/r/tree/deep", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Mkdir("/r/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c, "/r/file", randomBytes(1, 100_000))
	writeFile(t, c, "/r/tree/deep/f", []byte("f"))

	before, _ := c.StatFs()
	if err := c.Remove("/r/file"); err != nil {
		t.Fatalf("Remove file: %v", err)
	}
	if after, _ := c.StatFs(); before.Used-after.Used != 100_000 {
		t.Errorf("StatFs().Used went from %d to %d; want 100000 bytes freed", before.Used, after.Used)
	}
	if err := c.Remove("/r/empty"); err != nil {
		t.Fatalf("Remove empty dir: %v", err)
	}
	if err := c.Remove("/r/tree"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("Remove non-empty dir = %v, want ENOTEMPTY", err)
	}
	if err := c.Remove("/r/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove missing = %v, want ErrNotExist", err)
	}
	if err := c.RemoveAll("/r/tree"); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if err := c.RemoveAll("/r/nope"); err != nil {
		t.Errorf("RemoveAll missing = %v, want nil", err)
	}
	fis, err := c.ReadDir("/r")
	if err != nil || len(fis) != 0 {
		t.Errorf("ReadDir after removals = %d entries, %v", len(fis), err)
	}
}

func TestCreateErrors(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")
	other := newClient(t, srv, "test")
	writeFile(t, c, "/exists", []byte("x"))
	if err := c.Mkdir("/adir", 0o755); err != nil {
		t.Fatal(err)
	}
	open, err := c.Create("/open")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	for _, tc := range []struct {
		name    string
		op      func() error
		wantIs  error
		wantExc string
	}{
		{"open missing", func() error { _, err := c.Open("/nope"); return err }, os.ErrNotExist, ""},
		{"Create existing (client check)", func() error { _, err := c.Create("/exists"); return err }, os.ErrExist, ""},
		{"CreateFile existing (FileAlreadyExistsException)", func() error {
			_, err := c.CreateFile("/exists", 1, testBlockSize, 0o644)
			return err
		}, os.ErrExist, ""},
		{"CreateFile over a directory", func() error { _, err := c.CreateFile("/adir", 1, testBlockSize, 0o644); return err }, os.ErrExist, ""},
		{"CreateFile being written (AlreadyBeingCreatedException)", func() error {
			_, err := other.CreateFile("/open", 1, testBlockSize, 0o644)
			return err
		}, os.ErrExist, ""},
		{"CreateFile without parent", func() error { _, err := c.CreateFile("/nope/f", 1, testBlockSize, 0o644); return err }, os.ErrNotExist, ""},
		{"CreateFile under a file", func() error { _, err := c.CreateFile("/exists/f", 1, testBlockSize, 0o644); return err },
			nil, "org.apache.hadoop.fs.ParentNotDirectoryException"},
		{"Append is not served", func() error { _, err := c.Append("/exists"); return err }, nil, "org.apache.hadoop.ipc.RpcNoSuchMethodException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if tc.wantExc != "" && exception(err) != tc.wantExc {
				t.Errorf("error %v has exception %q, want %q", err, exception(err), tc.wantExc)
			}
		})
	}
}

func TestCorruptBlockDetected(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	c := newClient(t, srv, "test")
	data := randomBytes(5, 3*testBlockSize-100)
	writeFile(t, c, "/corrupt", data)
	if err := srv.CorruptBlock("/corrupt", 1); err != nil {
		t.Fatalf("CorruptBlock: %v", err)
	}

	if _, err := c.ReadFile("/corrupt"); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("ReadFile of a corrupt file = %v, want a checksum error", err)
	}
	f, err := c.Open("/corrupt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Block 0 is intact.
	buf := make([]byte, testBlockSize)
	if _, err := f.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, data[:testBlockSize]) {
		t.Errorf("ReadAt of the intact block: %v", err)
	}
	// A read of the damaged chunk (CorruptBlock flips the middle byte)
	// fails. The read is small on purpose: for reads of at least a chunk
	// the client returns the bytes of a packet that failed verification
	// with a nil error and would report the error only on a further read
	// from the same block, which never comes when the packet ends it.
	buf = make([]byte, 100)
	if _, err := f.ReadAt(buf, testBlockSize+testBlockSize/2-50); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("ReadAt of the corrupt chunk = %v, want a checksum error", err)
	}

	if err := srv.CorruptBlock("/corrupt", 3); !errors.Is(err, hdfstest.ErrNotExist) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CorruptBlock of a missing block = %v, want ErrNotExist", err)
	}
	if err := srv.CorruptBlock("/nope", 0); !errors.Is(err, hdfstest.ErrNotExist) {
		t.Errorf("CorruptBlock of a missing file = %v, want ErrNotExist", err)
	}
}

// TestConcurrentClients runs readers of one file and writers of their own
// files at once; run it with -race.
func TestConcurrentClients(t *testing.T) {
	srv := startServer(t, hdfstest.Options{})
	setup := newClient(t, srv, "test")
	const size = 250_000
	data := randomBytes(9, size)
	writeFile(t, setup, "/shared", data)
	if err := setup.Mkdir("/own", 0o755); err != nil {
		t.Fatal(err)
	}

	const readers, writers = 6, 3
	clients := make([]*hdfs.Client, readers+writers)
	for i := range clients {
		clients[i] = newClient(t, srv, fmt.Sprintf("user%d", i))
	}
	errs := make(chan error, readers+writers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func(c *hdfs.Client, seed int64) {
			defer wg.Done()
			errs <- readRandomRanges(c, "/shared", data, seed)
		}(clients[i], int64(i))
	}
	for i := range writers {
		wg.Add(1)
		go func(c *hdfs.Client, i int) {
			defer wg.Done()
			errs <- writeReadBack(c, fmt.Sprintf("/own/%d", i), randomBytes(int64(100+i), 100_000+i*1000))
		}(clients[readers+i], i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	fis, err := setup.ReadDir("/own")
	if err != nil || len(fis) != writers {
		t.Errorf("ReadDir(/own) = %d entries, %v", len(fis), err)
	}
}

// readRandomRanges reads 20 random ranges of name, which holds data, with
// ReadAt on one open file and checks their bytes.
func readRandomRanges(c *hdfs.Client, name string, data []byte, seed int64) error {
	f, err := c.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	size := len(data)
	rng := rand.New(rand.NewSource(seed))
	for range 20 {
		off := rng.Intn(size)
		buf := make([]byte, rng.Intn(size-off)+1)
		if _, err := f.ReadAt(buf, int64(off)); err != nil {
			return fmt.Errorf("ReadAt(%d, %d): %w", off, len(buf), err)
		}
		if !bytes.Equal(buf, data[off:off+len(buf)]) {
			return fmt.Errorf("ReadAt(%d, %d): wrong bytes", off, len(buf))
		}
	}
	return nil
}

// writeReadBack creates name with data and checks that it reads back.
func writeReadBack(c *hdfs.Client, name string, data []byte) error {
	w, err := c.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	got, err := c.ReadFile(name)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("%s: read back differs", name)
	}
	return nil
}

func TestAttributes(t *testing.T) {
	srv := startServer(t, hdfstest.Options{BlockSize: 128 << 10, Replication: 2})
	c := newClient(t, srv, "test")
	writeFile(t, c, "/attr", randomBytes(1, 1000))
	if err := c.MkdirAll("/tree/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c, "/tree/a", randomBytes(2, 300_000))
	writeFile(t, c, "/tree/sub/b", randomBytes(3, 10))

	if err := c.Chmod("/attr", 0o600); err != nil {
		t.Fatalf("Chmod: %v", err)
	}
	if err := c.Chown("/attr", "bob", "staff"); err != nil {
		t.Fatalf("Chown: %v", err)
	}
	mtime := time.Unix(1_600_000_000, 0) // the client sends whole seconds
	atime := time.Unix(1_600_000_100, 0)
	if err := c.Chtimes("/attr", atime, mtime); err != nil {
		t.Fatalf("Chtimes: %v", err)
	}
	fi, err := c.Stat("/attr")
	if err != nil {
		t.Fatal(err)
	}
	hfi := fi.(*hdfs.FileInfo)
	if fi.Mode() != 0o600 || hfi.Owner() != "bob" || hfi.OwnerGroup() != "staff" || !fi.ModTime().Equal(mtime) || !hfi.AccessTime().Equal(atime) {
		t.Errorf("after Chmod/Chown/Chtimes: mode %v owner %s group %s mtime %v atime %v",
			fi.Mode(), hfi.Owner(), hfi.OwnerGroup(), fi.ModTime(), hfi.AccessTime())
	}
	if err := c.Chmod("/nope", 0o600); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Chmod of a missing file = %v", err)
	}

	cs, err := c.GetContentSummary("/tree")
	if err != nil {
		t.Fatalf("GetContentSummary: %v", err)
	}
	if cs.Size() != 300_010 || cs.FileCount() != 2 || cs.DirectoryCount() != 2 || cs.SizeAfterReplication() != 2*300_010 || cs.NameQuota() != -1 {
		t.Errorf("content summary: size %d files %d dirs %d replicated %d quota %d",
			cs.Size(), cs.FileCount(), cs.DirectoryCount(), cs.SizeAfterReplication(), cs.NameQuota())
	}

	d, err := c.ServerDefaults()
	if err != nil {
		t.Fatalf("ServerDefaults: %v", err)
	}
	if d.BlockSize != 128<<10 || d.BytesPerChecksum != 512 || d.Replication != 2 || d.EncryptDataTransfer {
		t.Errorf("ServerDefaults = %+v", d)
	}
	if blocks, _ := srv.Blocks("/tree/a"); len(blocks) != 3 {
		t.Errorf("/tree/a has %d blocks of %d bytes, want 3", len(blocks), d.BlockSize)
	}
	fs, err := c.StatFs()
	if err != nil || fs.Used != 301_010 || fs.Capacity != fs.Used+fs.Remaining {
		t.Errorf("StatFs = %+v, %v", fs, err)
	}
}

// TestCloseWithOpenConnections closes the server while clients hold
// namenode and datanode connections; Close must not hang, and goleak
// (TestMain) checks that nothing is left running.
func TestCloseWithOpenConnections(t *testing.T) {
	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: testBlockSize})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{srv.NamenodeAddr()}, User: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	writeFile(t, c, "/big", randomBytes(1, 4*testBlockSize))
	f, err := c.Open("/big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Read a little: the datanode is now blocked sending the rest.
	if _, err := io.ReadFull(f, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	w, err := c.Create("/half")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(randomBytes(2, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}

	done := make(chan error)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
	if _, err := c.Stat("/big"); err == nil {
		t.Error("Stat after Close succeeded")
	}
	w.Close() // fails; stops the writer's goroutines
}
