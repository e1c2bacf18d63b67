package config

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"
)

// NewJobID returns a new job id: "job-", the UTC time to the second, and
// a random suffix. A scheduler that starts a job without one picks it so.
func NewJobID(now time.Time) string {
	return fmt.Sprintf("job-%s-%06x", now.UTC().Format("20060102-150405"), rand.Uint32()&0xffffff)
}

// KeepModelIn gives a job without a snapshot store one of its own under
// root: root/ID, absolute, with ID the job's id (a new one, NewJobID,
// when c has none). An embedded cluster (worker -local) calls it so that
// the model it trains outlives the process: the job's snapshots, the
// final one included, go there. A job with a snapshot store keeps it.
func (c *Config) KeepModelIn(root string, now time.Time) error {
	if c.Snapshot.Store != "" {
		return nil
	}
	if c.Job.ID == "" {
		c.Job.ID = NewJobID(now)
	}
	dir, err := filepath.Abs(filepath.Join(root, c.Job.ID))
	if err != nil {
		return fmt.Errorf("config: the model's directory: %w", err)
	}
	c.Snapshot.Store = dir
	return nil
}
