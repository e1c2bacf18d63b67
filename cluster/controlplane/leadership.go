package controlplane

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/xdlgo/xps/cluster/membership"
)

// The leadership protocol: every scheduler campaigns in one etcd election
// (Elect) on its registration's lease, so leadership ends with the lease;
// the leader records each cluster state it enters (PutClusterState), and
// a scheduler elected later reads it (GetClusterState) to adopt a
// serving cluster instead of restoring it.

// Leadership is a won election. Resign gives it up; it also ends when the
// registration's lease does.
type Leadership struct {
	el          *concurrency.Election
	stopSession context.CancelFunc
	sess        *concurrency.Session
}

// Elect campaigns, as id, to lead the cluster's schedulers, on reg's lease,
// and blocks until elected or ctx ends (its error is returned).
func (c *Conn) Elect(ctx context.Context, reg *membership.Registration, id string) (*Leadership, error) {
	sctx, stopSession := context.WithCancel(ctx)
	sess, err := concurrency.NewSession(c.cli, concurrency.WithLease(reg.Lease()), concurrency.WithContext(sctx))
	if err != nil {
		stopSession()
		return nil, fmt.Errorf("controlplane: election session: %w", err)
	}
	l := &Leadership{el: concurrency.NewElection(sess, LeaderKey(c.prefix)), stopSession: stopSession, sess: sess}
	if err := l.el.Campaign(ctx, id); err != nil {
		l.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("controlplane: campaign: %w", err)
	}
	return l, nil
}

// Resign gives the leadership up (best effort within ctx) and releases the
// election's session, leaving the registration's lease alive.
func (l *Leadership) Resign(ctx context.Context) {
	l.el.Resign(ctx)
	l.close()
}

func (l *Leadership) close() {
	l.stopSession() // never sess.Close: it would revoke the registration's lease
	<-l.sess.Done()
}

// Leader returns the id of the scheduler that leads the cluster (the
// election's oldest candidate), and false when none campaigns.
func (c *Conn) Leader(ctx context.Context) (string, bool, error) {
	resp, err := c.cli.Get(ctx, LeaderKey(c.prefix)+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", false, fmt.Errorf("controlplane: the leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}

// ClusterState is the record of the cluster state the leading scheduler
// last entered.
type ClusterState struct {
	Phase   string    `json:"phase"`
	Version uint64    `json:"version"`
	Time    time.Time `json:"time"`
	// Lives are the lives (membership.Member.Life) of the map's shards and
	// of the live workers, by "kind/id": a leader that takes over waits
	// for those not live, which may register again with their state.
	Lives map[string]string `json:"lives,omitempty"`
	// Waiting marks a DEGRADED state that only waits for members of Lives
	// to register again: the state at Version is intact but for them, and
	// a leader that takes over waits for them too instead of restoring.
	Waiting bool `json:"waiting,omitempty"`
}

// PutClusterState records the state the leader entered.
func (c *Conn) PutClusterState(ctx context.Context, s ClusterState) error {
	return c.putJSON(ctx, StateKey(c.prefix), "cluster state", s)
}

// GetClusterState returns the recorded state, and false when there is none.
func (c *Conn) GetClusterState(ctx context.Context) (ClusterState, bool, error) {
	var s ClusterState
	ok, err := c.getJSON(ctx, StateKey(c.prefix), "cluster state", &s)
	return s, ok, err
}
