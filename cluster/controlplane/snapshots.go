package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The snapshot request protocol: anyone asks the leading scheduler for a
// snapshot now by writing the request key (RequestSnapshot, as
// `scheduler -snapshot-now` does); the leader watches it, and records the
// outcome of every attempt, asked for or periodic (PutSnapshotResult),
// which the asker waits for.

// SnapshotResult is the outcome of one snapshot attempt.
type SnapshotResult struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Seconds float64   `json:"seconds"`
	Rows    int64     `json:"rows"`
	Workers int       `json:"workers"` // paused for it
	// Paused names them.
	Paused []string `json:"paused,omitempty"`
	// Applied is the sum of the samples applied that the workers'
	// checkpoints in the snapshot count.
	Applied int64    `json:"applied"`
	Removed []uint64 `json:"removed,omitempty"`
	// Pinned says the snapshot is pinned (RequestSnapshot with pin).
	Pinned bool   `json:"pinned,omitempty"`
	Error  string `json:"error,omitempty"`
	// Request is the etcd revision of the newest snapshot request the
	// scheduler had seen when the attempt began: the attempt answers
	// every request up to it.
	Request int64 `json:"request,omitempty"`
}

// LastSnapshot returns the outcome of the latest snapshot attempt, and
// false when none was made.
func (c *Conn) LastSnapshot(ctx context.Context) (SnapshotResult, bool, error) {
	var r SnapshotResult
	ok, err := c.getJSON(ctx, SnapshotLastKey(c.prefix), "snapshot result", &r)
	return r, ok, err
}

// PutSnapshotResult records the outcome of the latest attempt.
func (c *Conn) PutSnapshotResult(ctx context.Context, r SnapshotResult) error {
	return c.putJSON(ctx, SnapshotLastKey(c.prefix), "snapshot result", r)
}

// RequestSnapshot asks the cluster's scheduler for a snapshot now and
// waits for the result of an attempt begun after the scheduler saw the
// request (not one in progress before it); a failed attempt is returned
// with its error. With pin the snapshot is pinned: the model a rollback
// (RequestRollback) goes back to, kept beyond snapshot.keep.
func (c *Conn) RequestSnapshot(ctx context.Context, pin bool) (SnapshotResult, error) {
	var r SnapshotResult
	value := ""
	if pin {
		value = PinRequest
	}
	err := c.request(ctx, "snapshot", SnapshotRequestKey(c.prefix), SnapshotLastKey(c.prefix), value, func(b []byte) (int64, string, bool) {
		r = SnapshotResult{}
		ok := json.Unmarshal(b, &r) == nil
		return r.Request, r.Error, ok
	})
	return r, err
}

// PinRequest starts the value of a snapshot request for a pinned
// snapshot (the rest is the time of the request, as in any request).
const PinRequest = "pin "

// IsPinRequest reports whether a snapshot request's value asks for a
// pinned snapshot.
func IsPinRequest(value []byte) bool { return strings.HasPrefix(string(value), PinRequest) }

// request writes the request key reqKey (value, then the time) and waits
// for a result under lastKey that answers it: one whose request revision
// (decoded by decode, with the attempt's error and whether it decoded) is
// at least that of the write, an attempt begun after the scheduler saw
// the request. A failed attempt is an error.
func (c *Conn) request(ctx context.Context, what, reqKey, lastKey, value string, decode func([]byte) (req int64, failed string, ok bool)) error {
	before, err := c.cli.Get(ctx, lastKey)
	if err != nil {
		return fmt.Errorf("controlplane: request a %s: %w", what, err)
	}
	rev := before.Header.Revision
	put, err := c.cli.Put(ctx, reqKey, value+time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("controlplane: request a %s: %w", what, err)
	}
	mine := put.Header.Revision // results of attempts begun earlier answer older requests
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range c.cli.Watch(wctx, lastKey, clientv3.WithRev(rev+1)) {
		for _, ev := range resp.Events {
			req, failed, ok := decode(ev.Kv.Value)
			if !ok || req < mine {
				continue
			}
			if failed != "" {
				return fmt.Errorf("controlplane: %s: %s", what, failed)
			}
			return nil
		}
	}
	return fmt.Errorf("controlplane: waiting for the %s: %w", what, context.Cause(ctx))
}

// WatchSnapshotResults calls fn with the outcome of every snapshot attempt
// recorded from now on, in order, until ctx ends (it returns then, with
// nil) or the watch fails.
func (c *Conn) WatchSnapshotResults(ctx context.Context, fn func(SnapshotResult)) error {
	cur, err := c.cli.Get(ctx, SnapshotLastKey(c.prefix))
	if err != nil {
		return fmt.Errorf("controlplane: watch snapshot results: %w", err)
	}
	for resp := range c.cli.Watch(ctx, SnapshotLastKey(c.prefix), clientv3.WithRev(cur.Header.Revision+1)) {
		if err := resp.Err(); err != nil {
			return fmt.Errorf("controlplane: watch snapshot results: %w", err)
		}
		for _, ev := range resp.Events {
			var r SnapshotResult
			if ev.Type == clientv3.EventTypePut && json.Unmarshal(ev.Kv.Value, &r) == nil {
				fn(r)
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("controlplane: watch snapshot results: the watch ended")
}
