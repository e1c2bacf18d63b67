package export

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/xdlgo/xps/snapshot"
)

// FuzzDecodeRow decodes arbitrary bytes as a row of each encoding, and
// encodes arbitrary finite values: a row decodes only at its exact length
// and to finite values, and then encodes back to a row that decodes to the
// same values (fp32, fp16: bit for bit but the sign of zero; int8: within
// half the new scale); any finite row encodes to a row that decodes
// within the bounds the encodings' documentation states.
func FuzzDecodeRow(f *testing.F) {
	f.Add(uint8(0), uint8(3), AppendRow(nil, FP32, []float32{1, -2, 0.5}))
	f.Add(uint8(1), uint8(4), AppendRow(nil, FP16, []float32{1, -65504, 1e6, 1e-8}))
	f.Add(uint8(2), uint8(3), AppendRow(nil, Int8, []float32{0.1, -0.2, 0.05}))
	f.Add(uint8(2), uint8(2), []byte{0x80, 0x7f, 1, 2})       // int8 scale +Inf
	f.Add(uint8(1), uint8(1), []byte{0x00, 0x7c})             // fp16 +Inf
	f.Add(uint8(0), uint8(1), []byte{0x01, 0x00, 0x80, 0x00}) // fp32 subnormal
	f.Fuzz(func(t *testing.T, qi, dim uint8, b []byte) {
		q := Quants[int(qi)%len(Quants)]
		n := int(dim % 33)
		checkDecode(t, q, n, b)
		// b as float32 values, the non-finite ones left out.
		var v []float32
		for i := 0; i+4 <= len(b) && len(v) < 64; i += 4 {
			if x := math.Float32frombits(binary.LittleEndian.Uint32(b[i:])); finite(x) {
				v = append(v, x)
			}
		}
		checkEncode(t, q, v)
	})
}

func checkDecode(t *testing.T, q string, n int, b []byte) {
	v := make([]float32, n)
	err := DecodeRow(v, q, b)
	if len(b) != RowBytes(q, n) {
		if err == nil {
			t.Fatalf("%s: %d bytes decoded as a row of %d values", q, len(b), n)
		}
		b = b[:min(len(b), RowBytes(q, n))] // and the row at its length below
		if len(b) < RowBytes(q, n) {
			return
		}
		err = DecodeRow(v, q, b)
	}
	if err != nil {
		return
	}
	for i, x := range v {
		if !finite(x) {
			t.Fatalf("%s row %x decoded with value %d = %v", q, b, i, x)
		}
	}
	again := AppendRow(nil, q, v)
	w := make([]float32, n)
	if err := DecodeRow(w, q, again); err != nil {
		if q == Int8 && int8Overflows(again) {
			return
		}
		t.Fatalf("%s: %v encodes as %x, which does not decode: %v", q, v, again, err)
	}
	scale := float32(0)
	if q == Int8 {
		scale = math.Float32frombits(uint32(binary.LittleEndian.Uint16(again)) << 16)
	}
	for i := range v {
		if q != Int8 && math.Float32bits(v[i]) != math.Float32bits(w[i]) && !(v[i] == 0 && w[i] == 0) {
			t.Fatalf("%s row %x: value %d decodes as %v, after a re-encoding as %v", q, b, i, v[i], w[i])
		}
		if q == Int8 && abs32(w[i]-v[i]) > scale/2*1.0001 {
			t.Fatalf("%s row %x: value %d decodes as %v, after a re-encoding (scale %v) as %v", q, b, i, v[i], scale, w[i])
		}
	}
}

// int8Overflows reports whether the int8 row b has a scale s with 127s
// beyond the float32 range: a row whose largest value is within 2^-7 of
// the largest float32 encodes so (its scale rounded up), and DecodeRow
// refuses it. (Left as it is: no trained embedding comes near 3e38.)
func int8Overflows(b []byte) bool {
	s := math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
	return 127*float64(s) > math.MaxFloat32
}

// smallestNormal is 2^-126: the encodings' stated bounds are for normal
// numbers (an int8 row whose largest value is subnormal may lose its
// values to a scale of 0).
var smallestNormal = float32(math.Ldexp(1, -126))

func checkEncode(t *testing.T, q string, v []float32) {
	b := AppendRow(nil, q, v)
	if len(b) != RowBytes(q, len(v)) {
		t.Fatalf("%s: %d values encode as %d bytes, RowBytes says %d", q, len(v), len(b), RowBytes(q, len(v)))
	}
	got := make([]float32, len(v))
	if err := DecodeRow(got, q, b); err != nil {
		if q == Int8 && int8Overflows(b) {
			return
		}
		t.Fatalf("%s: finite %v encodes as %x, which does not decode: %v", q, v, b, err)
	}
	var maxAbs float32
	for _, x := range v {
		maxAbs = max(maxAbs, abs32(x))
	}
	for i, x := range v {
		d := abs32(got[i] - x)
		var bound float32
		switch q {
		case FP16:
			if abs32(x) > 65504 {
				if abs32(got[i]) != 65504 || (got[i] < 0) != (x < 0) {
					t.Fatalf("fp16: %v decodes as %v, not saturated to ±65504", x, got[i])
				}
				continue
			}
			bound = abs32(x)/2048 + float32(math.Ldexp(1, -25))
		case Int8:
			bound = maxAbs/127/2*(1+1.0/128)*1.0001 + smallestNormal
		}
		if d > bound {
			t.Fatalf("%s: value %d of %v decodes as %v (error %v > %v)", q, i, v, got[i], d, bound)
		}
	}
}

// readAll returns the file name of s.
func readAll(t testing.TB, s snapshot.Store, name string) []byte {
	r, err := s.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := make([]byte, r.Size())
	if _, err := r.ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatal(err)
	}
	return b
}

// put writes the file name of s whole.
func put(t *testing.T, s snapshot.Store, name string, b []byte) {
	w, err := s.Create(name)
	if err == nil {
		_, err = w.Write(b)
	}
	if err == nil {
		err = w.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzReadManifest reads arbitrary bytes as an export's manifest: as they
// are (almost always refused: the checksum) and resealed, with the
// checksum of what they decode to, so that the structural checks are
// reached too. No input panics; every refusal wraps ErrCorrupt; a
// resealed manifest is accepted exactly when its format is one this build
// reads and its structure checks out, and reads back as it was written
// (embedded JSON compact); and what a server does next with an accepted
// manifest whose files are missing (Verify, ReadTable, ReadDense, Next)
// is an error, not a panic nor an allocation the files do not back.
func FuzzReadManifest(f *testing.F) {
	s := snapshot.NewMemStore()
	m := &Manifest{Seq: 7, Kind: KindDelta, Base: 5, Full: 3, Job: "job-1", Version: 4, Samples: 1000,
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Shards: 1,
		Tables: []Table{{Name: "emb", Dim: 2, Quant: Int8, Init: json.RawMessage(`{"kind":"zero"}`),
			Files: []snapshot.FileMeta{{Name: TableName("emb", 0), Size: 90, CRC32C: "01020304", Rows: 3, Deletes: 1}}}},
		Dense:  []Dense{{Name: "mlp", Len: 3, Parts: []DensePart{{Lo: 0, Hi: 3, File: snapshot.FileMeta{Name: DenseName("mlp", 0), Size: 12, CRC32C: "0a0b0c0d"}}}}},
		Config: json.RawMessage(`{"model":{"tables":[{"name":"emb","dim":2}]}}`), Shape: json.RawMessage(`{"fields":3}`)}
	if err := Commit(s, m); err != nil {
		f.Fatal(err)
	}
	f.Add(readAll(f, s, path.Join(Dir(7), ManifestName)))
	f.Add([]byte(`{"format":2,"seq":7,"kind":"full","full":7,"shards":0,"tables":[],"checksum":""}`))
	f.Add([]byte(`{"format":2,"seq":7,"kind":"full","full":7,"shards":1,"tables":[{"name":"t","dim":1,"quant":"fp16","files":[{"name":"t","size":0}]}],"dense":[{"name":"d","len":2,"parts":[{"lo":0,"hi":2,"file":{"name":"d","size":8}}]}],"checksum":""}`))
	f.Add([]byte(`{"format":2,"seq":7,"kind":"full","full":7,"shards":0,"tables":[],"dense":[{"name":"d","len":1099511627776,"parts":[{"lo":0,"hi":1099511627776,"file":{"name":"d","size":4398046511104}}]}],"checksum":""}`))
	f.Add([]byte(`{"format":1,"seq":7,"kind":"delta","base":6,"full":9,"tables":[{"name":"t","dim":0,"quant":"bf16","files":null}],"checksum":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := snapshot.NewMemStore()
		put(t, s, path.Join(Dir(7), ManifestName), b)
		if m, err := ReadManifest(s, 7); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadManifest refused %q with %v, not ErrCorrupt", b, err)
			}
		} else {
			checkServable(t, s, m)
		}
		// Resealed: decoded as ReadManifest decodes, with its checksum.
		var m Manifest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if dec.Decode(&m) != nil {
			return
		}
		sum, err := m.sum()
		if err != nil {
			return
		}
		m.Checksum = sum
		indented, err := json.MarshalIndent(&m, "", "  ") // as CommitJSON writes it
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, path.Join(m.Dir(), ManifestName), indented)
		got, err := ReadManifest(s, m.Seq)
		want := m.check()
		if m.Format < oldestFormat || m.Format > FormatVersion {
			want = fmt.Errorf("format %d", m.Format)
		}
		switch {
		case (err == nil) != (want == nil):
			t.Fatalf("ReadManifest of\n%s\n= %v; its checks say %v", indented, err, want)
		case err != nil && !errors.Is(err, ErrCorrupt):
			t.Fatalf("ReadManifest refused\n%s\nwith %v, not ErrCorrupt", indented, err)
		case err != nil:
			return
		}
		m.Created, got.Created = time.Time{}, time.Time{}
		canon(&m.Config)
		canon(&m.Shape)
		for i := range m.Tables {
			canon(&m.Tables[i].Init)
		}
		if !reflect.DeepEqual(normal(got), normal(&m)) {
			t.Fatalf("manifest written as\n%s\nread back as\n%+v\nwant\n%+v", indented, got, &m)
		}
		checkServable(t, s, got)
	})
}

// canon makes embedded JSON what a manifest reads back: compact, and
// with the characters json.Marshal escapes (<, >, &, U+2028, U+2029)
// escaped.
func canon(r *json.RawMessage) {
	if len(*r) > 0 {
		*r = must(json.Marshal(*r))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// normal makes the empty slices that JSON's omitempty leaves out nil, so
// that a manifest compares equal to its round trip.
func normal(m *Manifest) *Manifest {
	c := *m
	if len(c.Dense) == 0 {
		c.Dense = nil
	}
	c.Tables = slices.Clone(c.Tables)
	for i := range c.Tables {
		if len(c.Tables[i].Init) == 0 {
			c.Tables[i].Init = nil
		}
	}
	if len(c.Config) == 0 {
		c.Config = nil
	}
	if len(c.Shape) == 0 {
		c.Shape = nil
	}
	return &c
}

// checkServable runs on an accepted manifest what a server runs on it,
// its files (other than the manifest) missing: each step is an error
// wrapping ErrCorrupt, or nothing to read.
func checkServable(t *testing.T, s snapshot.Store, m *Manifest) {
	if err := Verify(s, m); err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify: %v, not ErrCorrupt", err)
	}
	for _, tb := range m.Tables {
		err := ReadTable(s, m, tb.Name, func(uint64, []float32) error { return nil })
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ReadTable(%q): %v, not ErrCorrupt", tb.Name, err)
		}
	}
	for _, d := range m.Dense {
		var before, after runtime.MemStats
		if d.Len > 1<<20 { // a vector of 4 MB or more, of files that are not there
			runtime.ReadMemStats(&before)
		}
		v, err := ReadDense(s, m, d.Name)
		if d.Len > 1<<20 {
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Fatalf("ReadDense(%q) of %d values allocated %d bytes, its files missing", d.Name, d.Len, n)
			}
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ReadDense(%q): %v, not ErrCorrupt", d.Name, err)
		}
		if err == nil && len(v) != d.Len {
			t.Fatalf("ReadDense(%q) = %d values, the manifest says %d", d.Name, len(v), d.Len)
		}
	}
	_, _, _ = Next(s, nil)
}
