package snapshot_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
	"github.com/xdlgo/xps/tests/hdfstest"
)

// stores returns one store of each kind, each on a fresh root.
func stores(t *testing.T) map[string]snapshot.Store {
	t.Helper()
	dir, err := snapshot.OpenStore(t.TempDir()+"/snaps", "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	h, err := snapshot.OpenStore(hdfsconn.FormatURI(srv.NamenodeAddr(), "/models/ctr/snapshots"), "test")
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dir.Close()
		h.Close()
		srv.Close()
	})
	return map[string]snapshot.Store{"dir": dir, "hdfs": h}
}

func put(t *testing.T, s snapshot.Store, name string, data []byte) {
	t.Helper()
	w, err := s.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s snapshot.Store, name string) []byte {
	t.Helper()
	r, err := s.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != r.Size() {
		t.Fatalf("%s: read %d bytes, Size %d", name, len(b), r.Size())
	}
	return b
}

func names(t *testing.T, s snapshot.Store, dir string) []string {
	t.Helper()
	ents, err := s.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name
		if e.Dir {
			n += "/"
		}
		out = append(out, n)
	}
	return out
}

func TestStores(t *testing.T) {
	big := make([]byte, 3*4096+100) // several HDFS blocks
	for i := range big {
		big[i] = byte(rand.N(256))
	}
	for kind, s := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			checkPutListGet(t, s, big)
			checkConcurrentReadAt(t, s, big)
			checkCommitAbort(t, s)
			checkRemove(t, s)
			checkBadNames(t, s)
		})
	}
}

// checkPutListGet writes files in snap-1 (big among them) and snap-2 of
// the empty store s, lists and reads them back.
func checkPutListGet(t *testing.T, s snapshot.Store, big []byte) {
	put(t, s, "snap-1/manifest.json", []byte(`{"version":1}`))
	put(t, s, "snap-1/table-0/shard-0.sst", big)
	put(t, s, "snap-2/x", nil)
	if got := names(t, s, ""); !slices.Equal(got, []string{"snap-1/", "snap-2/"}) {
		t.Errorf("List(root) = %q", got)
	}
	if got := names(t, s, "snap-1"); !slices.Equal(got, []string{"manifest.json", "table-0/"}) {
		t.Errorf("List(snap-1) = %q", got)
	}
	ents, _ := s.List("snap-1/table-0")
	if len(ents) != 1 || ents[0].Size != int64(len(big)) {
		t.Errorf("List(snap-1/table-0) = %+v", ents)
	}
	if got := get(t, s, "snap-1/table-0/shard-0.sst"); !bytes.Equal(got, big) {
		t.Errorf("read back %d bytes, not what was written", len(got))
	}
	if got := get(t, s, "snap-2/x"); len(got) != 0 {
		t.Errorf("empty file reads %d bytes", len(got))
	}
}

// checkConcurrentReadAt reads big, written by checkPutListGet, with ReadAt
// from several goroutines, across block boundaries, and over its end.
func checkConcurrentReadAt(t *testing.T, s snapshot.Store, big []byte) {
	r, err := s.Open("snap-1/table-0/shard-0.sst")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 20 {
				off := rng.IntN(len(big))
				n := rng.IntN(len(big) - off + 1)
				b := make([]byte, n)
				if m, err := r.ReadAt(b, int64(off)); m != n || (err != nil && err != io.EOF) || !bytes.Equal(b, big[off:off+n]) {
					t.Errorf("ReadAt(%d bytes at %d) = %d, %v", n, off, m, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b := make([]byte, 10)
	if n, err := r.ReadAt(b, int64(len(big))-4); n != 4 || err != io.EOF {
		t.Errorf("ReadAt over the end = %d, %v; want 4, EOF", n, err)
	}
	r.Close()
}

// checkCommitAbort checks that a file appears only on Commit, that Abort
// leaves nothing and that Commit replaces an existing file.
func checkCommitAbort(t *testing.T, s snapshot.Store) {
	// A file appears only on Commit; Abort leaves nothing.
	w, err := s.Create("snap-3/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("partial"))
	if _, err := s.Open("snap-3/manifest.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open before Commit = %v, want ErrNotExist", err)
	}
	if got := names(t, s, "snap-3"); len(got) != 0 {
		t.Errorf("List shows an uncommitted file: %q", got)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open("snap-3/manifest.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after Abort = %v, want ErrNotExist", err)
	}
	if err := w.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}

	// Commit replaces an existing file.
	put(t, s, "snap-1/manifest.json", []byte(`{"version":2}`))
	if got := get(t, s, "snap-1/manifest.json"); string(got) != `{"version":2}` {
		t.Errorf("after replacing: %q", got)
	}
}

// checkRemove removes snap-1 twice, after checkCommitAbort: Remove is
// recursive and idempotent.
func checkRemove(t *testing.T, s snapshot.Store) {
	for range 2 {
		if err := s.Remove("snap-1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := names(t, s, ""); !slices.Equal(got, []string{"snap-2/", "snap-3/"}) {
		t.Errorf("after Remove: %q", got)
	}
	if _, err := s.List("snap-1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List of a removed directory = %v, want ErrNotExist", err)
	}
	if _, err := s.Open("snap-2"); err == nil {
		t.Error("Open of a directory succeeded")
	}
}

// checkBadNames checks that names that are not clean relative paths are
// refused.
func checkBadNames(t *testing.T, s snapshot.Store) {
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a/", ".", ".."} {
		if _, err := s.Create(bad); !errors.Is(err, snapshot.ErrBadName) {
			t.Errorf("Create(%q) = %v, want ErrBadName", bad, err)
		}
	}
	for _, bad := range []string{"", "../x"} {
		if err := s.Remove(bad); !errors.Is(err, snapshot.ErrBadName) {
			t.Errorf("Remove(%q) = %v, want ErrBadName", bad, err)
		}
	}
}

// TestHDFSStoreCorruption: a snapshot file with a damaged block is an
// error, through Read and ReadAt alike.
func TestHDFSStoreCorruption(t *testing.T) {
	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := snapshot.OpenHDFS(hdfsconn.FormatURI(srv.NamenodeAddr(), "/snaps"), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*4096/16)
	for b := range 3 {
		name := fmt.Sprintf("f%d", b)
		put(t, s, name, data)
		if err := srv.CorruptBlock("/snaps/"+name, b); err != nil {
			t.Fatal(err)
		}
		r, err := s.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(r); err == nil {
			t.Errorf("block %d corrupt: ReadAll succeeded", b)
		}
		if _, err := r.ReadAt(make([]byte, len(data)), 0); err == nil || err == io.EOF {
			t.Errorf("block %d corrupt: ReadAt = %v, want a checksum error", b, err)
		}
		r.Close()
	}
	if _, err := snapshot.OpenStore("hdfs:///nohost", ""); !errors.Is(err, hdfsconn.ErrBadURI) {
		t.Errorf("OpenStore of a bad URI = %v", err)
	}
}
