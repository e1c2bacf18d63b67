// Package membership is how the processes of an xps cluster (AMS shards,
// workers, schedulers) announce themselves in etcd, keep themselves alive
// and leave. It knows nothing of what the processes do: the protocols
// between them (shard map, pauses, assignments, barriers, leadership) are
// package controlplane, built on the registrations made here.
//
// # Key layout
//
// Every key of one cluster lives under a prefix, "/xps/<cluster>" (see
// [Prefix]; [DefaultPrefix] is "/xps/default"). This package owns two key
// families (controlplane/keys.go lists every key of a cluster):
//
//	<prefix>/members/<kind>/<id>  Member JSON {kind, id, addr, pid, started},
//	                              attached to the member's lease. The lease's
//	                              keep-alive is the member's heartbeat: when it
//	                              stops for the lease TTL, etcd deletes the key.
//	<prefix>/left/<kind>/<id>     Member JSON plus "left" (time), no lease.
//	                              Written by a graceful [Registration.Close] in
//	                              the same transaction that deletes the member
//	                              key, before the lease is revoked.
//
// Kinds are [KindAMS], [KindWorker] and [KindScheduler]. An id is 1 to 128
// bytes of letters, digits and ".-_:"; a cluster name likewise.
//
// # Invariants
//
//  1. At most one live registration exists per (kind, id): [Register] creates
//     the member key only if it does not exist, so a restarted process must
//     wait for the old lease to expire (or the old process to leave).
//  2. A member key is deleted either by etcd when its lease expires, or by
//     [Registration.Close] together with a put of its left marker (one
//     transaction, one revision). So a watcher that sees the delete of
//     members/<kind>/<id> while left/<kind>/<id> exists knows the leave was
//     graceful; without the marker the lease expired.
//  3. [Register] deletes a stale left marker in the transaction that creates
//     the member key, so a left marker always belongs to the latest
//     incarnation. Left markers are not otherwise removed; they are small and
//     one per member id.
//
// # Usage
//
// A process (AMS shard, worker, scheduler):
//
//  1. dials etcd ([Dial] or clientv3.New); [Dial] fails within seconds
//     with an error naming the endpoints: [ErrTLSMismatch] when the
//     process and etcd disagree on TLS, [ErrUnreachable] otherwise;
//  2. calls [Register] with its Member and a lease TTL;
//  3. selects on [Registration.Lost] next to its work: a closed Lost means
//     the cluster considers it dead, and it must stop serving;
//  4. on shutdown calls [Registration.Close], which leaves cleanly.
//
// Keys that must die with a member (a barrier arrival, a scheduler's
// election key) are put under [Registration.Lease].
//
// # Files
//
//   - member.go: Member, its Validate, the member and left keys (Prefix, MemberKey, LeftKey and their parsers) and CheckRecord.
//   - register.go: Register, a Registration under a lease (Lost, Close, Abandon) and ListMembers.
//   - keep.go: Keep, a Kept registration that registers again as the same member after its lease is lost.
//   - dial.go: Dial of etcd with its options (WithTLS) and ZapLogger, etcd's log onto slog.
//   - probe.go: the probe that tells a TLS mismatch when Dial's first read fails.
package membership
