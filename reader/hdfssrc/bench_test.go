package hdfssrc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/hdfssrc"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
	"github.com/xdlgo/xps/tests/hdfstest"
)

// BenchmarkRead reads the same libFFM samples (CTR-shaped: 23 fields, about
// 330 bytes a line, 100,000 lines) from HDFS over loopback and from a local
// file (page-cached):
//
//   - file, hdfs: a FileSource decoding every sample into groups (samples/s
//     and MB/s of the sample bytes);
//   - file-bytes, hdfs-bytes: the bytes only, copied to io.Discard, through
//     the verified reader that FS uses;
//   - hdfs-bytes-unverified: the client's own large reads, which can pass a
//     corrupt chunk as data (see snapshot/hdfsconn): the cost of verifying.
//
// The namenode is $XPS_HDFS_NAMENODE (host:port; bench/hdfs_read.sh starts
// cmd/hdfsd as its own process) or, when unset, an in-process test server
// with 128 MiB blocks (sharing the benchmark's cores).
func BenchmarkRead(b *testing.B) {
	const n = 100000
	data := benchLibFFM(n)
	local := filepath.Join(b.TempDir(), "train.libffm")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		b.Fatal(err)
	}
	fsys, addr, remote := benchPutHDFS(b, local)
	uri := hdfsconn.FormatURI(addr, remote)
	size := int64(len(data))

	b.Run("file", func(b *testing.B) { benchReadSamples(b, nil, local, n, size) })
	b.Run("hdfs", func(b *testing.B) { benchReadSamples(b, fsys, uri, n, size) })
	b.Run("file-bytes", func(b *testing.B) {
		benchReadBytes(b, size, func() (io.ReadCloser, error) { return os.Open(local) })
	})
	b.Run("hdfs-bytes", func(b *testing.B) {
		benchReadBytes(b, size, func() (io.ReadCloser, error) { return fsys.Open(uri) })
	})
	b.Run("hdfs-bytes-unverified", func(b *testing.B) {
		benchReadBytes(b, size, func() (io.ReadCloser, error) { return fsys.Client().Open(remote) })
	})
}

// benchLibFFM returns n CTR-shaped libFFM lines: a 0/1 label and 23
// fields, about 330 bytes a line.
func benchLibFFM(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for range n {
		fmt.Fprintf(&sb, "%d", rng.IntN(2))
		for f := range 23 {
			fmt.Fprintf(&sb, " %d:%d:1", f, rng.IntN(1000000))
		}
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

// benchPutHDFS copies local to a new file on the namenode
// $XPS_HDFS_NAMENODE, or on an in-process test server with 128 MiB blocks
// when it is unset. It returns the file system, the namenode's address and
// the remote path; b's cleanup removes the file and closes what it opened.
func benchPutHDFS(b *testing.B, local string) (fsys *hdfssrc.FS, addr, remote string) {
	addr = os.Getenv("XPS_HDFS_NAMENODE")
	if addr == "" {
		srv, err := hdfstest.Start(hdfstest.Options{BlockSize: 128 << 20})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close() })
		addr = srv.NamenodeAddr()
	}
	fsys, err := hdfssrc.Dial(addr, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fsys.Close() })
	remote = fmt.Sprintf("/bench/train-%d.libffm", rand.Uint64())
	if _, err := hdfsconn.Put(fsys.Client(), local, remote, true); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fsys.Client().Remove(remote) })
	return fsys, addr, remote
}

// benchReadSamples decodes the n libFFM samples (size bytes) of path on fs
// with a FileSource, checking their number, and reports samples/s.
func benchReadSamples(b *testing.B, fs reader.FS, path string, n int, size int64) {
	b.SetBytes(size)
	for b.Loop() {
		src, err := reader.OpenFilesFS(fs, []reader.FileSplit{{Path: path}}, reader.LibFFM, reader.StopOnBad)
		if err != nil {
			b.Fatal(err)
		}
		var g reader.Group
		got := 0
		for {
			err := src.Next(context.Background(), &g)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			got += g.NumSamples()
		}
		src.Close()
		if got != n {
			b.Fatalf("read %d samples, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// benchReadBytes copies what open returns to io.Discard, checking that it
// is size bytes.
func benchReadBytes(b *testing.B, size int64, open func() (io.ReadCloser, error)) {
	b.SetBytes(size)
	buf := make([]byte, 256<<10)
	for b.Loop() {
		r, err := open()
		if err != nil {
			b.Fatal(err)
		}
		m, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
		r.Close()
		if err != nil || m != size {
			b.Fatalf("copied %d bytes, %v", m, err)
		}
	}
}
