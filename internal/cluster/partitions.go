package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrReassigned is returned by WaitPartitionAcks when a newer partition
// assignment replaced the one waited for.
var ErrReassigned = errors.New("cluster: partitions reassigned")

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

// PartitionsKey is the key of the current partition assignment.
func PartitionsKey(prefix string) string { return prefix + "/partitions" }

// PartitionsAckKey is the key where worker acknowledges the generation it
// has stopped reading for: it has stored the positions of everything it
// trained on and released every partition of earlier generations.
func PartitionsAckKey(prefix, worker string) string { return prefix + "/partitions-ack/" + worker }

// PutPartitionAssignment publishes a.
func PutPartitionAssignment(ctx context.Context, cli *clientv3.Client, prefix string, a PartitionAssignment) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("cluster: partition assignment: %w", err)
	}
	if _, err := cli.Put(ctx, PartitionsKey(prefix), string(b)); err != nil {
		return fmt.Errorf("cluster: publish partition assignment: %w", err)
	}
	return nil
}

// GetPartitionAssignment returns the current assignment, if any.
func GetPartitionAssignment(ctx context.Context, cli *clientv3.Client, prefix string) (PartitionAssignment, bool, error) {
	resp, err := cli.Get(ctx, PartitionsKey(prefix))
	if err != nil {
		return PartitionAssignment{}, false, fmt.Errorf("cluster: get partition assignment: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return PartitionAssignment{}, false, nil
	}
	var a PartitionAssignment
	if err := json.Unmarshal(resp.Kvs[0].Value, &a); err != nil {
		return a, false, fmt.Errorf("cluster: bad partition assignment: %w", err)
	}
	return a, true, nil
}

// WaitPartitionAssignment waits for an assignment of generation >= gen
// that names worker.
func WaitPartitionAssignment(ctx context.Context, cli *clientv3.Client, prefix, worker string, gen int64) (PartitionAssignment, error) {
	a, err := waitFor(ctx, cli, PartitionsKey(prefix), func(b []byte) (PartitionAssignment, bool) {
		var a PartitionAssignment
		if json.Unmarshal(b, &a) != nil || a.Generation < gen {
			return a, false
		}
		_, named := a.Workers[worker]
		return a, named
	})
	if err != nil {
		return a, fmt.Errorf("cluster: wait for a partition assignment naming %s: %w", worker, err)
	}
	return a, nil
}

// WatchReassigned returns a channel closed when an assignment of a
// generation above gen is published; it is watched until ctx ends.
func WatchReassigned(ctx context.Context, cli *clientv3.Client, prefix string, gen int64) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		_, err := waitFor(ctx, cli, PartitionsKey(prefix), func(b []byte) (struct{}, bool) {
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
func AckPartitions(ctx context.Context, cli *clientv3.Client, prefix, worker string, gen int64) error {
	if _, err := cli.Put(ctx, PartitionsAckKey(prefix, worker), strconv.FormatInt(gen, 10)); err != nil {
		return fmt.Errorf("cluster: acknowledge partitions: %w", err)
	}
	return nil
}

// WaitPartitionAcks waits until every worker of a has acknowledged a's
// generation, so that no partition of a is still read under an older
// deal. It returns ErrReassigned when a newer assignment appears first.
func WaitPartitionAcks(ctx context.Context, cli *clientv3.Client, prefix string, a PartitionAssignment) error {
	for {
		resp, err := cli.Get(ctx, prefix+"/partitions", clientv3.WithPrefix())
		if err != nil {
			return fmt.Errorf("cluster: wait for partition acks: %w", err)
		}
		acked := map[string]bool{}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if key == PartitionsKey(prefix) {
				var cur PartitionAssignment
				if json.Unmarshal(kv.Value, &cur) == nil && cur.Generation > a.Generation {
					return ErrReassigned
				}
				continue
			}
			for w := range a.Workers {
				if key == PartitionsAckKey(prefix, w) {
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
		// Wait for the next change under the prefix.
		wctx, cancel := context.WithCancel(ctx)
		wch := cli.Watch(wctx, prefix+"/partitions", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		select {
		case <-wch:
		case <-ctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("cluster: wait for partition acks: %w", ctx.Err())
		}
	}
}
