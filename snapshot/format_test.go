package snapshot_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/snapshot"
)

// row is a test row: its id and a value derived from it and the snapshot.
func rowValue(seq, id uint64, dim int) []byte {
	b := make([]byte, 4*dim)
	for i := range dim {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id*31+seq*7+uint64(i)))
	}
	return b
}

// writeSnapshot writes snapshot seq: table "emb" split over shards by id
// modulo, a dense file and reader positions; it returns the rows by id.
func writeSnapshot(t *testing.T, s snapshot.Store, seq uint64, shards, rows int) map[uint64][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seq, 3))
	all := map[uint64][]byte{}
	perShard := make([][]uint64, shards)
	for range rows {
		id := rng.Uint64()
		if _, dup := all[id]; dup {
			continue
		}
		all[id] = rowValue(seq, id, 6)
		perShard[id%uint64(shards)] = append(perShard[id%uint64(shards)], id)
	}
	m := &snapshot.Manifest{Seq: seq, Version: seq + 1, Shards: shards,
		Readers: map[string]json.RawMessage{"kafka://ctr/0": json.RawMessage(`{"offset":42}`)},
		Config:  json.RawMessage(`{"model":{"hidden":[8]}}`)}
	entry := snapshot.TableEntry{Name: "emb", Spec: json.RawMessage(`{"dim":6}`)}
	for k, ids := range perShard {
		slices.Sort(ids)
		tw, err := snapshot.CreateTable(s, seq, "emb", k)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if err := tw.Add(id, all[id]); err != nil {
				t.Fatal(err)
			}
		}
		f, err := tw.Close()
		if err != nil {
			t.Fatal(err)
		}
		if f.Rows != int64(len(ids)) {
			t.Fatalf("shard %d: %d rows in the file meta, wrote %d", k, f.Rows, len(ids))
		}
		entry.Files = append(entry.Files, f)
	}
	m.Tables = append(m.Tables, entry)
	dense, err := snapshot.WriteFile(s, seq, "dense/mlp", []byte("dense parameters"))
	if err != nil {
		t.Fatal(err)
	}
	m.Dense = append(m.Dense, snapshot.DenseEntry{Name: "mlp", Len: 4, File: dense})
	if err := snapshot.Commit(s, m); err != nil {
		t.Fatal(err)
	}
	return all
}

// readTable reads every row of every shard file of the manifest's table.
func readTable(t *testing.T, s snapshot.Store, m *snapshot.Manifest) map[uint64][]byte {
	t.Helper()
	got := map[uint64][]byte{}
	for _, f := range m.Tables[0].Files {
		r, err := snapshot.OpenTable(s, m.Seq, f)
		if err != nil {
			t.Fatal(err)
		}
		var last uint64
		n := 0
		for r.Next() {
			id, v := r.Row()
			if n > 0 && id <= last {
				t.Fatalf("%s: id %d after %d", f.Name, id, last)
			}
			last = id
			n++
			got[id] = slices.Clone(v)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	return got
}

// overwrite replaces file name of snapshot seq with edit(its bytes).
func overwrite(t *testing.T, s snapshot.Store, name string, edit func([]byte) []byte) {
	t.Helper()
	r, err := s.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, name, edit(b))
}

func TestSnapshotFormat(t *testing.T) {
	for kind, s := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			want := checkLatestReadsBack(t, s)
			m := checkLatestFallsBack(t, s, want)
			checkDamagedTable(t, s, m)
			checkPrune(t, s)
			checkTableWriterErrors(t, s)
		})
	}
}

// checkLatestReadsBack writes snapshots 1-4 of 2 shards into the empty
// store s and reads the newest back. It returns the rows of each.
func checkLatestReadsBack(t *testing.T, s snapshot.Store) map[uint64]map[uint64][]byte {
	if _, _, err := snapshot.Latest(s); !errors.Is(err, snapshot.ErrNoSnapshot) {
		t.Fatalf("Latest of an empty store = %v, want ErrNoSnapshot", err)
	}
	want := map[uint64]map[uint64][]byte{}
	for seq := uint64(1); seq <= 4; seq++ {
		want[seq] = writeSnapshot(t, s, seq, 2, 3000)
	}
	m, skipped, err := snapshot.Latest(s)
	if err != nil || m.Seq != 4 || len(skipped) != 0 {
		t.Fatalf("Latest = %v, %v, %v; want snapshot 4", m, skipped, err)
	}
	if m.Version != 5 || string(m.Readers["kafka://ctr/0"]) != `{"offset":42}` || m.Shards != 2 || len(m.Dense) != 1 {
		t.Errorf("manifest read back: %+v", m)
	}
	got := readTable(t, s, m)
	if len(got) != len(want[4]) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(want[4]))
	}
	for id, v := range want[4] {
		if !slices.Equal(got[id], v) {
			t.Fatalf("row %d: %x, want %x", id, got[id], v)
		}
	}
	return want
}

// checkLatestFallsBack damages snapshots 4 and 3 of checkLatestReadsBack
// and starts 5: Latest passes over them to snapshot 2, which it returns.
func checkLatestFallsBack(t *testing.T, s snapshot.Store, want map[uint64]map[uint64][]byte) *snapshot.Manifest {
	// A snapshot still being written (no manifest) is passed over.
	tw, err := snapshot.CreateTable(s, 5, "emb", 0)
	if err != nil {
		t.Fatal(err)
	}
	tw.Add(1, []byte("x"))
	if _, err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// Snapshot 4 truncated, snapshot 3's manifest altered: Latest
	// falls back to 2 and says why it passed over 5, 4 and 3.
	m4, _ := snapshot.ReadManifest(s, 4)
	overwrite(t, s, path.Join(snapshot.Dir(4), m4.Tables[0].Files[1].Name), func(b []byte) []byte { return b[:len(b)/2] })
	overwrite(t, s, path.Join(snapshot.Dir(3), snapshot.ManifestName), func(b []byte) []byte {
		var m snapshot.Manifest
		json.Unmarshal(b, &m)
		m.Version = 99 // valid JSON, wrong checksum
		out, _ := json.Marshal(&m)
		return out
	})
	m, skipped, err := snapshot.Latest(s)
	if err != nil || m.Seq != 2 || len(skipped) != 3 {
		t.Fatalf("Latest = %v, %v, %v; want snapshot 2 after passing over 3 snapshots", m, skipped, err)
	}
	for _, e := range skipped {
		if !errors.Is(e, snapshot.ErrCorrupt) {
			t.Errorf("skipped for %v: does not wrap ErrCorrupt", e)
		}
		t.Logf("passed over: %v", e)
	}
	if got := readTable(t, s, m); len(got) != len(want[2]) {
		t.Errorf("snapshot 2: %d rows, want %d", len(got), len(want[2]))
	}
	return m
}

// checkDamagedTable damages a table file of snapshot 2, m: Verify finds it,
// and so do the sorted table's own checksums when read without Verify.
func checkDamagedTable(t *testing.T, s snapshot.Store, m *snapshot.Manifest) {
	overwrite(t, s, path.Join(snapshot.Dir(2), m.Tables[0].Files[0].Name), func(b []byte) []byte {
		b[100] ^= 0xff
		return b
	})
	if err := snapshot.Verify(s, m); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("Verify of a damaged file = %v", err)
	}
	if r, err := snapshot.OpenTable(s, 2, m.Tables[0].Files[0]); err == nil {
		for r.Next() {
		}
		if !errors.Is(r.Err(), snapshot.ErrCorrupt) {
			t.Errorf("reading a damaged table ends with %v, want ErrCorrupt", r.Err())
		}
		r.Close()
	}
}

// checkPrune prunes the store of checkLatestFallsBack, after a complete
// snapshot 6.
func checkPrune(t *testing.T, s snapshot.Store) {
	// Keep the 2 newest complete snapshots (the manifest decides
	// completeness, so 4 counts); incomplete ones (5, and 3 with its
	// bad manifest) older than the newest complete one go too.
	writeSnapshot(t, s, 6, 3, 100)
	removed, err := snapshot.Prune(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	seqs, _ := snapshot.Snapshots(s)
	t.Logf("removed %v, left %v", removed, seqs)
	if !slices.Equal(seqs, []uint64{6, 4}) || !slices.Equal(removed, []uint64{5, 3, 2, 1}) {
		t.Errorf("after Prune(2): removed %v, left %v; want [5 3 2 1] removed, [6 4] left", removed, seqs)
	}
	// A snapshot being written, newer than every complete one, stays.
	tw, err := snapshot.CreateTable(s, 8, "emb", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if removed, err := snapshot.Prune(s, 2); err != nil || len(removed) != 0 {
		t.Errorf("Prune with a snapshot in progress removed %v, %v", removed, err)
	}
	if _, err := snapshot.Prune(s, 0); err == nil {
		t.Error("Prune(0) succeeded")
	}
}

// checkTableWriterErrors checks the refusals of a table writer: ids out of
// order, a table name with a slash; Abort leaves nothing behind.
func checkTableWriterErrors(t *testing.T, s snapshot.Store) {
	// Ids must strictly increase.
	tw, err := snapshot.CreateTable(s, 7, "emb", 1)
	if err != nil {
		t.Fatal(err)
	}
	tw.Add(5, nil)
	if err := tw.Add(5, nil); !errors.Is(err, snapshot.ErrOrder) {
		t.Errorf("a repeated id = %v, want ErrOrder", err)
	}
	tw.Abort()
	if ents, err := s.List(path.Join(snapshot.Dir(7), "tables/emb")); err != nil || len(ents) != 0 {
		t.Errorf("after Abort: %v, %v", ents, err)
	}
	if _, err := snapshot.CreateTable(s, 7, "a/b", 0); !errors.Is(err, snapshot.ErrBadName) {
		t.Errorf("table name with a slash = %v", err)
	}
}

func ExampleDir() {
	fmt.Println(snapshot.Dir(42))
	// Output: snap-00000000000000000042
}

// A streamed raw file reads back through OpenFile, which refuses a file
// whose size or bytes differ from its FileMeta; an aborted one is absent.
func TestStreamedFile(t *testing.T) {
	for kind, s := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			data := bytes.Repeat([]byte("slide layer bytes "), 200000) // 3.6 MB, several buffers
			w, err := snapshot.CreateFile(s, 7, "output/layer")
			if err != nil {
				t.Fatal(err)
			}
			for rest := data; len(rest) > 0; {
				k := min(len(rest), 77777)
				if _, err := w.Write(rest[:k]); err != nil {
					t.Fatal(err)
				}
				rest = rest[k:]
			}
			meta, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if meta.Size != int64(len(data)) || meta.Name != "output/layer" {
				t.Fatalf("meta %+v", meta)
			}
			read := func(f snapshot.FileMeta) ([]byte, error) {
				r, err := snapshot.OpenFile(s, 7, f)
				if err != nil {
					return nil, err
				}
				defer r.Close()
				return io.ReadAll(r)
			}
			got, err := read(meta)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, err %v", len(got), err)
			}
			if meta.CRC32C == "" || meta.SHA256 != "" {
				t.Fatalf("meta %+v: want a CRC-32C and no SHA-256", meta)
			}
			bad := meta
			bad.CRC32C = "00000000"
			if _, err := read(bad); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("read with another checksum: %v, want ErrCorrupt", err)
			}
			// A file named by a format-1 manifest (SHA-256) still reads,
			// and is checked against it; one with no checksum does not.
			old := meta
			old.CRC32C, old.SHA256 = "", fmt.Sprintf("%x", sha256.Sum256(data))
			if got, err := read(old); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read with its SHA-256: %d bytes, err %v", len(got), err)
			}
			old.SHA256 = strings.Repeat("0", 64)
			if _, err := read(old); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("read with another SHA-256: %v, want ErrCorrupt", err)
			}
			old.SHA256 = ""
			if _, err := read(old); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("read with no checksum: %v, want ErrCorrupt", err)
			}
			bad = meta
			bad.Size--
			if _, err := read(bad); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("read with another size: %v, want ErrCorrupt", err)
			}
			w, err = snapshot.CreateFile(s, 7, "output/dropped")
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data[:100])
			w.Abort()
			if _, err := read(snapshot.FileMeta{Name: "output/dropped"}); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("aborted file: %v, want fs.ErrNotExist", err)
			}
		})
	}
}

// TestCheckComplete: a manifest whose parts do not make a whole model is
// refused before it is committed: a shard's table file or dense range
// missing (a shard restarted empty wrote no rows), a required state entry
// missing.
func TestCheckComplete(t *testing.T) {
	whole := func() *snapshot.Manifest {
		return &snapshot.Manifest{Shards: 2,
			Tables:  []snapshot.TableEntry{{Name: "emb", Files: []snapshot.FileMeta{{Name: snapshot.TableName("emb", 0)}, {Name: snapshot.TableName("emb", 1)}}}},
			Dense:   []snapshot.DenseEntry{{Name: "mlp", Len: 10, Lo: 5, Hi: 10}, {Name: "mlp", Len: 10, Lo: 0, Hi: 5}},
			Readers: map[string]json.RawMessage{"reader/worker-0/checkpoint": json.RawMessage(`{}`)},
			Config:  json.RawMessage(`{}`)}
	}
	require := []string{"reader/worker-0/checkpoint", "job/config"}
	for _, tc := range []struct {
		name    string
		edit    func(m *snapshot.Manifest)
		require []string
		ok      bool
	}{
		{name: "whole", edit: func(*snapshot.Manifest) {}, require: require, ok: true},
		{name: "empty model", edit: func(m *snapshot.Manifest) { *m = snapshot.Manifest{Shards: 2} }, ok: true},
		{name: "old dense entries without ranges", edit: func(m *snapshot.Manifest) {
			m.Dense = []snapshot.DenseEntry{{Name: "mlp", Len: 10}}
		}, ok: true},
		{name: "no shards", edit: func(m *snapshot.Manifest) { m.Shards = 0 }},
		{name: "a shard's table file missing", edit: func(m *snapshot.Manifest) { m.Tables[0].Files = m.Tables[0].Files[:1] }},
		{name: "a table file twice", edit: func(m *snapshot.Manifest) { m.Tables[0].Files[1].Name = snapshot.TableName("emb", 0) }},
		{name: "parts of a shard", edit: func(m *snapshot.Manifest) {
			m.Tables[0].Files = append(m.Tables[0].Files, snapshot.FileMeta{Name: snapshot.TablePartName("emb", 1, 1)},
				snapshot.FileMeta{Name: snapshot.TablePartName("emb", 0, 2)})
		}, ok: true},
		{name: "a part without its shard's part 0", edit: func(m *snapshot.Manifest) {
			m.Tables[0].Files[1].Name = snapshot.TablePartName("emb", 1, 1)
		}},
		{name: "a part of a shard beyond the count", edit: func(m *snapshot.Manifest) {
			m.Tables[0].Files = append(m.Tables[0].Files, snapshot.FileMeta{Name: snapshot.TablePartName("emb", 2, 1)})
		}},
		{name: "a file of another name", edit: func(m *snapshot.Manifest) {
			m.Tables[0].Files = append(m.Tables[0].Files, snapshot.FileMeta{Name: "tables/emb/shard-0001.sst"})
		}},
		{name: "a dense range missing", edit: func(m *snapshot.Manifest) { m.Dense = m.Dense[:1] }},
		{name: "dense ranges overlap", edit: func(m *snapshot.Manifest) { m.Dense[0].Lo = 4 }},
		{name: "a checkpoint missing", edit: func(m *snapshot.Manifest) { m.Readers = nil }, require: require},
		{name: "the config missing", edit: func(m *snapshot.Manifest) { m.Config = nil }, require: require},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := whole()
			tc.edit(m)
			err := m.CheckComplete(tc.require, "job/config")
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, snapshot.ErrIncomplete)) {
				t.Fatalf("CheckComplete = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestPrunePinned: the newest pinned snapshot outlives the count when it
// is older than the newest keep; an older pinned one does not.
func TestPrunePinned(t *testing.T) {
	s, err := snapshot.OpenStore(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pinned := map[uint64]bool{2: true, 4: true}
	for seq := uint64(1); seq <= 7; seq++ {
		m := &snapshot.Manifest{Seq: seq, Version: 1, Shards: 1, Pinned: pinned[seq]}
		if err := snapshot.Commit(s, m); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := snapshot.Prune(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	seqs, _ := snapshot.Snapshots(s)
	if !slices.Equal(seqs, []uint64{7, 6, 4}) || !slices.Equal(removed, []uint64{5, 3, 2, 1}) {
		t.Errorf("Prune(2) with 2 and 4 pinned: removed %v, left %v; want [5 3 2 1] removed, [7 6 4] left", removed, seqs)
	}
	if m, err := snapshot.ReadManifest(s, 4); err != nil || !m.Pinned {
		t.Errorf("snapshot 4 reads back pinned %v, %v", m != nil && m.Pinned, err)
	}
	// Pinned among the newest: nothing on top.
	if err := snapshot.Commit(s, &snapshot.Manifest{Seq: 8, Version: 1, Shards: 1, Pinned: true}); err != nil {
		t.Fatal(err)
	}
	if removed, _ := snapshot.Prune(s, 2); !slices.Equal(removed, []uint64{6, 4}) {
		t.Errorf("Prune(2) with 8 pinned removed %v, want [6 4]", removed)
	}
	// A rollback to 7 removes what came after it.
	if removed, err := snapshot.RemoveAfter(s, 7); err != nil || !slices.Equal(removed, []uint64{8}) {
		t.Errorf("RemoveAfter(7) removed %v, %v; want [8]", removed, err)
	}
}

// TestTablePartNames: part 0 is the shard's TableName, the others carry
// their number, and TableFileShard reads the shard back from canonical
// names only.
func TestTablePartNames(t *testing.T) {
	for _, tc := range []struct{ shard, part int }{{0, 0}, {3, 0}, {3, 1}, {12, 999}, {123456, 1000}} {
		name := snapshot.TablePartName("emb", tc.shard, tc.part)
		if k, ok := snapshot.TableFileShard("emb", name); !ok || k != tc.shard {
			t.Errorf("TableFileShard(%q) = %d %v, want %d", name, k, ok, tc.shard)
		}
		if _, ok := snapshot.TableFileShard("emb2", name); ok {
			t.Errorf("%q is a file of table emb2", name)
		}
	}
	if got, want := snapshot.TablePartName("emb", 7, 0), snapshot.TableName("emb", 7); got != want {
		t.Errorf("part 0 = %q, want %q", got, want)
	}
	for _, name := range []string{"tables/emb/shard-00001-1.sst", "tables/emb/shard-1.sst", "tables/emb/shard-00001-000.sst",
		"tables/emb/shard-00001.sst.tmp", "tables/emb/shard--0001.sst", "tables/emb/shard-00001-0001.sst", "filters/emb/shard-00001"} {
		if k, ok := snapshot.TableFileShard("emb", name); ok {
			t.Errorf("TableFileShard(%q) = %d, want no shard", name, k)
		}
	}
}
