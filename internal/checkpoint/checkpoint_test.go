package checkpoint

import (
	"encoding/json"
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
