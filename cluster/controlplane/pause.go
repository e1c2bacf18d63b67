package controlplane

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// The pause protocol. To take a consistent snapshot, or to roll the
// cluster back to one, the scheduler asks the workers to pause (PutPause
// with a new sequence number); each worker stops at its next batch
// boundary, waits until its pushes are applied, stores its reader
// positions in the model, acknowledges (AckPause) and waits for the resume
// (WaitResume). A worker that is not training acknowledges at once, and
// starts training only once that pause is resumed (Pauser.StartTraining).
// For a snapshot the scheduler waits for the acknowledgements of the
// workers (WaitPauseAcks), writes the snapshot, and resumes (PutResume)
// whether the snapshot succeeded or not. A resume carries the cluster
// version training goes on at: a version above the one a worker trained
// at means the cluster was restored from a snapshot meanwhile, so the
// worker drops what it was doing and starts over from the reader positions
// the restored model holds. When the cluster cannot recover, the resume
// says so (PutFailed) and waiting workers stop with ErrClusterFailed.
// Sequence numbers only grow. Before a snapshot's pause the scheduler
// names the snapshot (PutSnapshotTarget), so that a worker keeping model
// state of its own writes it into that snapshot before it acknowledges.

// ErrClusterFailed is returned (wrapped) by WaitResume and WaitRestored
// when the scheduler gave up: the cluster lost state and had no snapshot
// to roll back to.
var ErrClusterFailed = errors.New("controlplane: the cluster failed and cannot recover")

// ErrRestored is returned (wrapped) by a worker's pause when training
// resumes at a higher cluster version: the model was rolled back to a
// snapshot meanwhile, and the worker starts over from the reader
// positions the restored model holds.
var ErrRestored = errors.New("controlplane: restored from a snapshot")

func (c *Conn) putSeq(ctx context.Context, key string, seq uint64) error {
	if _, err := c.cli.Put(ctx, key, strconv.FormatUint(seq, 10)); err != nil {
		return fmt.Errorf("controlplane: put %s: %w", key, err)
	}
	return nil
}

func parseSeq(b []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil
}

// PutPause asks the workers to pause for request seq.
func (c *Conn) PutPause(ctx context.Context, seq uint64) error {
	return c.putSeq(ctx, PauseKey(c.prefix), seq)
}

// LastPause returns the sequence number of the latest pause request (0:
// none), from which a new leading scheduler numbers its own.
func (c *Conn) LastPause(ctx context.Context) (uint64, error) {
	resp, err := c.cli.Get(ctx, PauseKey(c.prefix))
	if err != nil {
		return 0, fmt.Errorf("controlplane: get the last pause: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	seq, ok := parseSeq(resp.Kvs[0].Value)
	if !ok {
		return 0, fmt.Errorf("%w: pause %q", ErrBadValue, resp.Kvs[0].Value)
	}
	return seq, nil
}

// PutResume lets workers paused for requests up to seq go on, at cluster
// version version (0: the version they trained at).
func (c *Conn) PutResume(ctx context.Context, seq, version uint64) error {
	v := strconv.FormatUint(seq, 10)
	if version > 0 {
		v += " " + strconv.FormatUint(version, 10)
	}
	if _, err := c.cli.Put(ctx, ResumeKey(c.prefix), v); err != nil {
		return fmt.Errorf("controlplane: put %s: %w", ResumeKey(c.prefix), err)
	}
	return nil
}

// PutFailed tells every waiting worker (and later ones) that the cluster
// failed, with why.
func (c *Conn) PutFailed(ctx context.Context, why string) error {
	if _, err := c.cli.Put(ctx, ResumeKey(c.prefix), "failed "+why); err != nil {
		return fmt.Errorf("controlplane: put %s: %w", ResumeKey(c.prefix), err)
	}
	return nil
}

// ClearFailed removes the record of a failed cluster (PutFailed), if that
// is the latest resume: a new leader tries again, and workers that start
// meanwhile must wait for it rather than give up on the old failure.
func (c *Conn) ClearFailed(ctx context.Context) error {
	key := ResumeKey(c.prefix)
	resp, err := c.cli.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("controlplane: get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 || !strings.HasPrefix(string(resp.Kvs[0].Value), "failed ") {
		return nil
	}
	_, err = c.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("controlplane: clear the failed cluster's record: %w", err)
	}
	return nil
}

// Resumed is a decoded resume: Seq, and Version (0: unchanged), or Failed
// with Why.
type Resumed struct {
	Seq, Version uint64
	Failed       bool
	Why          string
}

// ParseResume decodes a ResumeKey value.
func ParseResume(b []byte) (Resumed, bool) {
	s := string(b)
	if why, ok := strings.CutPrefix(s, "failed "); ok {
		return Resumed{Failed: true, Why: why, Seq: math.MaxUint64}, true
	}
	seq, ver, two := strings.Cut(s, " ")
	var r Resumed
	var err error
	if r.Seq, err = strconv.ParseUint(seq, 10, 64); err != nil {
		return r, false
	}
	if two {
		if r.Version, err = strconv.ParseUint(ver, 10, 64); err != nil {
			return r, false
		}
	}
	return r, true
}

// LastResume returns the latest resume, and false when there is none.
func (c *Conn) LastResume(ctx context.Context) (Resumed, bool, error) {
	resp, err := c.cli.Get(ctx, ResumeKey(c.prefix))
	if err != nil {
		return Resumed{}, false, fmt.Errorf("controlplane: get the last resume: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return Resumed{}, false, nil
	}
	r, ok := ParseResume(resp.Kvs[0].Value)
	return r, ok, nil
}

// AckPause records that worker is paused for request seq (or is not
// training).
func (c *Conn) AckPause(ctx context.Context, worker string, seq uint64) error {
	return c.putSeq(ctx, PauseAckKey(c.prefix, worker), seq)
}

// A BadRecord is a record a reader refused: one no process of ours could
// have written (a forged or hand-written key), reported with why and
// otherwise ignored, so that it can neither block nor fool the protocol
// that reads it (quarantined).
type BadRecord struct {
	Key      string
	Value    []byte
	Revision int64 // the record's mod revision: a report per revision
	Why      string
}

// WaitPauseAcks waits until each of workers has acknowledged pause seq or
// is no longer a member (it left or its lease expired: it pushes nothing).
//
// It reads every acknowledgement written since the pause was requested
// (the pause key's revision), not only the latest value: a worker that
// acknowledged seq has paused, though its key was overwritten since. An
// acknowledgement above seq (a pause not yet requested) or one that does
// not decode is no worker's: it is reported to quarantine, once per
// revision, and counts as no acknowledgement. A member record that
// membership.CheckRecord refuses does not make its worker a member.
// quarantine may be nil.
func (c *Conn) WaitPauseAcks(ctx context.Context, workers []string, seq uint64, quarantine func(BadRecord)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from, err := c.pauseRevision(ctx, seq)
	if err != nil {
		return fmt.Errorf("controlplane: wait for the workers to pause for snapshot %d: %w", seq, err)
	}
	acks := c.cli.Watch(wctx, PauseAckPrefix(c.prefix), clientv3.WithPrefix(), clientv3.WithRev(from))
	acked := map[string]bool{}
	reported := map[recordRev]bool{}
	ack := func(key string, value []byte, rev int64) {
		w, ok := strings.CutPrefix(key, PauseAckPrefix(c.prefix))
		if !ok {
			return
		}
		n, ok := parseSeq(value)
		switch {
		case ok && n == seq:
			acked[w] = true
		case ok && n < seq: // an earlier pause's
		default:
			if k := (recordRev{key, rev}); !reported[k] && quarantine != nil {
				reported[k] = true
				why := fmt.Sprintf("acknowledges pause %q while pause %d is the latest requested", value, seq)
				quarantine(BadRecord{Key: key, Value: value, Revision: rev, Why: why})
			}
		}
	}
	for {
		// The workers alive, and the acknowledgements as they are now
		// (history older than a compaction is gone from the watch).
		resp, err := c.cli.Get(ctx, membership.MembersPrefix(c.prefix)+membership.KindWorker+"/", clientv3.WithPrefix())
		if err != nil {
			return fmt.Errorf("controlplane: wait for the workers to pause for snapshot %d: %w", seq, err)
		}
		live := map[string]bool{}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if m, err := membership.CheckRecord(c.prefix, key, kv.Value, kv.Lease); err == nil {
				live[m.ID] = true
			} else if k := (recordRev{key, kv.ModRevision}); !reported[k] && quarantine != nil {
				reported[k] = true
				quarantine(BadRecord{Key: key, Value: kv.Value, Revision: kv.ModRevision, Why: err.Error()})
			}
		}
		cur, err := c.cli.Get(ctx, PauseAckPrefix(c.prefix), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision))
		if err != nil {
			return fmt.Errorf("controlplane: wait for the workers to pause for snapshot %d: %w", seq, err)
		}
		for _, kv := range cur.Kvs {
			ack(string(kv.Key), kv.Value, kv.ModRevision)
		}
		var waiting []string
		for _, w := range workers {
			if live[w] && !acked[w] {
				waiting = append(waiting, w)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		// Wait for the next change in the cluster's keys, taking the
		// acknowledgements the watch delivers meanwhile.
		if err := c.waitAcks(ctx, resp.Header.Revision, &acks, ack); err != nil {
			return fmt.Errorf("controlplane: %v did not pause for snapshot %d: %w", waiting, seq, err)
		}
	}
}

// waitAcks waits for a change of the cluster's keys after rev, or for
// acknowledgements from *acks, which it hands to ack (*acks is set to nil
// once that watch breaks: the caller's Gets read what is current).
func (c *Conn) waitAcks(ctx context.Context, rev int64, acks *clientv3.WatchChan, ack func(key string, value []byte, rev int64)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := c.cli.Watch(wctx, c.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for {
		select {
		case r, ok := <-*acks:
			if !ok || r.Err() != nil {
				*acks = nil
				continue
			}
			for _, ev := range r.Events {
				if ev.Type == clientv3.EventTypePut {
					ack(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision)
				}
			}
			return nil
		case <-changed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// recordRev names one revision of a record, to report it once.
type recordRev struct {
	key string
	rev int64
}

// pauseRevision returns the revision at which pause seq was requested:
// the pause key's mod revision while it holds seq, else (a later pause,
// or a value that is none) the current revision.
func (c *Conn) pauseRevision(ctx context.Context, seq uint64) (int64, error) {
	resp, err := c.cli.Get(ctx, PauseKey(c.prefix))
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) > 0 {
		if n, ok := parseSeq(resp.Kvs[0].Value); ok && n == seq {
			return resp.Kvs[0].ModRevision, nil
		}
	}
	return resp.Header.Revision, nil
}

// WaitResume waits for a resume of seq or later and returns it; a failed
// cluster's resume is returned with ErrClusterFailed.
func (c *Conn) WaitResume(ctx context.Context, seq uint64) (Resumed, error) {
	r, err := waitFor(ctx, c.cli, ResumeKey(c.prefix), func(b []byte) (Resumed, bool) {
		r, ok := ParseResume(b)
		return r, ok && r.Seq >= seq
	})
	if err != nil {
		return r, fmt.Errorf("controlplane: wait for the resume after pause %d: %w", seq, err)
	}
	if r.Failed {
		return r, fmt.Errorf("%w: %s", ErrClusterFailed, r.Why)
	}
	return r, nil
}

// WatchPauses calls fn with the sequence number of every pause request
// above after (the current one first, if any), in order, until ctx ends
// or fn fails; it returns fn's error or ctx's.
func (c *Conn) WatchPauses(ctx context.Context, after uint64, fn func(seq uint64) error) error {
	last := after
	for {
		seq, err := waitFor(ctx, c.cli, PauseKey(c.prefix), func(b []byte) (uint64, bool) {
			n, ok := parseSeq(b)
			return n, ok && n > last
		})
		if err != nil {
			return err
		}
		if err := fn(seq); err != nil {
			return err
		}
		last = seq
	}
}

// WaitRestored waits for a resume at a version above after: the cluster
// was restored from a snapshot (a worker whose requests failed waits here
// for the recovery). A failed cluster's resume is returned with
// ErrClusterFailed.
func (c *Conn) WaitRestored(ctx context.Context, after uint64) (Resumed, error) {
	r, err := waitFor(ctx, c.cli, ResumeKey(c.prefix), func(b []byte) (Resumed, bool) {
		r, ok := ParseResume(b)
		return r, ok && (r.Failed || r.Version > after)
	})
	if err != nil {
		return r, fmt.Errorf("controlplane: wait for a restore above version %d: %w", after, err)
	}
	if r.Failed {
		return r, fmt.Errorf("%w: %s", ErrClusterFailed, r.Why)
	}
	return r, nil
}

// SnapshotTarget says which snapshot pause request Pause is for and where
// it is written. A worker that keeps model state of its own (the SLIDE
// output layer of an extreme-classification job) writes that state into
// the snapshot before it acknowledges the pause.
type SnapshotTarget struct {
	Pause uint64 `json:"pause"` // the pause request's sequence number
	Seq   uint64 `json:"seq"`   // the snapshot's sequence number
	Store string `json:"store"` // the snapshot store's location
}

// PutSnapshotTarget records t; the scheduler puts it before the pause
// request it describes.
func (c *Conn) PutSnapshotTarget(ctx context.Context, t SnapshotTarget) error {
	return c.putJSON(ctx, SnapshotTargetKey(c.prefix), "snapshot target", t)
}

// GetSnapshotTarget returns the latest SnapshotTarget, and false when
// there is none.
func (c *Conn) GetSnapshotTarget(ctx context.Context) (SnapshotTarget, bool, error) {
	var t SnapshotTarget
	ok, err := c.getJSON(ctx, SnapshotTargetKey(c.prefix), "snapshot target", &t)
	return t, ok, err
}
