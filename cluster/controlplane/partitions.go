package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The partition deal protocol: with several workers reading one Kafka
// topic, the leading scheduler deals its partitions to the live workers
// (PutPartitionAssignmentIf) and deals again, at a higher generation, when
// a worker joins or leaves. A worker that sees a newer deal
// (WatchReassigned) stores the positions of what it trained on, gives up
// its old partitions and acknowledges the generation (AckPartitions); the
// scheduler waits for every acknowledgement (WaitPartitionAcks) before
// anyone reads under the new deal, so no partition is read twice.
//
// A worker of a bounded job that has read its partitions to their end
// says so (MarkPartitionsDone) before it waits for the others, on
// condition that its deal is still the current one; the scheduler deals
// only to the workers that have not (PartitionsDone), on condition that no
// worker said so since it looked (PutPartitionAssignmentIf). So a worker
// that has stopped reading is never dealt a partition that may hold
// unread messages, and one whose deal was replaced as it finished reads
// its new partitions first: otherwise the rest of a partition moved to it
// would never be read.

// ErrReassigned is returned by WaitPartitionAcks when a newer partition
// assignment replaced the one waited for.
var ErrReassigned = errors.New("controlplane: partitions reassigned")

// PartitionAssignment is the scheduler's deal of a topic's partitions to
// the live workers. Every partition belongs to exactly one worker. A new
// deal (a worker joined or left) has a higher Generation.
type PartitionAssignment struct {
	Generation int64            `json:"generation"`
	Topic      string           `json:"topic"`
	Partitions int              `json:"partitions"`
	Workers    map[string][]int `json:"workers"`
}

// Of returns worker's partitions (nil when it has none).
func (a PartitionAssignment) Of(worker string) []int { return a.Workers[worker] }

// DealPartitions deals partitions 0..n-1 to workers (sorted by name)
// round-robin.
func DealPartitions(gen int64, topic string, n int, workers []string) PartitionAssignment {
	ws := slices.Clone(workers)
	slices.Sort(ws)
	ws = slices.Compact(ws)
	a := PartitionAssignment{Generation: gen, Topic: topic, Partitions: n, Workers: map[string][]int{}}
	for _, w := range ws {
		a.Workers[w] = []int{}
	}
	for p := 0; p < n && len(ws) > 0; p++ {
		w := ws[p%len(ws)]
		a.Workers[w] = append(a.Workers[w], p)
	}
	return a
}

// PutPartitionAssignmentIf publishes a unless a worker has marked its
// partitions done (MarkPartitionsDone) after revision doneRev (that of
// the PartitionsDone read the deal was made from); it reports whether a
// was published.
func (c *Conn) PutPartitionAssignmentIf(ctx context.Context, a PartitionAssignment, doneRev int64) (bool, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("controlplane: partition assignment: %w", err)
	}
	done := PartitionsDonePrefix(c.prefix)
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(done), "<", doneRev+1).WithPrefix()).
		Then(clientv3.OpPut(PartitionsKey(c.prefix), string(b))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("controlplane: put partition assignment: %w", err)
	}
	return resp.Succeeded, nil
}

// partitionsDone is the value of a worker's PartitionsDoneKey.
type partitionsDone struct {
	Generation int64  `json:"generation"` // the deal whose partitions it read to their end
	Version    uint64 `json:"version"`    // the cluster version it trained at
}

// MarkPartitionsDone records that worker, training at cluster version,
// has read its partitions of deal gen to their end and reads no more,
// provided gen is still the current deal: it reports false, recording
// nothing, when a newer deal replaced it (whose partitions the worker must
// read first).
func (c *Conn) MarkPartitionsDone(ctx context.Context, worker string, gen int64, version uint64) (bool, error) {
	key := PartitionsKey(c.prefix)
	resp, err := c.cli.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("controlplane: mark partitions done: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return false, fmt.Errorf("controlplane: mark partitions done: no partition assignment")
	}
	var cur PartitionAssignment
	if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
		return false, fmt.Errorf("%w: partition assignment: %v", ErrBadValue, err)
	}
	if cur.Generation != gen {
		return false, nil
	}
	b, err := json.Marshal(partitionsDone{Generation: gen, Version: version})
	if err != nil {
		return false, err
	}
	txn, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpPut(PartitionsDoneKey(c.prefix, worker), string(b))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("controlplane: mark partitions done: %w", err)
	}
	return txn.Succeeded, nil
}

// PartitionsDone returns the workers that have marked their partitions
// done (MarkPartitionsDone) while training at cluster version (marks of
// other versions are stale: a restored model is read again), and the
// revision of the read, for PutPartitionAssignmentIf.
func (c *Conn) PartitionsDone(ctx context.Context, version uint64) (map[string]bool, int64, error) {
	dir := PartitionsDonePrefix(c.prefix)
	resp, err := c.cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("controlplane: partitions done: %w", err)
	}
	done := map[string]bool{}
	for _, kv := range resp.Kvs {
		var d partitionsDone
		if json.Unmarshal(kv.Value, &d) == nil && d.Version == version {
			done[strings.TrimPrefix(string(kv.Key), dir)] = true
		}
	}
	return done, resp.Header.Revision, nil
}

// GetPartitionAssignment returns the current assignment, if any.
func (c *Conn) GetPartitionAssignment(ctx context.Context) (PartitionAssignment, bool, error) {
	var a PartitionAssignment
	ok, err := c.getJSON(ctx, PartitionsKey(c.prefix), "partition assignment", &a)
	return a, ok, err
}

// WaitPartitionAssignment waits for an assignment of generation >= gen
// that names worker.
func (c *Conn) WaitPartitionAssignment(ctx context.Context, worker string, gen int64) (PartitionAssignment, error) {
	a, err := waitFor(ctx, c.cli, PartitionsKey(c.prefix), func(b []byte) (PartitionAssignment, bool) {
		var a PartitionAssignment
		if json.Unmarshal(b, &a) != nil || a.Generation < gen {
			return a, false
		}
		_, named := a.Workers[worker]
		return a, named
	})
	if err != nil {
		return a, fmt.Errorf("controlplane: wait for a partition assignment naming %s: %w", worker, err)
	}
	return a, nil
}

// WatchReassigned returns a channel closed when an assignment of a
// generation above gen is published; it is watched until ctx ends.
func (c *Conn) WatchReassigned(ctx context.Context, gen int64) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		_, err := waitFor(ctx, c.cli, PartitionsKey(c.prefix), func(b []byte) (struct{}, bool) {
			var a PartitionAssignment
			return struct{}{}, json.Unmarshal(b, &a) == nil && a.Generation > gen
		})
		if err == nil {
			close(ch)
		}
	}()
	return ch
}

// AckPartitions records that worker has released its partitions of
// generations before gen.
func (c *Conn) AckPartitions(ctx context.Context, worker string, gen int64) error {
	if _, err := c.cli.Put(ctx, PartitionsAckKey(c.prefix, worker), strconv.FormatInt(gen, 10)); err != nil {
		return fmt.Errorf("controlplane: acknowledge partitions: %w", err)
	}
	return nil
}

// WaitPartitionAcks waits until every worker of a has acknowledged a's
// generation, so that no partition of a is still read under an older
// deal. It returns ErrReassigned when a newer assignment appears first.
func (c *Conn) WaitPartitionAcks(ctx context.Context, a PartitionAssignment) error {
	// One range holds the assignment and the acknowledgements.
	dir := PartitionsKey(c.prefix)
	for {
		resp, err := c.cli.Get(ctx, dir, clientv3.WithPrefix())
		if err != nil {
			return fmt.Errorf("controlplane: wait for partition acks: %w", err)
		}
		acked := map[string]bool{}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if key == dir {
				var cur PartitionAssignment
				if json.Unmarshal(kv.Value, &cur) == nil && cur.Generation > a.Generation {
					return ErrReassigned
				}
				continue
			}
			for w := range a.Workers {
				if key == PartitionsAckKey(c.prefix, w) {
					g, err := strconv.ParseInt(string(kv.Value), 10, 64)
					acked[w] = err == nil && g >= a.Generation
				}
			}
		}
		all := true
		for w := range a.Workers {
			all = all && acked[w]
		}
		if all {
			return nil
		}
		if err := c.waitChange(ctx, dir, resp.Header.Revision); err != nil {
			return fmt.Errorf("controlplane: wait for partition acks: %w", err)
		}
	}
}
