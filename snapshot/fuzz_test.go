package snapshot_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/snapshot"
)

// sampleManifest is a manifest as Commit writes it, for the seeds.
func sampleManifest(t testing.TB, s snapshot.Store) []byte {
	m := &snapshot.Manifest{Seq: 7, Version: 3, Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Shards: 2, Job: "job-1",
		Tables: []snapshot.TableEntry{{Name: "emb", Spec: json.RawMessage(`{"name":"emb","dim":8}`),
			Files: []snapshot.FileMeta{{Name: snapshot.TableName("emb", 0), Size: 100, CRC32C: "0a0b0c0d", Rows: 3},
				{Name: snapshot.TableName("emb", 1), Size: 10, SHA256: strings.Repeat("ab", 32)}},
			Admission: []snapshot.FileMeta{{Name: snapshot.FilterName("emb", 0), Size: 9, CRC32C: "00000000"}}}},
		Dense: []snapshot.DenseEntry{{Name: "mlp", Len: 10, Lo: 0, Hi: 10, Spec: json.RawMessage(`{"name":"mlp","size":10}`),
			File: snapshot.FileMeta{Name: "dense/mlp", Size: 40, CRC32C: "01020304"}}},
		Readers:  map[string]json.RawMessage{"reader/worker-0/checkpoint": json.RawMessage(`{"epoch":1,"applied":5}`)},
		Config:   json.RawMessage(`{"model":{"tables":[{"name":"emb","dim":8}]}}`),
		ShardMap: json.RawMessage(`{"version":3,"partitions":8,"shards":["a","b"],"addrs":["h:1","h:2"],"assign":[0,1,0,1,0,1,0,1]}`)}
	if err := snapshot.Commit(s, m); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(must(s.Open(path.Join(snapshot.Dir(7), snapshot.ManifestName))))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// FuzzReadManifest reads arbitrary bytes as a snapshot's manifest: as they
// are (almost always refused: the checksum) and resealed, with the
// checksum of what they decode to, so that the checks after the checksum
// are reached too. No input panics; every refusal wraps ErrCorrupt; a
// manifest read back is the one written, its embedded JSON compact (as
// compact promises); and the checks a restore runs on it next
// (CheckComplete, Verify of files that are not there, Latest) return
// errors, not panics.
func FuzzReadManifest(f *testing.F) {
	f.Add(sampleManifest(f, snapshot.NewMemStore()))
	f.Add([]byte(`{"format":2,"seq":7,"tables":null,"checksum":""}`))
	f.Add([]byte(`{"format":1,"seq":7,"shards":-1,"tables":[{"name":"t","files":[{"name":"..","size":-1}]}],"dense":[{"name":"d","len":3,"hi":2,"file":{"name":""}}],"checksum":"x"}`))
	f.Add([]byte(`{"format":2,"seq":7,"tables":[],"config":{ "a" : [1, 2] },"readers":{"k":null},"checksum":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := snapshot.NewMemStore()
		name := path.Join(snapshot.Dir(7), snapshot.ManifestName)
		put(t, s, name, b)
		if m, err := snapshot.ReadManifest(s, 7); err != nil {
			if !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("ReadManifest refused %q with %v, not ErrCorrupt", b, err)
			}
		} else {
			checkRestorable(t, s, m)
		}
		// Resealed: decoded as ReadManifest decodes, with its checksum.
		var m snapshot.Manifest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if dec.Decode(&m) != nil {
			return
		}
		m.Checksum = ""
		sum, err := snapshot.JSONSum(&m)
		if err != nil {
			return // embedded JSON that json.Marshal refuses: Commit would fail
		}
		m.Checksum = sum
		name = path.Join(m.Dir(), snapshot.ManifestName)
		indented, err := json.MarshalIndent(&m, "", "  ") // as CommitJSON writes it
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, name, indented)
		got, err := snapshot.ReadManifest(s, m.Seq)
		if m.Format < 1 || m.Format > snapshot.FormatVersion {
			if !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("a manifest of format %d read as %v", m.Format, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("a resealed manifest was refused: %v\n%s", err, indented)
		}
		want := compacted(m)
		got.Created, want.Created = time.Time{}, time.Time{}
		if !reflect.DeepEqual(normal(got), normal(&want)) {
			t.Fatalf("manifest written as\n%s\nread back as\n%+v\nwant\n%+v", indented, got, want)
		}
		checkRestorable(t, s, got)
	})
}

// compacted is m with its embedded JSON as a reader should see it:
// compact, and with the characters json.Marshal escapes (<, >, &, U+2028,
// U+2029) escaped.
func compacted(m snapshot.Manifest) snapshot.Manifest {
	m.Tables = slices.Clone(m.Tables)
	for i := range m.Tables {
		canon(&m.Tables[i].Spec)
	}
	m.Dense = slices.Clone(m.Dense)
	for i := range m.Dense {
		canon(&m.Dense[i].Spec)
	}
	if m.Readers != nil {
		r := map[string]json.RawMessage{}
		for k, v := range m.Readers {
			canon(&v)
			r[k] = v
		}
		m.Readers = r
	}
	canon(&m.Config)
	canon(&m.ShardMap)
	return m
}

func canon(r *json.RawMessage) {
	if len(*r) > 0 {
		*r = must(json.Marshal(*r))
	}
}

// normal makes the empty slices and maps that JSON's omitempty leaves out
// nil, so that a manifest compares equal to its round trip.
func normal(m *snapshot.Manifest) *snapshot.Manifest {
	c := *m
	c.Tables = slices.Clone(c.Tables)
	for i := range c.Tables {
		if len(c.Tables[i].Admission) == 0 {
			c.Tables[i].Admission = nil
		}
		if len(c.Tables[i].Spec) == 0 {
			c.Tables[i].Spec = nil
		}
	}
	c.Dense = slices.Clone(c.Dense)
	for i := range c.Dense {
		if len(c.Dense[i].Spec) == 0 {
			c.Dense[i].Spec = nil
		}
	}
	if len(c.Dense) == 0 {
		c.Dense = nil
	}
	if len(c.Readers) == 0 {
		c.Readers = nil
	}
	if len(c.Config) == 0 {
		c.Config = nil
	}
	if len(c.ShardMap) == 0 {
		c.ShardMap = nil
	}
	return &c
}

// checkRestorable runs what a restore runs on a manifest it read: none may
// panic, and with its files absent each is an error.
func checkRestorable(t *testing.T, s snapshot.Store, m *snapshot.Manifest) {
	_ = m.CheckComplete([]string{"reader/worker-0/checkpoint"}, "config")
	if err := snapshot.Verify(s, m); err == nil && len(m.Tables)+len(m.Dense) > 0 && hasFile(m) {
		t.Fatalf("Verify passed a manifest whose files are not there: %+v", m)
	}
	_, _, _ = snapshot.Latest(s)
}

func hasFile(m *snapshot.Manifest) bool {
	for _, t := range m.Tables {
		if len(t.Files)+len(t.Admission) > 0 {
			return true
		}
	}
	return len(m.Dense) > 0
}

// FuzzTableReader reads arbitrary bytes as a sorted table file: no input
// panics, a failure is an error wrapping ErrCorrupt, the ids come in
// strictly increasing order, and what reads to the end without an error
// is written back by TableWriter as a table that reads the same.
func FuzzTableReader(f *testing.F) {
	s := snapshot.NewMemStore()
	for i, compress := range []bool{false, true} {
		w, err := snapshot.CreateTableFile(s, "seed", "t", compress)
		if err != nil {
			f.Fatal(err)
		}
		for id := uint64(1); id < 20; id += 3 {
			if key := id << uint(8*i); id == 7 {
				err = w.Delete(key)
			} else {
				err = w.Add(key, bytes.Repeat([]byte{byte(id)}, int(id)))
			}
			if err != nil {
				f.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			f.Fatal(err)
		}
		f.Add(must(io.ReadAll(must(s.Open("seed/t")))))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		readsBack(t, b, snapshot.FileMeta{Name: "t"}, func(s snapshot.Store) (*snapshot.TableWriter, error) {
			return snapshot.CreateTableFile(s, "y", "t", false)
		})
	})
}

// readsBack: b read as table file meta fails with an error wrapping
// ErrCorrupt, or reads in strictly increasing ids, and its rows, written
// back by a writer from create (of file y/t), read the same.
func readsBack(t *testing.T, b []byte, meta snapshot.FileMeta, create func(snapshot.Store) (*snapshot.TableWriter, error)) {
	s := snapshot.NewMemStore()
	put(t, s, "x/t", b)
	rows, err := readRowsOf(t, s, "x", meta)
	if err != nil {
		if !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("reading %x: %v, not ErrCorrupt", b, err)
		}
		return
	}
	w, err := create(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.del {
			err = w.Delete(r.id)
		} else {
			err = w.Add(r.id, r.val)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := readRowsOf(t, s, "y", meta)
	if err != nil || !reflect.DeepEqual(again, rows) {
		t.Fatalf("%d rows written back read as %d, %v", len(rows), len(again), err)
	}
}

type tableRow struct {
	id  uint64
	val []byte
	del bool
}

func readRows(t *testing.T, s snapshot.Store, dir string) ([]tableRow, error) {
	return readRowsOf(t, s, dir, snapshot.FileMeta{Name: "t"})
}

// readRowsOf reads the table file f of dir, every row and deletion.
func readRowsOf(t *testing.T, s snapshot.Store, dir string, f snapshot.FileMeta) ([]tableRow, error) {
	r, err := snapshot.OpenTableFile(s, dir, f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []tableRow
	for r.Next() {
		id, v := r.Row()
		if len(out) > 0 && id <= out[len(out)-1].id {
			t.Fatalf("id %d after %d", id, out[len(out)-1].id)
		}
		out = append(out, tableRow{id: id, val: slices.Clone(v), del: r.Deleted()})
		if out[len(out)-1].val == nil {
			out[len(out)-1].val = []byte{}
		}
	}
	return out, r.Err()
}

// FuzzBlockTableReader reads arbitrary bytes as a table file of blocks of
// rows of 3 bytes (LayoutBlocks): no input panics, a failure is an error
// wrapping ErrCorrupt, the ids strictly increase, every row has its 3
// bytes, and what reads to the end is written back by a block writer as a
// table that reads the same.
func FuzzBlockTableReader(f *testing.F) {
	s := snapshot.NewMemStore()
	w, err := snapshot.CreateBlockTableFile(s, "seed", "t", 3)
	if err != nil {
		f.Fatal(err)
	}
	for id := uint64(1); id < 400; id += 3 {
		if id%7 == 0 {
			err = w.Delete(id << 20)
		} else {
			err = w.Add(id<<20, []byte{byte(id), 2, 3})
		}
		if err != nil {
			f.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(must(io.ReadAll(must(s.Open("seed/t")))))
	f.Add([]byte{})
	meta := snapshot.FileMeta{Name: "t", Layout: snapshot.LayoutBlocks, RowBytes: 3}
	f.Fuzz(func(t *testing.T, b []byte) {
		readsBack(t, b, meta, func(s snapshot.Store) (*snapshot.TableWriter, error) {
			return snapshot.CreateBlockTableFile(s, "y", "t", 3) // refuses a row of other than 3 bytes
		})
	})
}
