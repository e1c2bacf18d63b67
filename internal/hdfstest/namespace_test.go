package hdfstest

import (
	"testing"
	"time"
)

// TestNamespaceScript drives the I/O-free namespace through a scenario,
// checking each step's Java exception class ("" for success).
func TestNamespaceScript(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	ns := newNamespace(t0, "hdfs", "supergroup")
	replicas := map[uint64]uint64{} // block id -> finalized length
	replicaOK := func(id, n uint64) bool { l, ok := replicas[id]; return ok && l == n }
	var dropped []uint64

	create := func(p, client string, flag uint32, createParent bool) func() error {
		return func() error {
			_, d, err := ns.create(createArgs{path: p, perm: 0o644, user: "u", clientName: client, flag: flag,
				createParent: createParent, replication: 1, blockSize: 1024}, t0)
			dropped = append(dropped, d...)
			return err
		}
	}
	var last blockInfo
	addBlock := func(p, client string, prev *blockInfo) func() error {
		return func() error {
			lb, err := ns.addBlock(p, 0, client, prev)
			if err == nil {
				last = lb.blockInfo
			}
			return err
		}
	}
	// complete commits the last allocated block with n bytes, or no block
	// if n < 0.
	complete := func(p, client string, n int64, want bool) func() error {
		return func() error {
			var l *blockInfo
			if n >= 0 {
				l = &blockInfo{id: last.id, genStamp: last.genStamp, numBytes: uint64(n)}
			}
			done, d, err := ns.complete(p, 0, client, l, replicaOK, t0)
			dropped = append(dropped, d...)
			if err == nil && done != want {
				t.Errorf("complete(%s) = %v, want %v", p, done, want)
			}
			return err
		}
	}
	written := func(n uint64) func() error { // the datanode finalized the last block with n bytes
		return func() error { replicas[last.id] = n; last.numBytes = n; return nil }
	}
	rename := func(src, dst string, overwrite bool) func() error {
		return func() error {
			d, err := ns.rename(src, dst, overwrite, t0)
			dropped = append(dropped, d...)
			return err
		}
	}
	del := func(p string, recursive, want bool) func() error {
		return func() error {
			ok, d, err := ns.delete(p, recursive, t0)
			dropped = append(dropped, d...)
			if err == nil && ok != want {
				t.Errorf("delete(%s) = %v, want %v", p, ok, want)
			}
			return err
		}
	}
	mkdirs := func(p string, parents bool) func() error {
		return func() error { return ns.mkdirs(p, 0o755, "u", parents, t0) }
	}
	length := func(p string, want uint64) func() error {
		return func() error {
			st, ok, err := ns.stat(p)
			if err == nil && (!ok || st.length != want) {
				t.Errorf("stat(%s) = %+v, %v; want length %d", p, st, ok, want)
			}
			return err
		}
	}

	for i, step := range []struct {
		name string
		do   func() error
		want string
	}{
		{"mkdirs /a/b", mkdirs("/a/b", true), ""},
		{"mkdirs existing", mkdirs("/a/b", false), ""},
		{"mkdirs without parent", mkdirs("/x/y", false), excFileNotFound},
		{"relative path", mkdirs("a", true), excInvalidPath},
		{"dot-dot path", mkdirs("/a/../b", true), excInvalidPath},
		{"create /a/f", create("/a/f", "c1", createFlagCreate, false), ""},
		{"create again", create("/a/f", "c1", createFlagCreate|createFlagOverwrite, false), excAlreadyBeingCreated},
		{"create over a directory", create("/a/b", "c1", createFlagCreate, false), excFileAlreadyExists},
		{"create without parent", create("/n/f", "c1", createFlagCreate, false), excFileNotFound},
		{"create with parents", create("/n/m/f", "c9", createFlagCreate, true), ""},
		{"create under a file", create("/a/f/g", "c1", createFlagCreate, true), excParentNotDirectory},
		{"mkdirs under a file", mkdirs("/a/f/g", true), excParentNotDirectory},
		{"mkdirs over a file", mkdirs("/a/f", true), excFileAlreadyExists},
		{"addBlock by another client", addBlock("/a/f", "c2", nil), excLeaseExpired},
		{"addBlock 1", addBlock("/a/f", "c1", nil), ""},
		{"block 1 written", written(1024), ""},
		{"addBlock without previous", addBlock("/a/f", "c1", nil), excIO},
		{"addBlock 2", func() error { prev := last; return addBlock("/a/f", "c1", &prev)() }, ""},
		{"complete before the replica exists", complete("/a/f", "c1", 10, false), ""},
		{"still open", length("/a/f", 1034), ""},
		{"block 2 written", written(10), ""},
		{"complete", complete("/a/f", "c1", 10, true), ""},
		{"complete again", complete("/a/f", "c1", -1, true), ""},
		{"length", length("/a/f", 1034), ""},
		{"addBlock after complete", addBlock("/a/f", "c1", nil), excLeaseExpired},
		{"create existing", create("/a/f", "c1", createFlagCreate, false), excFileAlreadyExists},
		{"create /a/e", create("/a/e", "c1", createFlagCreate, false), ""},
		{"addBlock /a/e", addBlock("/a/e", "c1", nil), ""},
		{"complete with an empty last block", complete("/a/e", "c1", 0, true), ""},
		{"empty block dropped", length("/a/e", 0), ""},
		{"rename onto existing file", rename("/a/e", "/a/f", false), excFileAlreadyExists},
		{"rename onto itself", rename("/a/f", "/a/f", true), excFileAlreadyExists},
		{"rename file onto directory", rename("/a/f", "/a/b", true), excIO},
		{"rename into own subtree", rename("/a", "/a/b/c", true), excIO},
		{"rename root", rename("/", "/z", true), excIO},
		{"rename to missing parent", rename("/a/f", "/q/f", true), excFileNotFound},
		{"rename missing", rename("/a/zz", "/a/yy", true), excFileNotFound},
		{"rename with overwrite", rename("/a/e", "/a/f", true), ""},
		{"overwritten length", length("/a/f", 0), ""},
		{"delete non-empty", del("/a", false, false), excPathIsNotEmptyDir},
		{"delete missing", del("/nope", false, false), ""},
		{"delete recursive", del("/a", true, true), ""},
	} {
		err := step.do()
		got := ""
		if err != nil {
			got, _ = exceptionOf(err)
		}
		if got != step.want {
			t.Fatalf("step %d %q: error %v, want exception %q", i, step.name, err, step.want)
		}
	}
	if _, ok, _ := ns.stat("/a"); ok {
		t.Error("/a survived its deletion")
	}
	// The overwrite dropped /a/f's two blocks; the empty block was dropped by
	// complete; nothing else held blocks.
	want := map[uint64]bool{firstBlockID: true, firstBlockID + 1: true, firstBlockID + 2: true}
	if len(dropped) != len(want) {
		t.Errorf("dropped blocks %v, want %v", dropped, want)
	}
	for _, id := range dropped {
		if !want[id] {
			t.Errorf("dropped unexpected block %d", id)
		}
	}
	if len(ns.blockFile) != 0 {
		t.Errorf("blocks still indexed: %v", ns.blockFile)
	}
	if _, ok, _ := ns.stat("/n/m/f"); !ok {
		t.Error("/n/m/f missing")
	}
}

func TestBlockLocationsRange(t *testing.T) {
	ns := newNamespace(time.Unix(0, 0), "hdfs", "supergroup")
	if _, _, err := ns.create(createArgs{path: "/f", user: "u", clientName: "c", flag: createFlagCreate, replication: 1, blockSize: 100}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	var prev *blockInfo
	for range 3 {
		lb, err := ns.addBlock("/f", 0, "c", prev)
		if err != nil {
			t.Fatal(err)
		}
		b := lb.blockInfo
		b.numBytes = 100
		prev = &b
	}
	if _, _, err := ns.complete("/f", 0, "c", prev, func(uint64, uint64) bool { return true }, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		off, n  uint64
		offsets []uint64
	}{
		{0, 300, []uint64{0, 100, 200}},
		{0, 100, []uint64{0}},
		{99, 2, []uint64{0, 100}},
		{150, 0, []uint64{100}}, // length 0: the block holding offset
		{250, 1000, []uint64{200}},
		{300, 10, nil},
	} {
		fl, err := ns.blockLocations("/f", tc.off, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, b := range fl.blocks {
			got = append(got, b.offset)
		}
		if len(got) != len(tc.offsets) || fl.length != 300 || fl.last == nil || fl.last.offset != 200 || fl.underConstruction {
			t.Errorf("blockLocations(%d, %d) = %v (%+v), want offsets %v", tc.off, tc.n, got, fl, tc.offsets)
			continue
		}
		for i := range got {
			if got[i] != tc.offsets[i] {
				t.Errorf("blockLocations(%d, %d) offsets %v, want %v", tc.off, tc.n, got, tc.offsets)
			}
		}
	}
}
