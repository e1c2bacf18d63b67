package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xdlgo/xps/config"
)

// TestKeepModels: a job without a store gets ModelRoot/ID; the root keeps
// the newest KeptModels jobs' directories (the new one included) and
// leaves directories it did not name alone; a job with a store keeps it.
func TestKeepModels(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var old []string
	for i := range 7 {
		old = append(old, config.NewJobID(now.Add(time.Duration(i-10)*time.Minute)))
		if err := os.MkdirAll(filepath.Join(root, old[i], "snap-1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	var c config.Config
	if err := c.KeepModelIn(root, now); err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs(filepath.Join(root, c.Job.ID)); c.Snapshot.Store != want || c.Job.ID == "" {
		t.Errorf("store %q for job %q, want %q", c.Snapshot.Store, c.Job.ID, want)
	}
	removed, err := pruneModels(c.Snapshot.Store)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(root)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	want := append(slices.Clone(old[3:]), "mine") // 4 old ones and the new job (not created yet): 5
	if len(removed) != 3 || !slices.Equal(names, want) {
		t.Errorf("removed %v, left %v, want %v", removed, names, want)
	}
	c2 := config.Config{Snapshot: c.Snapshot}
	c2.Snapshot.Store = "/elsewhere"
	if err := c2.KeepModelIn(root, now); err != nil || c2.Snapshot.Store != "/elsewhere" {
		t.Errorf("a job with a store: %q, %v", c2.Snapshot.Store, err)
	}
}
