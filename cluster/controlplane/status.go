package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// The status protocol: what a scheduler's status page shows. Each worker
// publishes its latest progress report (PutProgress) under its
// registration's lease, so the report goes with the worker; latest wins,
// and the history is the reader's to keep. A status page follows the
// reports and the snapshot and export results (WatchStatus) and reads the
// members with their leases (MemberStatuses) and the leader (Leader, in
// leadership.go) when it is asked for.

// PutProgress stores report, as JSON, as the latest progress report of the
// registered worker reg, under reg's lease. An encoding error (a NaN of a
// record that does not encode it) is returned, nothing stored.
func (c *Conn) PutProgress(ctx context.Context, reg *membership.Registration, report any) error {
	m := reg.Member()
	return c.putJSON(ctx, ProgressKey(c.prefix, m.ID), "progress of "+m.ID, report, clientv3.WithLease(reg.Lease()))
}

// StatusUpdate is one value a status page follows; exactly one of
// Progress, Snapshot and Export is set.
type StatusUpdate struct {
	// Rev is the etcd revision that wrote the value: a value read again
	// (after a broken watch) comes with the revision it had.
	Rev int64
	// Worker and Progress are a worker's latest progress report, as the
	// worker encoded it (package job's Progress).
	Worker   string
	Progress json.RawMessage
	// Snapshot and Export are the latest snapshot and export results.
	Snapshot *SnapshotResult
	Export   *ExportResult
}

// WatchStatus calls fn with the stored progress reports and snapshot and
// export results, read at one revision, then with every one written after
// it, in order per key, until ctx ends (it returns nil then) or the watch
// breaks (it returns why; call it again). Deletions are not reported: a
// worker's report goes with its lease, which its member record shows. An
// undecodable result is skipped.
func (c *Conn) WatchStatus(ctx context.Context, fn func(StatusUpdate)) error {
	resp, err := c.cli.Txn(ctx).Then(
		clientv3.OpGet(ProgressPrefix(c.prefix), clientv3.WithPrefix()),
		clientv3.OpGet(SnapshotLastKey(c.prefix)),
		clientv3.OpGet(ExportLastKey(c.prefix))).Commit()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("controlplane: read the status: %w", err)
	}
	for _, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().Kvs {
			c.statusUpdate(string(kv.Key), kv.Value, kv.ModRevision, fn)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rev := clientv3.WithRev(resp.Header.Revision + 1)
	progress := c.cli.Watch(wctx, ProgressPrefix(c.prefix), clientv3.WithPrefix(), rev)
	snaps := c.cli.Watch(wctx, SnapshotLastKey(c.prefix), rev)
	exps := c.cli.Watch(wctx, ExportLastKey(c.prefix), rev)
	for {
		var w clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case w, ok = <-progress:
		case w, ok = <-snaps:
		case w, ok = <-exps:
		}
		if ctx.Err() != nil {
			return nil
		}
		if !ok || w.Err() != nil {
			return fmt.Errorf("controlplane: watch the status: %w", errors.Join(errors.New("the watch ended"), w.Err()))
		}
		for _, ev := range w.Events {
			if ev.Type == clientv3.EventTypePut {
				c.statusUpdate(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision, fn)
			}
		}
	}
}

// statusUpdate hands fn the value of key written at rev.
func (c *Conn) statusUpdate(key string, value []byte, rev int64, fn func(StatusUpdate)) {
	u := StatusUpdate{Rev: rev}
	switch {
	case strings.HasPrefix(key, ProgressPrefix(c.prefix)):
		u.Worker = strings.TrimPrefix(key, ProgressPrefix(c.prefix))
		u.Progress = json.RawMessage(append([]byte(nil), value...))
	case key == SnapshotLastKey(c.prefix):
		u.Snapshot = new(SnapshotResult)
		if json.Unmarshal(value, u.Snapshot) != nil {
			return
		}
	case key == ExportLastKey(c.prefix):
		u.Export = new(ExportResult)
		if json.Unmarshal(value, u.Export) != nil {
			return
		}
	default:
		return
	}
	fn(u)
}

// MemberStatus is a registered member and its lease.
type MemberStatus struct {
	membership.Member
	// Lease is the member's etcd lease. TTL is the lease's granted TTL,
	// Left what remains of it: etcd sets it back to TTL at each keep-alive
	// (a member's heartbeat, sent every third of the TTL), so TTL - Left
	// is about the time since the member's last heartbeat, to the second.
	// Left is -1 when the lease has expired, or could not be asked.
	// In JSON the durations are nanoseconds.
	Lease clientv3.LeaseID `json:"lease"`
	TTL   time.Duration    `json:"ttl"`
	Left  time.Duration    `json:"left"`
}

// MemberStatuses lists the registered members, sorted by kind and id, with
// their leases' time to live (one call per lease).
func (c *Conn) MemberStatuses(ctx context.Context) ([]MemberStatus, error) {
	resp, err := c.cli.Get(ctx, MembersPrefix(c.prefix), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("controlplane: list members: %w", err)
	}
	out := make([]MemberStatus, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kind, id, ok := membership.ParseMemberKey(c.prefix, string(kv.Key))
		if !ok {
			continue
		}
		m, err := membership.DecodeMember(kind, id, kv.Value)
		if err != nil {
			continue
		}
		s := MemberStatus{Member: m, Lease: clientv3.LeaseID(kv.Lease), Left: -1}
		if ttl, err := c.cli.TimeToLive(ctx, s.Lease); err == nil && ttl.TTL >= 0 {
			s.TTL, s.Left = time.Duration(ttl.GrantedTTL)*time.Second, time.Duration(ttl.TTL)*time.Second
		}
		out = append(out, s)
	}
	return out, nil
}
