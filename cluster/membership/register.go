package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultTTL is the lease TTL Register uses when given ttl <= 0.
const DefaultTTL = 5 * time.Second

// closeTimeout bounds the etcd calls made by Registration.Close.
const closeTimeout = 5 * time.Second

// leftRecord is the value of a left marker.
type leftRecord struct {
	Member
	Left time.Time `json:"left"`
}

// Registration is a member's live entry in etcd: a lease, the member key
// attached to it, and the goroutine that keeps the lease alive. It is safe
// for concurrent use.
type Registration struct {
	cli    *clientv3.Client
	prefix string
	member Member
	lease  clientv3.LeaseID
	ttl    int64 // seconds granted by etcd

	cancel  context.CancelFunc // stops the keep-alive
	lost    chan struct{}
	done    chan struct{} // closed when the keep-alive goroutine exits
	closing atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// Register grants a lease of ttl (rounded up to whole seconds; etcd may raise
// it to its minimum; ttl <= 0 means DefaultTTL), creates the member key
// <prefix>/members/<kind>/<id> under it, deletes any stale left marker of the
// same member, and starts keeping the lease alive. ctx bounds only these
// calls; the keep-alive runs until Close or until the lease is lost.
//
// A zero m.PID is replaced by the current process id, a zero m.Started by the
// current time. Register fails with ErrMemberExists if a live member with the
// same kind and id is registered. When the key is taken it first waits, up to
// the holder's lease TTL and a second, for the key to go: the
// holder may be an earlier run of this member, killed and restarted by a
// supervisor before its lease expired.
func Register(ctx context.Context, cli *clientv3.Client, prefix string, m Member, ttl time.Duration) (*Registration, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.PID == 0 {
		m.PID = os.Getpid()
	}
	if m.Started.IsZero() {
		m.Started = time.Now()
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	val, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("membership: register %s: %w", m, err)
	}

	r, held, err := register(ctx, cli, prefix, m, val, secs)
	if errors.Is(err, ErrMemberExists) && waitExpiry(ctx, cli, MemberKey(prefix, m.Kind, m.ID), held) {
		// An earlier run of this member (a process restarted within its
		// lease TTL, as supervisors do) held the key until its lease
		// expired: register now.
		r, _, err = register(ctx, cli, prefix, m, val, secs)
	}
	return r, err
}

// waitExpiry waits until key, held under lease, is gone: at most the
// lease's TTL and a second. It reports false when the key is
// still there (its holder is alive and renews its lease) or held under
// another lease.
func waitExpiry(ctx context.Context, cli *clientv3.Client, key string, lease clientv3.LeaseID) bool {
	if lease == clientv3.NoLease {
		return false
	}
	ttl, err := cli.TimeToLive(ctx, lease)
	if err != nil {
		return false
	}
	// The granted TTL, not the remaining one (whole seconds, rounded
	// down), and a second for etcd's expiry checks.
	deadline := time.Now().Add(time.Duration(max(ttl.TTL, ttl.GrantedTTL))*time.Second + time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := cli.Get(ctx, key)
		if err != nil {
			return false
		}
		if len(resp.Kvs) == 0 {
			return true
		}
		if clientv3.LeaseID(resp.Kvs[0].Lease) != lease {
			return false
		}
	}
	return false
}

// register is one attempt of Register; on ErrMemberExists it also returns
// the lease the key is held under.
func register(ctx context.Context, cli *clientv3.Client, prefix string, m Member, val []byte, secs int64) (*Registration, clientv3.LeaseID, error) {
	grant, err := cli.Grant(ctx, secs)
	if err != nil {
		return nil, 0, fmt.Errorf("membership: register %s: grant lease: %w", m, err)
	}
	lease := grant.ID
	revoke := func() {
		rctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_, _ = cli.Revoke(rctx, lease) // best effort; the lease expires anyway
	}

	key := MemberKey(prefix, m.Kind, m.ID)
	txn, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease)),
			clientv3.OpDelete(LeftKey(prefix, m.Kind, m.ID))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		revoke()
		return nil, 0, fmt.Errorf("membership: register %s: %w", m, err)
	}
	if !txn.Succeeded {
		revoke()
		held, heldLease := "", clientv3.NoLease
		if r := txn.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			held, heldLease = ": "+string(r.Kvs[0].Value), clientv3.LeaseID(r.Kvs[0].Lease)
		}
		return nil, heldLease, fmt.Errorf("%w: %s%s", ErrMemberExists, m, held)
	}

	kaCtx, cancel := context.WithCancel(context.Background())
	ka, err := cli.KeepAlive(kaCtx, lease)
	if err != nil {
		cancel()
		revoke()
		return nil, 0, fmt.Errorf("membership: register %s: keep-alive: %w", m, err)
	}
	r := &Registration{
		cli: cli, prefix: prefix, member: m, lease: lease, ttl: grant.TTL,
		cancel: cancel, lost: make(chan struct{}), done: make(chan struct{}),
	}
	go r.keepAlive(ka)
	return r, lease, nil
}

// keepAlive drains keep-alive responses until the channel closes: on Close,
// on lease expiry, or when the client is closed.
func (r *Registration) keepAlive(ka <-chan *clientv3.LeaseKeepAliveResponse) {
	defer close(r.done)
	for range ka {
	}
	if !r.closing.Load() {
		close(r.lost)
	}
}

// ErrNotRegistered is returned (wrapped) by CheckRegistered when the
// member's key is gone or belongs to another lease: the cluster has
// declared this incarnation dead, whether or not its lease loss has been
// noticed yet.
var ErrNotRegistered = errors.New("membership: no longer registered")

// CheckRegistered asks etcd whether the member's key still exists under
// this registration's lease. A worker calls it before it resumes after a
// rollback: the rollback may have been caused by its own death (a frozen
// process whose lease expired), and such a worker must not train on.
func (r *Registration) CheckRegistered(ctx context.Context) error {
	resp, err := r.cli.Get(ctx, MemberKey(r.prefix, r.member.Kind, r.member.ID))
	if err != nil {
		return fmt.Errorf("membership: check the registration of %s: %w", r.member, err)
	}
	if len(resp.Kvs) == 0 || clientv3.LeaseID(resp.Kvs[0].Lease) != r.lease {
		return fmt.Errorf("%w: %s", ErrNotRegistered, r.member)
	}
	return nil
}

// Member returns the registered member, with PID and Started filled in.
func (r *Registration) Member() Member { return r.member }

// Lease returns the id of the registration's lease.
func (r *Registration) Lease() clientv3.LeaseID { return r.lease }

// TTL returns the lease TTL granted by etcd.
func (r *Registration) TTL() time.Duration { return time.Duration(r.ttl) * time.Second }

// Lost returns a channel closed when the lease can no longer be kept alive
// (it expired, was revoked by someone else, or the client was closed) before
// Close was called. A member whose registration is lost is considered dead by
// the cluster and must stop serving. Close never closes the channel.
func (r *Registration) Lost() <-chan struct{} { return r.lost }

// Close leaves the cluster gracefully: in one transaction, and only while the
// member key is still attached to this registration's lease, it writes the
// left marker and deletes the member key; then it revokes the lease and stops
// the keep-alive goroutine. If the lease was already lost no left marker is
// written: the leave was not graceful. Close returns the first error met; it
// always stops the goroutine. Later calls return the same result.
func (r *Registration) Close() error { return r.close(true) }

// Abandon leaves the cluster as a member that died does: it revokes the
// lease without writing the left marker, so the others see the member key
// go without a graceful leave at once, instead of after the lease's TTL.
// A worker whose pushes the model holds beyond its checkpoint abandons
// its registration: the scheduler then rolls the model back to its last
// snapshot, as after a crash. Close and Abandon are one-shot together:
// the first call decides, later calls return its result.
func (r *Registration) Abandon() error { return r.close(false) }

func (r *Registration) close(graceful bool) error {
	r.closeOnce.Do(func() {
		r.closing.Store(true)
		defer func() {
			r.cancel()
			<-r.done
		}()
		if err := r.cli.Ctx().Err(); err != nil {
			// The client is closed: nothing can be written, the lease will
			// expire and the leave will be seen as not graceful.
			r.closeErr = fmt.Errorf("membership: close %s: client closed: %w", r.member, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if graceful {
			r.closeErr = r.leave(ctx)
		}
		if _, err := r.cli.Revoke(ctx, r.lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) && r.closeErr == nil {
			r.closeErr = fmt.Errorf("membership: close %s: revoke lease: %w", r.member, err)
		}
	})
	return r.closeErr
}

func (r *Registration) leave(ctx context.Context) error {
	val, err := json.Marshal(leftRecord{Member: r.member, Left: time.Now()})
	if err != nil {
		return fmt.Errorf("membership: close %s: %w", r.member, err)
	}
	key := MemberKey(r.prefix, r.member.Kind, r.member.ID)
	_, err = r.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(key), "=", r.lease)).
		Then(clientv3.OpPut(LeftKey(r.prefix, r.member.Kind, r.member.ID), string(val)),
			clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("membership: close %s: write left marker: %w", r.member, err)
	}
	return nil
}

// ListMembers returns the live members of the given kind ("" for all kinds),
// sorted by kind and id.
func ListMembers(ctx context.Context, cli *clientv3.Client, prefix, kind string) ([]Member, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	dir := MembersPrefix(prefix)
	if kind != "" {
		if err := checkKind(kind); err != nil {
			return nil, err
		}
		dir += kind + "/"
	}
	resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("membership: list members: %w", err)
	}
	out := make([]Member, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		k, id, ok := ParseMemberKey(prefix, string(kv.Key))
		if !ok {
			return nil, fmt.Errorf("%w: unexpected key %q", ErrBadMember, kv.Key)
		}
		m, err := DecodeMember(k, id, kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
