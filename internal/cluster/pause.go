package cluster

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The snapshot pause protocol. To take a consistent snapshot, the
// scheduler asks the workers to pause (PutPause with the snapshot's
// sequence number); each worker stops at its next batch boundary, waits
// until its pushes are applied, stores its reader positions in the model,
// acknowledges (AckPause) and waits for the resume (WaitResume). A worker
// that is not training acknowledges at once. The scheduler waits for the
// acknowledgements of the live workers (WaitPauseAcks), writes the
// snapshot, and resumes (PutResume) whether the snapshot succeeded or not.
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

// PutResume lets workers paused for snapshots up to seq go on.
func PutResume(ctx context.Context, cli *clientv3.Client, prefix string, seq uint64) error {
	return putSeq(ctx, cli, ResumeKey(prefix), seq)
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

// WaitResume waits for a resume of seq or later.
func WaitResume(ctx context.Context, cli *clientv3.Client, prefix string, seq uint64) error {
	if _, err := waitFor(ctx, cli, ResumeKey(prefix), func(b []byte) (struct{}, bool) {
		n, ok := parseSeq(b)
		return struct{}{}, ok && n >= seq
	}); err != nil {
		return fmt.Errorf("cluster: wait for the resume after snapshot %d: %w", seq, err)
	}
	return nil
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
