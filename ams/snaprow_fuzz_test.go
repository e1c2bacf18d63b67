package ams

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

// FuzzSnapshotRows decodes arbitrary snapshot rows, as a restore reads them
// from a table file: rows of any bits load (values, optimizer state and
// statistics are opaque words; a later encoding of an id replaces the
// earlier) and encode back to the same bytes, by the bulk load
// (LoadSnapshotRows) and the one-row load (LoadSnapshotRow) alike; a
// length that does not fit the table is ErrDimMismatch and loads nothing.
// The packed id and float payloads of pulls and pushes decode to what
// packs back to the same bytes.
func FuzzSnapshotRows(f *testing.F) {
	f.Add(uint8(3), uint8(2), PackIDs(nil, []uint64{7, 1 << 63, 7}), PackFloats(nil, []float32{1, -2, 0.5, float32(math.NaN())}))
	f.Add(uint8(0), uint8(0), PackIDs(nil, []uint64{0}), []byte{})
	f.Add(uint8(15), uint8(3), PackIDs(nil, []uint64{1, 2, 3, 4, 5}), []byte("\xff\xff\xff\x7f\x00\x00\x80\xff"))
	f.Add(uint8(1), uint8(4), []byte{1, 2, 3}, []byte{9})
	opts := []string{OptSGD, OptAdagrad, OptAdam, OptFTRL, OptMomentum}
	f.Fuzz(func(t *testing.T, dim, opt uint8, idBytes, rowBytes []byte) {
		spec := TableSpec{Name: "emb", Dim: 1 + int(dim%16), Optimizer: OptimizerSpec{Name: opts[int(opt)%len(opts)], LR: 0.1}}
		checkPacking(t, idBytes, rowBytes)
		ids, err := UnpackIDs(nil, idBytes[:len(idBytes)/8*8])
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 64 {
			ids = ids[:64]
		}
		bulk, one := newTestTable(t, spec), newTestTable(t, spec)
		n := bulk.SnapshotRowBytes()
		// The bytes as they come: refused unless they fit.
		if len(rowBytes) != n*len(ids) {
			if err := bulk.LoadSnapshotRows(ids, rowBytes); !errors.Is(err, ErrDimMismatch) || bulk.Len() != 0 {
				t.Fatalf("%d bytes for %d rows of %d: %v, %d rows loaded; want ErrDimMismatch and none", len(rowBytes), len(ids), n, err, bulk.Len())
			}
		}
		if len(ids) > 0 && len(rowBytes) != n {
			if err := one.LoadSnapshotRow(ids[0], rowBytes, make([]float32, spec.Dim), make([]float32, one.StateWidth())); !errors.Is(err, ErrDimMismatch) || one.Len() != 0 {
				t.Fatalf("a row of %d bytes, want %d: %v, %d rows loaded", len(rowBytes), n, err, one.Len())
			}
		}
		// The bytes repeated to fit: every row loads and encodes back.
		enc := make([]byte, n*len(ids))
		for i := range enc {
			if len(rowBytes) > 0 {
				enc[i] = rowBytes[i%len(rowBytes)]
			}
		}
		if err := bulk.LoadSnapshotRows(ids, enc); err != nil {
			t.Fatalf("LoadSnapshotRows: %v", err)
		}
		values, state := make([]float32, spec.Dim), make([]float32, one.StateWidth())
		last := map[uint64][]byte{}
		for k, id := range ids {
			if err := one.LoadSnapshotRow(id, enc[k*n:(k+1)*n], values, state); err != nil {
				t.Fatalf("LoadSnapshotRow: %v", err)
			}
			last[id] = enc[k*n : (k+1)*n]
		}
		if bulk.Len() != len(last) || one.Len() != len(last) {
			t.Fatalf("%d distinct ids loaded as %d rows (bulk) and %d (one by one)", len(last), bulk.Len(), one.Len())
		}
		for id, want := range last {
			for name, tab := range map[string]*Table{"bulk": bulk, "one by one": one} {
				got, ok := tab.AppendSnapshotRow(nil, id)
				if !ok || !bytes.Equal(got, want) {
					t.Fatalf("%s: id %d loaded from %x encodes as %x (%v)", name, id, want, got, ok)
				}
			}
			v := SnapshotRowValues(want, spec.Dim)
			for i, x := range v {
				if math.Float32bits(x) != binary.LittleEndian.Uint32(want[4*i:]) {
					t.Fatalf("id %d: value %d decodes as %v", id, i, x)
				}
			}
		}
	})
}

// checkPacking: UnpackIDs and UnpackFloats refuse a length that is not a
// multiple of the word, and what they decode packs back to the bytes.
func checkPacking(t *testing.T, idBytes, floatBytes []byte) {
	ids, err := UnpackIDs(nil, idBytes)
	if (err != nil) != (len(idBytes)%8 != 0) {
		t.Fatalf("UnpackIDs of %d bytes: %v", len(idBytes), err)
	}
	if err == nil && !bytes.Equal(PackIDs(nil, ids), idBytes) {
		t.Fatalf("ids %x unpack to %v, which pack to other bytes", idBytes, ids)
	}
	v, err := UnpackFloats(make([]float32, 0, 3), floatBytes)
	if (err != nil) != (len(floatBytes)%4 != 0) {
		t.Fatalf("UnpackFloats of %d bytes: %v", len(floatBytes), err)
	}
	if err == nil && !bytes.Equal(PackFloats(nil, v), floatBytes) {
		t.Fatalf("floats %x unpack to %v, which pack to other bytes", floatBytes, v)
	}
	if err == nil && !slices.Equal(FloatsPayload(v), floatBytes) {
		t.Fatalf("floats %x unpack to %v, whose payload is other bytes", floatBytes, v)
	}
}
