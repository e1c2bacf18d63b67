package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/membership"
)

// A Grant is one permission of an etcd role: one key, or every key that
// starts with Key when Prefix, to read, or to read and write.
type Grant struct {
	Key    string
	Prefix bool
	Write  bool
}

// The etcd users of the components, the CommonNames of their certificates
// (package tlsconf's roles; an etcd with client-cert-auth takes a
// certificate's CN as its user).
const (
	UserScheduler = "scheduler"
	UserAMS       = "ams"
	UserWorker    = "worker"
	// UserAdmin is an operator's user: it holds etcd's root role (it may
	// do everything, provisioning again included).
	UserAdmin = "admin"
	// UserEtcd is the etcd members' own user (cmd/etcd -auth-clusters
	// provisions through it): it holds the root role too.
	UserEtcd = "etcd"
)

// dialCheckKey is the key membership.Dial reads to see that etcd answers.
const dialCheckKey = "/xps"

// Access returns the permissions of each component's user on the cluster
// under prefix, from the table of keys (keys.go): every component reads
// the whole cluster, and writes only what it writes there:
//
//   - the scheduler reads and writes everything under P/;
//   - a shard writes its kind's member and left records;
//   - a worker writes what WorkerAccess lists, for any worker.
//
// The shared worker user (one certificate for every worker) may write
// another worker's keys of those families; a worker of its own
// certificate has WorkerAccess instead. None may write the shard map, the
// cluster state, pauses and resumes, assignments or the leader's
// election. The operator's admin holds the root role instead.
func Access(prefix string) map[string][]Grant {
	worker := grants(prefix, workerPrefixes(prefix)...)
	for _, k := range workerRequests(prefix) {
		worker = append(worker, Grant{Key: k, Write: true})
	}
	return map[string][]Grant{
		UserScheduler: grants(prefix, prefix+"/"),
		UserAMS: grants(prefix, MembersPrefix(prefix)+membership.KindAMS+"/",
			LeftPrefix(prefix)+membership.KindAMS+"/"),
		UserWorker: worker,
	}
}

// workerPrefixes are the families of keys a worker writes one of its own
// in: its member and left records, pause and partition acknowledgements,
// the end of its partitions, its progress report, its arrivals at
// barriers and its SLIDE shard's address.
func workerPrefixes(prefix string) []string {
	return []string{MembersPrefix(prefix) + membership.KindWorker + "/", LeftPrefix(prefix) + membership.KindWorker + "/",
		PauseAckPrefix(prefix), PartitionsAckKey(prefix, ""), PartitionsDonePrefix(prefix), ProgressPrefix(prefix),
		BarriersPrefix(prefix) + membership.KindWorker + ".", OwnerAddrPrefix(prefix)}
}

// workerRequests are the requests to the scheduler a job's first worker
// makes: a pinned snapshot of its best model and the rollback to it
// (job.KeepBest, RollBack) and the final export (RequestExport).
func workerRequests(prefix string) []string {
	return []string{SnapshotRequestKey(prefix), RollbackRequestKey(prefix), ExportRequestKey(prefix)}
}

// WorkerAccess returns the permissions of the user of a worker of its own
// certificate (CN name, membership.WorkerName): what every component
// reads, and writes of its own keys of each family of workerPrefixes
// (one record each, its arrivals at barriers under its own prefix), and
// for worker 0 alone the requests of workerRequests. A name that is not
// a worker's gets the reads only.
func WorkerAccess(prefix, name string) []Grant {
	g := grants(prefix)
	i, ok := membership.WorkerIndex(name)
	if !ok {
		return g
	}
	for _, k := range []string{MemberKey(prefix, membership.KindWorker, name), LeftKey(prefix, membership.KindWorker, name),
		PauseAckKey(prefix, name), PartitionsAckKey(prefix, name), PartitionsDoneKey(prefix, name),
		ProgressKey(prefix, name), OwnerAddrKey(prefix, i)} {
		g = append(g, Grant{Key: k, Write: true})
	}
	g = append(g, Grant{Key: BarrierMemberPrefix(prefix, membership.KindWorker, name), Prefix: true, Write: true})
	if i == 0 {
		for _, k := range workerRequests(prefix) {
			g = append(g, Grant{Key: k, Write: true})
		}
	}
	return g
}

// grants returns the reads every component has on the cluster under
// prefix, and writes of every key under each of prefixes.
func grants(prefix string, prefixes ...string) []Grant {
	g := []Grant{{Key: dialCheckKey}, {Key: prefix + "/", Prefix: true}}
	for _, k := range prefixes {
		g = append(g, Grant{Key: k, Prefix: true, Write: true})
	}
	return g
}

// ProvisionAuth creates etcd's users and roles for the components of the
// cluster under prefix (Access) and enables etcd's auth. Each user gets a
// role named "<user>:<prefix>" holding exactly its grants for this
// cluster (provisioning again replaces them; other clusters' roles are
// left alone). The users have no password: they authenticate by their
// certificate, so etcd must run with client-cert-auth (TLS on). It also
// creates the root, admin and etcd users, of the root role (etcd enables
// auth only with a root user). Before auth is enabled any client may run
// it; afterwards only a root one (the admin's or an etcd member's
// certificate). Several may run at once (the members of a cluster as
// they start): each ends granting every permission. It writes a line per
// role to w.
//
// Workers of their own certificates (CN worker-0 to worker-<workers-1>,
// membership.WorkerName: shards hold each to its own pushes and
// checkpoint) get a user each too, with a role of their own
// (WorkerAccess: their own records only).
func ProvisionAuth(ctx context.Context, cli *clientv3.Client, prefix string, workers int, w io.Writer) error {
	for _, u := range []string{"root", UserAdmin, UserEtcd} {
		if err := addUser(ctx, cli, u, "root"); err != nil {
			return err
		}
	}
	for user, grants := range Access(prefix) {
		role := user + ":" + prefix
		if err := setRole(ctx, cli, role, grants); err != nil {
			return err
		}
		if err := addUser(ctx, cli, user, role); err != nil {
			return err
		}
		fmt.Fprintf(w, "etcd user %s: role %s, %d permissions\n", user, role, len(grants))
	}
	for i := range workers {
		user := membership.WorkerName(i)
		role := user + ":" + prefix
		if err := setRole(ctx, cli, role, WorkerAccess(prefix, user)); err != nil {
			return err
		}
		if err := addUser(ctx, cli, user, role); err != nil {
			return err
		}
	}
	if workers > 0 {
		fmt.Fprintf(w, "etcd users %s to %s: a role each (%s:%s...), their own records only\n",
			membership.WorkerName(0), membership.WorkerName(workers-1), membership.WorkerName(0), prefix)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("controlplane: enable etcd auth: %w", err)
	}
	fmt.Fprintln(w, "etcd auth enabled")
	return nil
}

// addUser creates user without a password (if new) and grants it role.
func addUser(ctx context.Context, cli *clientv3.Client, user, role string) error {
	_, err := cli.UserAddWithOptions(ctx, user, "", &clientv3.UserAddOptions{NoPassword: true})
	if err != nil && !errors.Is(err, rpctypes.ErrUserAlreadyExist) {
		return fmt.Errorf("controlplane: add etcd user %s: %w", user, err)
	}
	if _, err := cli.UserGrantRole(ctx, user, role); err != nil {
		return fmt.Errorf("controlplane: grant etcd role %s to %s: %w", role, user, err)
	}
	return nil
}

// setRole creates role (if new) and replaces its permissions by grants.
func setRole(ctx context.Context, cli *clientv3.Client, role string, grants []Grant) error {
	if _, err := cli.RoleAdd(ctx, role); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("controlplane: add etcd role %s: %w", role, err)
	}
	got, err := cli.RoleGet(ctx, role)
	if err != nil {
		return fmt.Errorf("controlplane: get etcd role %s: %w", role, err)
	}
	for _, p := range got.Perm {
		_, err := cli.RoleRevokePermission(ctx, role, string(p.Key), string(p.RangeEnd))
		if err != nil && !errors.Is(err, rpctypes.ErrPermissionNotGranted) {
			return fmt.Errorf("controlplane: revoke from etcd role %s: %w", role, err)
		}
	}
	for _, g := range grants {
		end, perm := "", clientv3.PermissionType(clientv3.PermRead)
		if g.Prefix {
			end = clientv3.GetPrefixRangeEnd(g.Key)
		}
		if g.Write {
			perm = clientv3.PermissionType(clientv3.PermReadWrite)
		}
		if _, err := cli.RoleGrantPermission(ctx, role, g.Key, end, perm); err != nil {
			return fmt.Errorf("controlplane: grant %+v to etcd role %s: %w", g, role, err)
		}
	}
	return nil
}
