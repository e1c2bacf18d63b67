package config

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// NewJobID returns a new job id: "job-", the UTC time to the second, and
// a random suffix. A scheduler that starts a job without one picks it so.
func NewJobID(now time.Time) string {
	return fmt.Sprintf("job-%s-%06x", now.UTC().Format("20060102-150405"), rand.Uint32()&0xffffff)
}

// KeptModels is how many jobs' models KeepModelIn keeps under its root.
const KeptModels = 5

// KeepModelIn gives a job without a snapshot store one of its own under
// root: root/ID, absolute, with ID the job's id (a new one, NewJobID,
// when c has none). An embedded cluster (worker -local) calls it so that
// the model it trains outlives the process: the job's snapshots, the
// final one included, go there. A job with a snapshot store keeps it.
// The root keeps the models of the newest KeptModels jobs: older job
// directories (named as NewJobID names them) are removed, and their paths
// returned, so that runs repeated for days do not fill the disk.
func (c *Config) KeepModelIn(root string, now time.Time) (removed []string, err error) {
	if c.Snapshot.Store != "" {
		return nil, nil
	}
	if c.Job.ID == "" {
		c.Job.ID = NewJobID(now)
	}
	dir, err := filepath.Abs(filepath.Join(root, c.Job.ID))
	if err != nil {
		return nil, fmt.Errorf("config: the model's directory: %w", err)
	}
	c.Snapshot.Store = dir
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "job-????????-??????-*"))
	old = slices.DeleteFunc(old, func(p string) bool { return p == dir })
	slices.Sort(old) // by time: the ids start with it
	for _, p := range old[:max(0, len(old)-(KeptModels-1))] {
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("config: removing an old model: %w", err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}
