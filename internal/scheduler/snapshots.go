package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/internal/cluster"
	"github.com/xdlgo/xps/snapshot"
)

// SnapshotRequestKey is written (any value) to ask the scheduler for a
// snapshot now; cmd/scheduler -snapshot-now does.
func SnapshotRequestKey(prefix string) string { return prefix + "/snapshot/request" }

// SnapshotLastKey holds the JSON SnapshotResult of the latest attempt.
func SnapshotLastKey(prefix string) string { return prefix + "/snapshot/last" }

// SnapshotResult is the outcome of one snapshot attempt.
type SnapshotResult struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Seconds float64   `json:"seconds"`
	Rows    int64     `json:"rows"`
	Workers int       `json:"workers"` // paused for it
	Removed []uint64  `json:"removed,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// snapshotter takes the cluster's snapshots: every Options.SnapshotEvery
// and whenever SnapshotRequestKey changes. Its goroutine is started by New
// and stopped by Close.
func (s *Scheduler) snapshotter(ctx context.Context) {
	var tick <-chan time.Time
	if s.opts.SnapshotEvery > 0 {
		t := time.NewTicker(s.opts.SnapshotEvery)
		defer t.Stop()
		tick = t.C
	}
	requests := s.cli.Watch(ctx, SnapshotRequestKey(s.opts.Prefix))
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case _, ok := <-requests:
			if !ok {
				if ctx.Err() != nil {
					return
				}
				requests = s.cli.Watch(ctx, SnapshotRequestKey(s.opts.Prefix))
				continue
			}
		}
		res := s.takeSnapshot(ctx)
		if ctx.Err() != nil {
			return
		}
		b, _ := json.Marshal(res)
		pctx, cancel := context.WithTimeout(ctx, opTimeout)
		if _, err := s.cli.Put(pctx, SnapshotLastKey(s.opts.Prefix), string(b)); err != nil {
			s.log.Warn("recording the snapshot result failed", "err", err)
		}
		cancel()
	}
}

// takeSnapshot pauses the workers, has every shard write its part, writes
// the manifest, prunes old snapshots and resumes the workers.
func (s *Scheduler) takeSnapshot(ctx context.Context) SnapshotResult {
	start := time.Now()
	res := SnapshotResult{Time: start.UTC()}
	err := s.snapshotOnce(ctx, &res)
	res.Seconds = time.Since(start).Seconds()
	if err != nil {
		res.Error = err.Error()
		s.log.Warn("snapshot failed", "seq", res.Seq, "err", err)
	} else {
		s.log.Info("snapshot written", "seq", res.Seq, "rows", res.Rows, "workers", res.Workers,
			"seconds", res.Seconds, "store", s.opts.SnapshotStore)
	}
	return res
}

func (s *Scheduler) snapshotOnce(ctx context.Context, res *SnapshotResult) error {
	prefix := s.opts.Prefix
	m, err := cluster.GetShardMap(ctx, s.cli, prefix)
	if err != nil || m == nil {
		return fmt.Errorf("no shard map yet: %v", err)
	}
	store, err := snapshot.OpenStore(s.opts.SnapshotStore, "")
	if err != nil {
		return err
	}
	defer store.Close()
	seqs, err := snapshot.Snapshots(store)
	if err != nil {
		return err
	}
	seq := uint64(1)
	if len(seqs) > 0 {
		seq = seqs[0] + 1
	}
	if r, err := s.cli.Get(ctx, cluster.PauseKey(prefix)); err == nil && len(r.Kvs) > 0 {
		var last uint64
		fmt.Sscan(string(r.Kvs[0].Value), &last)
		seq = max(seq, last+1)
	}
	res.Seq = seq
	workers, err := liveWorkers(ctx, s.cli, prefix)
	if err != nil {
		return err
	}
	res.Workers = len(workers)
	if err := cluster.PutPause(ctx, s.cli, prefix, seq); err != nil {
		return err
	}
	defer func() {
		// Resume whatever happened, even when ctx is ending.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		defer cancel()
		if err := cluster.PutResume(rctx, s.cli, prefix, seq, 0); err != nil {
			s.log.Error("resuming the workers failed", "seq", seq, "err", err)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, s.opts.SnapshotPauseTimeout)
	err = cluster.WaitPauseAcks(wctx, s.cli, prefix, workers, seq)
	cancel()
	if err != nil {
		return fmt.Errorf("workers did not pause within %v: %w", s.opts.SnapshotPauseTimeout, err)
	}
	cl, err := client.New(m)
	if err != nil {
		return err
	}
	defer cl.Close()
	man, err := cl.WriteSnapshot(ctx, client.SnapshotOptions{Store: s.opts.SnapshotStore, Seq: seq})
	if err != nil {
		return err
	}
	for _, t := range man.Tables {
		for _, f := range t.Files {
			res.Rows += f.Rows
		}
	}
	res.Removed, err = snapshot.Prune(store, s.opts.SnapshotKeep)
	return err
}

// liveWorkers lists the registered workers.
func liveWorkers(ctx context.Context, cli *clientv3.Client, prefix string) ([]string, error) {
	p := cluster.MembersPrefix(prefix) + cluster.KindWorker + "/"
	resp, err := cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), p))
	}
	return out, nil
}

// RequestSnapshot asks the cluster's scheduler for a snapshot now and
// waits for its result.
func RequestSnapshot(ctx context.Context, cli *clientv3.Client, prefix string) (SnapshotResult, error) {
	before, err := cli.Get(ctx, SnapshotLastKey(prefix))
	if err != nil {
		return SnapshotResult{}, err
	}
	rev := before.Header.Revision
	if _, err := cli.Put(ctx, SnapshotRequestKey(prefix), time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return SnapshotResult{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range cli.Watch(wctx, SnapshotLastKey(prefix), clientv3.WithRev(rev+1)) {
		for _, ev := range resp.Events {
			var r SnapshotResult
			if json.Unmarshal(ev.Kv.Value, &r) != nil {
				continue
			}
			if r.Error != "" {
				return r, errors.New("scheduler: snapshot: " + r.Error)
			}
			return r, nil
		}
	}
	return SnapshotResult{}, fmt.Errorf("scheduler: waiting for the snapshot: %w", context.Cause(ctx))
}
