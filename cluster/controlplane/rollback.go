package controlplane

import (
	"context"
	"encoding/json"
	"time"
)

// The rollback request protocol: a worker whose job ends with the best
// model it met rather than the last (early stopping) asks the leading
// scheduler to restore the pinned snapshot by writing the request key
// (RequestRollback); the leader watches it, rolls the cluster back (a
// restore at a new version, as after a failure) and records the outcome
// (PutRollbackResult) before the workers resume. Workers that start an
// attempt at the version a rollback produced read it (LastRollback): the
// job is over but for its final evaluation.

// RollbackResult is the outcome of one rollback.
type RollbackResult struct {
	// Seq is the snapshot restored and Version the cluster version the
	// workers resume at.
	Seq     uint64    `json:"seq"`
	Version uint64    `json:"version"`
	Time    time.Time `json:"time"`
	// Removed lists the snapshots after Seq removed from the store: the
	// model's discarded future.
	Removed []uint64 `json:"removed,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Request is the etcd revision of the rollback request answered.
	Request int64 `json:"request,omitempty"`
}

// PutRollbackResult records the outcome of the latest rollback.
func (c *Conn) PutRollbackResult(ctx context.Context, r RollbackResult) error {
	return c.putJSON(ctx, RollbackLastKey(c.prefix), "rollback result", r)
}

// LastRollback returns the outcome of the latest rollback, and false when
// none is recorded.
func (c *Conn) LastRollback(ctx context.Context) (RollbackResult, bool, error) {
	var r RollbackResult
	ok, err := c.getJSON(ctx, RollbackLastKey(c.prefix), "rollback result", &r)
	return r, ok, err
}

// RequestRollback asks the cluster's scheduler to roll the model back to
// the pinned snapshot and waits for the outcome; a failed rollback is
// returned with its error. The asker's own training is restored too: its
// attempt ends (job.ErrRestored) once the cluster resumes, usually before
// this returns.
func (c *Conn) RequestRollback(ctx context.Context) (RollbackResult, error) {
	var r RollbackResult
	err := c.request(ctx, "rollback", RollbackRequestKey(c.prefix), RollbackLastKey(c.prefix), "", func(b []byte) (int64, string, bool) {
		r = RollbackResult{}
		ok := json.Unmarshal(b, &r) == nil
		return r.Request, r.Error, ok
	})
	return r, err
}
