package hdfsconn_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/xdlgo/xps/snapshot/hdfsconn"
	"github.com/xdlgo/xps/tests/hdfstest"
)

func TestParseURI(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want hdfsconn.URI
		err  bool
	}{
		{"hdfs://nn:9000/data/x", hdfsconn.URI{Addr: "nn:9000", Path: "/data/x"}, false},
		{"hdfs://nn/data/x", hdfsconn.URI{Addr: "nn:8020", Path: "/data/x"}, false},
		{"hdfs://nn:9000", hdfsconn.URI{Addr: "nn:9000", Path: "/"}, false},
		{"hdfs://nn:9000//a/./b/../c/", hdfsconn.URI{Addr: "nn:9000", Path: "/a/c"}, false},
		{"hdfs://nn:9000/part-?/x#1", hdfsconn.URI{Addr: "nn:9000", Path: "/part-?/x#1"}, false},
		{"hdfs://[::1]:9000/x", hdfsconn.URI{Addr: "[::1]:9000", Path: "/x"}, false},
		{"hdfs://[::1]/x", hdfsconn.URI{Addr: "[::1]:8020", Path: "/x"}, false},
		{"hdfs:///x", hdfsconn.URI{}, true},
		{"hdfs://", hdfsconn.URI{}, true},
		{"hdfs://user@nn:9000/x", hdfsconn.URI{}, true},
		{"hdfs://nn:/x", hdfsconn.URI{}, true},
		{"hdfs://nn:70000/x", hdfsconn.URI{}, true},
		{"hdfs://nn:port/x", hdfsconn.URI{}, true},
		{"hdfs://nn?x=1/y", hdfsconn.URI{}, true},
		{"/local/path", hdfsconn.URI{}, true},
		{"s3://bucket/x", hdfsconn.URI{}, true},
	} {
		got, err := hdfsconn.ParseURI(tc.in)
		if tc.err {
			if !errors.Is(err, hdfsconn.ErrBadURI) {
				t.Errorf("ParseURI(%q) = %v, %v; want ErrBadURI", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseURI(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if again, err := hdfsconn.ParseURI(got.String()); err != nil || again != got {
			t.Errorf("ParseURI(%q) = %+v, %v; want %+v again", got.String(), again, err, got)
		}
	}
}

func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"hdfs://nn:9000/data/x", "hdfs://nn/", "hdfs://[::1]:1/a/../b", "hdfs://a@b/c", "hdfs:///"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := hdfsconn.ParseURI(s)
		if err != nil {
			if !errors.Is(err, hdfsconn.ErrBadURI) {
				t.Fatalf("ParseURI(%q): error %v does not wrap ErrBadURI", s, err)
			}
			return
		}
		if !strings.HasPrefix(u.Path, "/") || u.Addr == "" {
			t.Fatalf("ParseURI(%q) = %+v", s, u)
		}
		again, err := hdfsconn.ParseURI(u.String())
		if err != nil || again != u {
			t.Fatalf("ParseURI(%q) = %+v; its String %q parses as %+v, %v", s, u, u.String(), again, err)
		}
	})
}

// chunkReader is a reader that, like the HDFS client, verifies a chunk
// only when asked for fewer bytes than a chunk, and records read sizes.
type chunkReader struct {
	r     io.Reader
	chunk int
	big   int // reads of a chunk or more
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if len(b) >= c.chunk {
		c.big++
	}
	return c.r.Read(b)
}

func TestVerifiedReader(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	for _, chunk := range []int{1, 2, 512} {
		cr := &chunkReader{r: iotest.HalfReader(bytes.NewReader(data)), chunk: chunk}
		got, err := io.ReadAll(&hdfsconn.VerifiedReader{R: cr, Chunk: chunk})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("chunk %d: read %d bytes, %v", chunk, len(got), err)
		}
		if chunk > 1 && cr.big > 0 {
			t.Errorf("chunk %d: %d reads of a chunk or more reached the client", chunk, cr.big)
		}
	}
	// An error comes back with the bytes read before it.
	boom := errors.New("boom")
	v := &hdfsconn.VerifiedReader{R: io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), Chunk: 512}
	b := make([]byte, 100)
	if n, err := v.Read(b); n != 3 || !errors.Is(err, boom) {
		t.Errorf("Read = %d, %v; want 3, boom", n, err)
	}
}

func TestPut(t *testing.T) {
	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, chunk, err := hdfsconn.Dial(srv.NamenodeAddr(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if chunk != 512 {
		t.Errorf("bytes per checksum %d, want 512", chunk)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "a")
	data := bytes.Repeat([]byte("abcdefgh\n"), 3000) // several blocks
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := hdfsconn.Put(c, src, "/x/y/a", false); err != nil || n != int64(len(data)) {
		t.Fatalf("Put = %d, %v", n, err)
	}
	if got, err := c.ReadFile("/x/y/a"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if _, err := c.Stat("/x/y/a._COPYING_"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left behind: %v", err)
	}
	if _, err := hdfsconn.Put(c, src, "/x/y/a", false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("Put over an existing file = %v, want an error", err)
	}
	if err := os.WriteFile(src, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hdfsconn.Put(c, src, "/x/y/a", true); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadFile("/x/y/a"); err != nil || string(got) != "new\n" {
		t.Fatalf("after overwrite: %q, %v", got, err)
	}
	if _, err := hdfsconn.Put(c, filepath.Join(dir, "missing"), "/x/m", false); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Put of a missing file = %v", err)
	}
	if _, _, err := hdfsconn.Dial("127.0.0.1:1", "test"); err == nil {
		t.Error("Dial of a closed port succeeded")
	}
}
