package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestKeepModelIn: a job without a store gets root/ID; the root keeps the
// newest KeptModels jobs' directories (the new one included) and leaves
// directories it did not name alone; a job with a store keeps it.
func TestKeepModelIn(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var old []string
	for i := range 7 {
		old = append(old, NewJobID(now.Add(time.Duration(i-10)*time.Minute)))
		if err := os.MkdirAll(filepath.Join(root, old[i], "snap-1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	var c Config
	removed, err := c.KeepModelIn(root, now)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs(filepath.Join(root, c.Job.ID)); c.Snapshot.Store != want || c.Job.ID == "" {
		t.Errorf("store %q for job %q, want %q", c.Snapshot.Store, c.Job.ID, want)
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
	c2 := Config{Snapshot: c.Snapshot}
	c2.Snapshot.Store = "/elsewhere"
	if removed, err := c2.KeepModelIn(root, now); err != nil || removed != nil || c2.Snapshot.Store != "/elsewhere" {
		t.Errorf("a job with a store: %q, removed %v, %v", c2.Snapshot.Store, removed, err)
	}
}
