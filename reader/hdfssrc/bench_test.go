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

	"github.com/xdlgo/xps/internal/hdfsconn"
	"github.com/xdlgo/xps/internal/hdfstest"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/hdfssrc"
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
//     corrupt chunk as data (see internal/hdfsconn): the cost of verifying.
//
// The namenode is $XPS_HDFS_NAMENODE (host:port; bench/hdfs_read.sh starts
// cmd/hdfsd as its own process) or, when unset, an in-process test server
// with 128 MiB blocks (sharing the benchmark's cores).
func BenchmarkRead(b *testing.B) {
	const n = 100000
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for range n {
		fmt.Fprintf(&sb, "%d", rng.IntN(2))
		for f := range 23 {
			fmt.Fprintf(&sb, " %d:%d:1", f, rng.IntN(1000000))
		}
		sb.WriteByte('\n')
	}
	data := []byte(sb.String())
	local := filepath.Join(b.TempDir(), "train.libffm")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		b.Fatal(err)
	}
	addr := os.Getenv("XPS_HDFS_NAMENODE")
	if addr == "" {
		srv, err := hdfstest.Start(hdfstest.Options{BlockSize: 128 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		addr = srv.NamenodeAddr()
	}
	fsys, err := hdfssrc.Dial(addr, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer fsys.Close()
	remote := fmt.Sprintf("/bench/train-%d.libffm", rand.Uint64())
	if _, err := hdfsconn.Put(fsys.Client(), local, remote, true); err != nil {
		b.Fatal(err)
	}
	defer fsys.Client().Remove(remote)
	uri := hdfsconn.FormatURI(addr, remote)

	samples := func(b *testing.B, fs reader.FS, path string) {
		b.SetBytes(int64(len(data)))
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
	bytesOnly := func(b *testing.B, open func() (io.ReadCloser, error)) {
		b.SetBytes(int64(len(data)))
		buf := make([]byte, 256<<10)
		for b.Loop() {
			r, err := open()
			if err != nil {
				b.Fatal(err)
			}
			m, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
			r.Close()
			if err != nil || m != int64(len(data)) {
				b.Fatalf("copied %d bytes, %v", m, err)
			}
		}
	}
	b.Run("file", func(b *testing.B) { samples(b, nil, local) })
	b.Run("hdfs", func(b *testing.B) { samples(b, fsys, uri) })
	b.Run("file-bytes", func(b *testing.B) {
		bytesOnly(b, func() (io.ReadCloser, error) { return os.Open(local) })
	})
	b.Run("hdfs-bytes", func(b *testing.B) {
		bytesOnly(b, func() (io.ReadCloser, error) { return fsys.Open(uri) })
	})
	b.Run("hdfs-bytes-unverified", func(b *testing.B) {
		bytesOnly(b, func() (io.ReadCloser, error) { return fsys.Client().Open(remote) })
	})
}
