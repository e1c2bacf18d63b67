package hdfstest

import (
	"testing"
	"time"
)

// nsScript is what the steps of TestNamespaceScript act on: the I/O-free
// namespace, the replicas the datanodes finalized, the blocks the
// namespace dropped and the last block it allocated.
type nsScript struct {
	t        *testing.T
	t0       time.Time
	ns       *namespace
	replicas map[uint64]uint64 // block id -> finalized length
	dropped  []uint64
	last     blockInfo
}

// nsStep is one step of the script: the Java exception class it must end
// with ("" for success).
type nsStep struct {
	name string
	do   func() error
	want string
}

func (s *nsScript) replicaOK(id, n uint64) bool { l, ok := s.replicas[id]; return ok && l == n }

func (s *nsScript) create(p, client string, flag uint32, createParent bool) func() error {
	return func() error {
		_, d, err := s.ns.create(createArgs{path: p, perm: 0o644, user: "u", clientName: client, flag: flag,
			createParent: createParent, replication: 1, blockSize: 1024}, s.t0)
		s.dropped = append(s.dropped, d...)
		return err
	}
}

func (s *nsScript) addBlock(p, client string, prev *blockInfo) func() error {
	return func() error {
		lb, err := s.ns.addBlock(p, 0, client, prev)
		if err == nil {
			s.last = lb.blockInfo
		}
		return err
	}
}

// addBlockAfterLast adds a block after the last one allocated, as it is
// when the step runs.
func (s *nsScript) addBlockAfterLast(p, client string) func() error {
	return func() error { prev := s.last; return s.addBlock(p, client, &prev)() }
}

// complete commits the last allocated block with n bytes, or no block if
// n < 0; want is whether the file must then be complete.
func (s *nsScript) complete(p, client string, n int64, want bool) func() error {
	return func() error {
		var l *blockInfo
		if n >= 0 {
			l = &blockInfo{id: s.last.id, genStamp: s.last.genStamp, numBytes: uint64(n)}
		}
		done, d, err := s.ns.complete(p, 0, client, l, s.replicaOK, s.t0)
		s.dropped = append(s.dropped, d...)
		if err == nil && done != want {
			s.t.Errorf("complete(%s) = %v, want %v", p, done, want)
		}
		return err
	}
}

// written says the datanode finalized the last block with n bytes.
func (s *nsScript) written(n uint64) func() error {
	return func() error { s.replicas[s.last.id] = n; s.last.numBytes = n; return nil }
}

func (s *nsScript) rename(src, dst string, overwrite bool) func() error {
	return func() error {
		d, err := s.ns.rename(src, dst, overwrite, s.t0)
		s.dropped = append(s.dropped, d...)
		return err
	}
}

func (s *nsScript) del(p string, recursive, want bool) func() error {
	return func() error {
		ok, d, err := s.ns.delete(p, recursive, s.t0)
		s.dropped = append(s.dropped, d...)
		if err == nil && ok != want {
			s.t.Errorf("delete(%s) = %v, want %v", p, ok, want)
		}
		return err
	}
}

func (s *nsScript) mkdirs(p string, parents bool) func() error {
	return func() error { return s.ns.mkdirs(p, 0o755, "u", parents, s.t0) }
}

func (s *nsScript) length(p string, want uint64) func() error {
	return func() error {
		st, ok, err := s.ns.stat(p)
		if err == nil && (!ok || st.length != want) {
			s.t.Errorf("stat(%s) = %+v, %v; want length %d", p, st, ok, want)
		}
		return err
	}
}

// steps is the scenario: directories, files written block by block and
// completed, renames and deletes, with the errors of each misuse.
func (s *nsScript) steps() []nsStep {
	return []nsStep{
		{"mkdirs /a/b", s.mkdirs("/a/b", true), ""},
		{"mkdirs existing", s.mkdirs("/a/b", false), ""},
		{"mkdirs without parent", s.mkdirs("/x/y", false), excFileNotFound},
		{"relative path", s.mkdirs("a", true), excInvalidPath},
		{"dot-dot path", s.mkdirs("/a/../b", true), excInvalidPath},
		{"create /a/f", s.create("/a/f", "c1", createFlagCreate, false), ""},
		{"create again", s.create("/a/f", "c1", createFlagCreate|createFlagOverwrite, false), excAlreadyBeingCreated},
		{"create over a directory", s.create("/a/b", "c1", createFlagCreate, false), excFileAlreadyExists},
		{"create without parent", s.create("/n/f", "c1", createFlagCreate, false), excFileNotFound},
		{"create with parents", s.create("/n/m/f", "c9", createFlagCreate, true), ""},
		{"create under a file", s.create("/a/f/g", "c1", createFlagCreate, true), excParentNotDirectory},
		{"mkdirs under a file", s.mkdirs("/a/f/g", true), excParentNotDirectory},
		{"mkdirs over a file", s.mkdirs("/a/f", true), excFileAlreadyExists},
		{"addBlock by another client", s.addBlock("/a/f", "c2", nil), excLeaseExpired},
		{"addBlock 1", s.addBlock("/a/f", "c1", nil), ""},
		{"block 1 written", s.written(1024), ""},
		{"addBlock without previous", s.addBlock("/a/f", "c1", nil), excIO},
		{"addBlock 2", s.addBlockAfterLast("/a/f", "c1"), ""},
		{"complete before the replica exists", s.complete("/a/f", "c1", 10, false), ""},
		{"still open", s.length("/a/f", 1034), ""},
		{"block 2 written", s.written(10), ""},
		{"complete", s.complete("/a/f", "c1", 10, true), ""},
		{"complete again", s.complete("/a/f", "c1", -1, true), ""},
		{"length", s.length("/a/f", 1034), ""},
		{"addBlock after complete", s.addBlock("/a/f", "c1", nil), excLeaseExpired},
		{"create existing", s.create("/a/f", "c1", createFlagCreate, false), excFileAlreadyExists},
		{"create /a/e", s.create("/a/e", "c1", createFlagCreate, false), ""},
		{"addBlock /a/e", s.addBlock("/a/e", "c1", nil), ""},
		{"complete with an empty last block", s.complete("/a/e", "c1", 0, true), ""},
		{"empty block dropped", s.length("/a/e", 0), ""},
		{"rename onto existing file", s.rename("/a/e", "/a/f", false), excFileAlreadyExists},
		{"rename onto itself", s.rename("/a/f", "/a/f", true), excFileAlreadyExists},
		{"rename file onto directory", s.rename("/a/f", "/a/b", true), excIO},
		{"rename into own subtree", s.rename("/a", "/a/b/c", true), excIO},
		{"rename root", s.rename("/", "/z", true), excIO},
		{"rename to missing parent", s.rename("/a/f", "/q/f", true), excFileNotFound},
		{"rename missing", s.rename("/a/zz", "/a/yy", true), excFileNotFound},
		{"rename with overwrite", s.rename("/a/e", "/a/f", true), ""},
		{"overwritten length", s.length("/a/f", 0), ""},
		{"delete non-empty", s.del("/a", false, false), excPathIsNotEmptyDir},
		{"delete missing", s.del("/nope", false, false), ""},
		{"delete recursive", s.del("/a", true, true), ""},
	}
}

// TestNamespaceScript drives the I/O-free namespace through a scenario,
// checking each step's Java exception class ("" for success).
func TestNamespaceScript(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	s := &nsScript{t: t, t0: t0, ns: newNamespace(t0, "hdfs", "supergroup"), replicas: map[uint64]uint64{}}
	for i, step := range s.steps() {
		err := step.do()
		got := ""
		if err != nil {
			got, _ = exceptionOf(err)
		}
		if got != step.want {
			t.Fatalf("step %d %q: error %v, want exception %q", i, step.name, err, step.want)
		}
	}
	ns, dropped := s.ns, s.dropped
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
