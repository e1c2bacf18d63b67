package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/snapshot"
)

// writeModel makes dir a snapshot store holding an empty first snapshot
// and, when applied > 0, a second one whose worker's checkpoint counts
// applied samples (a trained model).
func writeModel(t *testing.T, dir string, applied int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := snapshot.Commit(s, &snapshot.Manifest{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if applied > 0 {
		cp, _ := json.Marshal(map[string]any{"applied": applied, "batches": 1})
		m := &snapshot.Manifest{Seq: 2, Readers: map[string]json.RawMessage{ams.CheckpointKey("worker-0"): cp}}
		if err := snapshot.Commit(s, m); err != nil {
			t.Fatal(err)
		}
	}
}

func names(t *testing.T, root string) []string {
	t.Helper()
	left, _ := os.ReadDir(root)
	var out []string
	for _, e := range left {
		out = append(out, e.Name())
	}
	return out
}

// TestKeepModels: a job without a store gets ModelRoot/ID; the root keeps
// the newest KeptModels trained jobs' models (the new one included) and
// leaves directories it did not name alone; a job with a store keeps it.
// A run that trained nothing (failed, or stopped before training) neither
// counts against the kept jobs nor removes one, and its own directory
// goes (issue 57: such a run removed an older, fully trained model); the
// removals are said.
func TestKeepModels(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var old []string
	for i := range 7 {
		old = append(old, config.NewJobID(now.Add(time.Duration(i-10)*time.Minute)))
		applied := int64(1000)
		if i == 5 {
			applied = 0 // a failed run of before: it does not count, and it stays
		}
		writeModel(t, filepath.Join(root, old[i]), applied)
	}
	if err := os.Mkdir(filepath.Join(root, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	// 1. A run that trains nothing: all 7 are left, its own directory goes.
	var c config.Config
	if err := c.KeepModelIn(root, now); err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs(filepath.Join(root, c.Job.ID)); c.Snapshot.Store != want || c.Job.ID == "" {
		t.Errorf("store %q for job %q, want %q", c.Snapshot.Store, c.Job.ID, want)
	}
	writeModel(t, c.Snapshot.Store, 0)
	var said strings.Builder
	if err := (&modelRoot{root: root, dir: c.Snapshot.Store, progress: &said}).keep(); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, root), append(slices.Clone(old), "mine"); !slices.Equal(got, want) {
		t.Errorf("after a run that trained nothing: left %v, want %v", got, want)
	}
	if !strings.Contains(said.String(), "removed "+c.Snapshot.Store+": it holds no trained model") {
		t.Errorf("the untrained run's removal is not said: %q", said.String())
	}
	// 2. A run that trains: the newest 4 trained old ones and it stay
	// (5), the untrained old one stays uncounted, the 2 oldest go.
	c = config.Config{}
	if err := c.KeepModelIn(root, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	writeModel(t, c.Snapshot.Store, 500)
	said.Reset()
	if err := (&modelRoot{root: root, dir: c.Snapshot.Store, progress: &said}).keep(); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(old[2:]), c.Job.ID, "mine")
	slices.Sort(want)
	if got := names(t, root); !slices.Equal(got, want) {
		t.Errorf("after a trained run: left %v, want %v", got, want)
	}
	if s := said.String(); !strings.Contains(s, "removed the 2 oldest trained models") || !strings.Contains(s, old[0]) || !strings.Contains(s, old[1]) {
		t.Errorf("the removals are not said: %q", s)
	}
	c2 := config.Config{Snapshot: c.Snapshot}
	c2.Snapshot.Store = "/elsewhere"
	if err := c2.KeepModelIn(root, now); err != nil || c2.Snapshot.Store != "/elsewhere" {
		t.Errorf("a job with a store: %q, %v", c2.Snapshot.Store, err)
	}
}
