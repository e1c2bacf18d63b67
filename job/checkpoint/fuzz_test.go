package checkpoint

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
)

// FuzzDecode reads arbitrary bytes as a worker's checkpoint and as a
// shard's record of applied pushes, as a resuming worker and the
// scheduler's snapshot check read them from the model: no input panics; a
// checkpoint that decodes encodes back to one that decodes the same, and
// counts its Applied in Applied and AppliedIn; Consistent refuses an
// undecodable checkpoint with ErrBad and an undecodable record with
// ErrInconsistent, and passes a snapshot only when the record holds
// exactly the batches the checkpoint counts, with its samples and digest
// (or the checkpoint is of sync mode).
func FuzzDecode(f *testing.F) {
	cp := func(c Checkpoint) []byte {
		b, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	rec := func(m map[string]*ams.Applied) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(cp(Checkpoint{Epoch: 2, Applied: 460, Batches: 46, Digest: 46,
		Positions: []reader.Position{{File: "data/a.txt", Offset: 4096, Index: 3}, {File: "kafka://t/0", Offset: 17}},
		Best:      &Best{Value: 0.79, When: "epoch 1", Since: 1},
		Files:     []File{{Store: "/s", Seq: 3, Meta: snapshot.FileMeta{Name: "output/slide.layer", Size: 9, CRC32C: "00000000"}}}}),
		rec(map[string]*ams.Applied{"worker-0": {Ranges: []ams.BatchRange{{Lo: 0, Hi: 46}}, Samples: 460, Digest: 46}}))
	f.Add(cp(Checkpoint{Sync: true, Round: 7, Applied: 5, Batches: 1, Done: true}),
		rec(map[string]*ams.Applied{"worker-0": {Ranges: []ams.BatchRange{{Lo: 3, Hi: 1}, {Lo: 0, Hi: 9}}}}))
	f.Add([]byte(`{"epoch":1,"applied":-1,"batches":-3,"positions":[null],"best":null}`), []byte(`{"worker-0":null,"worker-9":{"ranges":[{"lo":0,"hi":1}]}}`))
	f.Add([]byte(`{broken`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, b, record []byte) {
		key := ams.CheckpointKey("worker-0")
		c, err := Decode(b)
		if err == nil {
			enc, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Decode(enc)
			if err != nil || !reflect.DeepEqual(again, c) {
				t.Fatalf("checkpoint %q decodes as %+v, which encodes back to %+v (%v)", b, c, again, err)
			}
			if n := Applied([]client.StateEntry{{Key: key, Value: b}}); n != c.Applied {
				t.Fatalf("Applied of %q = %d, want %d", b, n, c.Applied)
			}
			if n := AppliedIn(map[string]json.RawMessage{key: b, ams.AppliedKey(0): record}); n != c.Applied {
				t.Fatalf("AppliedIn of %q = %d, want %d", b, n, c.Applied)
			}
		}
		err = Consistent(map[string]json.RawMessage{key: b, ams.AppliedKey(0): record})
		var recs map[string]*ams.Applied
		recErr := json.Unmarshal(record, &recs)
		_, derr := Decode(b)
		switch {
		case derr != nil:
			if !errors.Is(err, ErrBad) {
				t.Fatalf("Consistent with the undecodable checkpoint %q = %v, want ErrBad", b, err)
			}
		case recErr != nil:
			if !errors.Is(err, ErrInconsistent) {
				t.Fatalf("Consistent with the undecodable record %q = %v, want ErrInconsistent", record, err)
			}
		case err == nil:
			a := recs["worker-0"]
			if a == nil {
				a = &ams.Applied{}
			}
			exact := len(a.Ranges) == 0 && c.Batches == 0 ||
				len(a.Ranges) == 1 && a.Ranges[0] == ams.BatchRange{Lo: 0, Hi: uint64(c.Batches)} && c.Batches != 0
			if !c.Sync && (!exact || a.Samples != c.Applied || a.Digest != c.Digest) {
				t.Fatalf("Consistent passed checkpoint %+v with record %+v", c, a)
			}
			for w, r := range recs {
				if w != "worker-0" && r != nil && len(r.Ranges) > 0 {
					t.Fatalf("Consistent passed a record of %s, which has no checkpoint", w)
				}
			}
		case !errors.Is(err, ErrInconsistent):
			t.Fatalf("Consistent: %v, not ErrInconsistent", err)
		}
	})
}
