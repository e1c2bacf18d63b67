package testutil

import (
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
)

// SnapshotNames reports whether a complete snapshot in store (its
// manifest written) holds workers' checkpoints naming every one of files
// (a model that keeps state of its own in its workers, such as the SLIDE
// layer's shares): a fault injected after it can roll back to it.
func SnapshotNames(t testing.TB, store snapshot.Store, files ...string) bool {
	t.Helper()
	seqs, err := snapshot.Snapshots(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs {
		man, err := snapshot.ReadManifest(store, seq)
		if err != nil {
			continue // not complete (yet), or pruned
		}
		named := 0
		for k, v := range man.Readers {
			if !ams.IsCheckpointKey(k) {
				continue
			}
			cp, err := checkpoint.Decode(v)
			if err != nil {
				t.Fatalf("snapshot %d: %s: %v", seq, k, err)
			}
			for _, f := range files {
				if _, ok := cp.File(f); ok {
					named++
				}
			}
		}
		if named == len(files) {
			return true
		}
	}
	return false
}
