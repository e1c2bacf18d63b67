package amsnode

import (
	"encoding/json"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/snapshot"
)

// TestCheckStateTakesEveryCheckpoint holds checkState to the JSON of
// job/checkpoint: every checkpoint a job stores passes, and what is
// no checkpoint, or one whose counts cannot be, is refused; other keys
// pass whatever they hold.
func TestCheckStateTakesEveryCheckpoint(t *testing.T) {
	key := ams.CheckpointKey("worker-0")
	best := checkpoint.Best{Value: 0.8, When: "epoch 2", Since: 1}
	for _, c := range []checkpoint.Checkpoint{
		{},
		{Epoch: 3, EpochDone: true, Batch: 7, Applied: 12000, Batches: 47, Digest: 1 << 63, Sync: true, Round: 9},
		{Epoch: 1, Positions: []reader.Position{{File: "kafka://ctr/0", Offset: 5000}, {File: "train.libffm", Offset: 0, Index: 3}}, Best: &best},
		{Done: true, Files: []checkpoint.File{{Store: "/tmp/s", Seq: 4, Meta: snapshot.FileMeta{Name: "layer"}}}},
	} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkState(key, b); err != nil {
			t.Errorf("checkpoint %s refused: %v", b, err)
		}
	}
	for _, bad := range []string{`garbage`, `"a string"`, `[1,2]`, `{"applied": "many"}`, `{"applied": -1}`,
		`{"batches": -3}`, `{"epoch": -1}`, `{"positions": [{"offset": -5}]}`, `{"applied": 1e30}`} {
		if err := checkState(key, []byte(bad)); err == nil {
			t.Errorf("%s under %s stored", bad, key)
		}
	}
	if err := checkState("reader/worker-0/kafka/ctr", []byte("anything")); err != nil {
		t.Errorf("another key refused: %v", err)
	}
}

// FuzzCheckState: the shard's check of a checkpoint entry never panics,
// and what it takes, package json reads as a JSON value.
func FuzzCheckState(f *testing.F) {
	for _, s := range []string{`{}`, `{"applied": 5, "batches": 2, "positions": [{"file": "a", "offset": 3}]}`,
		`{"applied": -1}`, `garbage`, `null`, `{"positions": null}`, `[]`} {
		f.Add([]byte(s))
	}
	key := ams.CheckpointKey("worker-0")
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkState(key, b) == nil && !json.Valid(b) {
			t.Fatalf("took %q, which is no JSON", b)
		}
	})
}
