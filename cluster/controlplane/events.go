package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// The event log: the leading scheduler appends a report of every join,
// leave, lease expiry, state change and shard map (PutEvent); nothing
// expires them. Operators and tests read them in order (ListEvents).

// ErrBadEvent is returned (wrapped) for an undecodable event.
var ErrBadEvent = errors.New("controlplane: bad event")

// Event types written by the scheduler.
const (
	// EventJoined: Member registered.
	EventJoined = "joined"
	// EventLeft: Member left gracefully (its left marker was written).
	EventLeft = "left"
	// EventLeaseExpired: Member's lease expired without a graceful leave.
	EventLeaseExpired = "lease-expired"
	// EventState: the cluster state changed to State at Version.
	EventState = "state"
	// EventShardMap: a shard map of Version was published.
	EventShardMap = "shardmap"
	// EventQuarantined: a record no process of the job wrote was
	// ignored (Detail: its key and why).
	EventQuarantined = "quarantined"
)

// Event is a scheduler report, stored as JSON under <prefix>/events/<seq>.
type Event struct {
	// Time is when the scheduler made the report.
	Time time.Time `json:"time"`
	// Type is one of the Event* constants.
	Type string `json:"type"`
	// Member is the member concerned, for joined, left and lease-expired.
	Member *membership.Member `json:"member,omitempty"`
	// State is the cluster state after the event (e.g. "SERVING").
	State string `json:"state,omitempty"`
	// Version is the cluster version after the event.
	Version uint64 `json:"version,omitempty"`
	// Detail is free text for humans.
	Detail string `json:"detail,omitempty"`
}

// PutEvent stores e under <prefix>/events/<seq>. The caller picks seq so
// that keys are unique and increasing (the scheduler uses a counter seeded
// from the clock).
func (c *Conn) PutEvent(ctx context.Context, seq uint64, e Event) error {
	return c.putJSON(ctx, EventKey(c.prefix, seq), "event "+e.Type, e)
}

// ListEvents returns the stored events in the order they were written.
func (c *Conn) ListEvents(ctx context.Context) ([]Event, error) {
	resp, err := c.cli.Get(ctx, EventsPrefix(c.prefix), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("controlplane: list events: %w", err)
	}
	out := make([]Event, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var e Event
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadEvent, kv.Key, err)
		}
		out = append(out, e)
	}
	return out, nil
}
