package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The pause protocol. To take a consistent snapshot, or to roll the
// cluster back to one, the scheduler asks the workers to pause (PutPause
// with a new sequence number); each worker stops at its next batch
// boundary, waits until its pushes are applied, stores its reader
// positions in the model, acknowledges (AckPause) and waits for the resume
// (WaitResume). A worker that is not training acknowledges at once. For a
// snapshot the scheduler waits for the acknowledgements of the live
// workers (WaitPauseAcks), writes the snapshot, and resumes (PutResume)
// whether the snapshot succeeded or not. A resume carries the cluster
// version training goes on at: a version above the one a worker trained
// at means the cluster was restored from a snapshot meanwhile, so the
// worker drops what it was doing and starts over from the reader positions
// the restored model holds. When the cluster cannot recover, the resume
// says so (PutFailed) and waiting workers stop with ErrClusterFailed.
// Sequence numbers only grow.

// PauseKey holds the sequence number of the latest pause request.
func PauseKey(prefix string) string { return prefix + "/snapshot/pause" }

// PauseAckKey holds the latest pause a worker has acknowledged.
func PauseAckKey(prefix, worker string) string { return prefix + "/snapshot/paused/" + worker }

// ResumeKey holds the sequence number of the latest resume.
func ResumeKey(prefix string) string { return prefix + "/snapshot/resume" }

func putSeq(ctx context.Context, cli *clientv3.Client, key string, seq uint64) error {
	if _, err := cli.Put(ctx, key, strconv.FormatUint(seq, 10)); err != nil {
		return fmt.Errorf("cluster: put %s: %w", key, err)
	}
	return nil
}

func parseSeq(b []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil
}

// PutPause asks the workers to pause for snapshot seq.
func PutPause(ctx context.Context, cli *clientv3.Client, prefix string, seq uint64) error {
	return putSeq(ctx, cli, PauseKey(prefix), seq)
}

// PutResume lets workers paused for requests up to seq go on, at cluster
// version version (0: the version they trained at).
func PutResume(ctx context.Context, cli *clientv3.Client, prefix string, seq, version uint64) error {
	v := strconv.FormatUint(seq, 10)
	if version > 0 {
		v += " " + strconv.FormatUint(version, 10)
	}
	if _, err := cli.Put(ctx, ResumeKey(prefix), v); err != nil {
		return fmt.Errorf("cluster: put %s: %w", ResumeKey(prefix), err)
	}
	return nil
}

// ErrClusterFailed is returned (wrapped) by WaitResume when the scheduler
// gave up: the cluster lost state and had no snapshot to roll back to.
var ErrClusterFailed = errors.New("cluster: the cluster failed and cannot recover")

// PutFailed tells every waiting worker (and later ones) that the cluster
// failed, with why.
func PutFailed(ctx context.Context, cli *clientv3.Client, prefix string, why string) error {
	if _, err := cli.Put(ctx, ResumeKey(prefix), "failed "+why); err != nil {
		return fmt.Errorf("cluster: put %s: %w", ResumeKey(prefix), err)
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

// AckPause records that worker is paused for snapshot seq (or is not
// training).
func AckPause(ctx context.Context, cli *clientv3.Client, prefix, worker string, seq uint64) error {
	return putSeq(ctx, cli, PauseAckKey(prefix, worker), seq)
}

// WaitPauseAcks waits until each of workers has acknowledged pause seq or
// is no longer a member (it left or its lease expired: it pushes nothing).
func WaitPauseAcks(ctx context.Context, cli *clientv3.Client, prefix string, workers []string, seq uint64) error {
	for {
		resp, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return fmt.Errorf("cluster: wait for the workers to pause for snapshot %d: %w", seq, err)
		}
		keys := map[string]bool{}
		for _, kv := range resp.Kvs {
			keys[string(kv.Key)] = true
		}
		var waiting []string
		for _, w := range workers {
			if !keys[MemberKey(prefix, KindWorker, w)] {
				continue
			}
			r, err := cli.Get(ctx, PauseAckKey(prefix, w))
			if err != nil {
				return fmt.Errorf("cluster: wait for %s to pause for snapshot %d: %w", w, seq, err)
			}
			if len(r.Kvs) == 0 {
				waiting = append(waiting, w)
				continue
			}
			if n, ok := parseSeq(r.Kvs[0].Value); !ok || n < seq {
				waiting = append(waiting, w)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		// Wait for the next change in the cluster's keys.
		wctx, cancel := context.WithCancel(ctx)
		wch := cli.Watch(wctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		select {
		case <-wch:
		case <-ctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("cluster: %v did not pause for snapshot %d: %w", waiting, seq, ctx.Err())
		}
	}
}

// WaitResume waits for a resume of seq or later and returns it; a failed
// cluster's resume is returned with ErrClusterFailed.
func WaitResume(ctx context.Context, cli *clientv3.Client, prefix string, seq uint64) (Resumed, error) {
	r, err := waitFor(ctx, cli, ResumeKey(prefix), func(b []byte) (Resumed, bool) {
		r, ok := ParseResume(b)
		return r, ok && r.Seq >= seq
	})
	if err != nil {
		return r, fmt.Errorf("cluster: wait for the resume after pause %d: %w", seq, err)
	}
	if r.Failed {
		return r, fmt.Errorf("%w: %s", ErrClusterFailed, r.Why)
	}
	return r, nil
}

// WatchPauses calls fn with the sequence number of every pause request
// above after (the current one first, if any), in order, until ctx ends
// or fn fails; it returns fn's error or ctx's.
func WatchPauses(ctx context.Context, cli *clientv3.Client, prefix string, after uint64, fn func(seq uint64) error) error {
	last := after
	for {
		seq, err := waitFor(ctx, cli, PauseKey(prefix), func(b []byte) (uint64, bool) {
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
func WaitRestored(ctx context.Context, cli *clientv3.Client, prefix string, after uint64) (Resumed, error) {
	r, err := waitFor(ctx, cli, ResumeKey(prefix), func(b []byte) (Resumed, bool) {
		r, ok := ParseResume(b)
		return r, ok && (r.Failed || r.Version > after)
	})
	if err != nil {
		return r, fmt.Errorf("cluster: wait for a restore above version %d: %w", after, err)
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

// SnapshotTargetKey holds the SnapshotTarget of the latest snapshot pause.
func SnapshotTargetKey(prefix string) string { return prefix + "/snapshot/target" }

// PutSnapshotTarget records t; the scheduler puts it before the pause
// request it describes.
func PutSnapshotTarget(ctx context.Context, cli *clientv3.Client, prefix string, t SnapshotTarget) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := cli.Put(ctx, SnapshotTargetKey(prefix), string(b)); err != nil {
		return fmt.Errorf("cluster: put %s: %w", SnapshotTargetKey(prefix), err)
	}
	return nil
}

// GetSnapshotTarget returns the latest SnapshotTarget, and false when
// there is none.
func GetSnapshotTarget(ctx context.Context, cli *clientv3.Client, prefix string) (SnapshotTarget, bool, error) {
	resp, err := cli.Get(ctx, SnapshotTargetKey(prefix))
	if err != nil {
		return SnapshotTarget{}, false, fmt.Errorf("cluster: get %s: %w", SnapshotTargetKey(prefix), err)
	}
	if len(resp.Kvs) == 0 {
		return SnapshotTarget{}, false, nil
	}
	var t SnapshotTarget
	if err := json.Unmarshal(resp.Kvs[0].Value, &t); err != nil {
		return SnapshotTarget{}, false, fmt.Errorf("cluster: %s: %w", SnapshotTargetKey(prefix), err)
	}
	return t, true, nil
}
