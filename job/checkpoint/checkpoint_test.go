package checkpoint

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/snapshot"
)

func TestApplied(t *testing.T) {
	enc := func(c Checkpoint) []byte {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	entries := []client.StateEntry{
		{Key: ams.CheckpointKey("worker-0"), Value: enc(Checkpoint{Applied: 5})},
		{Key: ams.CheckpointKey("worker-1"), Value: enc(Checkpoint{Applied: 7, Done: true})},
		{Key: ams.CheckpointKey("worker-2"), Value: []byte("{broken")},                // counts nothing
		{Key: ams.StreamPositionKey("kafka://t/0"), Value: []byte(`{"applied":100}`)}, // not a checkpoint
		{Key: "reader/a/b/checkpoint", Value: enc(Checkpoint{Applied: 100})},          // not a worker's key
	}
	if n := Applied(entries); n != 12 {
		t.Fatalf("Applied = %d, want 12", n)
	}
}

func TestFile(t *testing.T) {
	c := Checkpoint{Files: []File{{Store: "/s", Seq: 3, Meta: snapshot.FileMeta{Name: "output/slide.layer", Size: 9}}}}
	if f, ok := c.File("output/slide.layer"); !ok || f.Seq != 3 || f.Meta.Size != 9 {
		t.Fatalf("File = %+v, %v", f, ok)
	}
	if _, ok := c.File("other"); ok {
		t.Fatal("File found a file that is not there")
	}
	b, _ := json.Marshal(c)
	if d, err := Decode(b); err != nil || len(d.Files) != 1 || d.Files[0] != c.Files[0] {
		t.Fatalf("Decode(Marshal) = %+v, %v", d, err)
	}
}

// TestConsistent checks snapshots' state against the shards' records:
// agreeing, a checkpoint behind the pushes (a worker stopped without
// storing what it applied), a shard missing a batch, pushes without a
// checkpoint; sync checkpoints and snapshots without records pass.
func TestConsistent(t *testing.T) {
	js := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rec := func(n uint64, samples int64) map[string]*ams.Applied {
		a := &ams.Applied{}
		for b := uint64(0); b < n; b++ {
			a.Add(ams.Origin{Worker: "w", Batch: b, Samples: uint32(samples / int64(n)), Digest: 1})
		}
		return map[string]*ams.Applied{"worker-0": a}
	}
	cp := js(Checkpoint{Epoch: 1, Applied: 460, Batches: 46, Digest: 46})
	for _, tc := range []struct {
		name    string
		readers map[string]json.RawMessage
		ok      bool
	}{
		{"agree", map[string]json.RawMessage{ams.CheckpointKey("worker-0"): cp,
			ams.AppliedKey(0): js(rec(46, 460)), ams.AppliedKey(1): js(rec(46, 460))}, true},
		{"no records (an older snapshot)", map[string]json.RawMessage{ams.CheckpointKey("worker-0"): cp}, true},
		{"sync", map[string]json.RawMessage{ams.CheckpointKey("worker-0"): js(Checkpoint{Sync: true, Applied: 5, Batches: 1}),
			ams.AppliedKey(0): js(map[string]*ams.Applied{})}, true},
		{"checkpoint behind the pushes", map[string]json.RawMessage{ams.CheckpointKey("worker-0"): js(Checkpoint{Epoch: 1, Applied: 340, Batches: 34, Digest: 34}),
			ams.AppliedKey(0): js(rec(46, 460))}, false},
		{"a shard lacks batches", map[string]json.RawMessage{ams.CheckpointKey("worker-0"): cp,
			ams.AppliedKey(0): js(rec(46, 460)), ams.AppliedKey(1): js(rec(40, 400))}, false},
		{"pushes without a checkpoint", map[string]json.RawMessage{ams.AppliedKey(0): js(rec(46, 460))}, false},
	} {
		err := Consistent(tc.readers)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInconsistent)) {
			t.Errorf("%s: Consistent = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
