package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/cluster/amsnode"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/config"
)

// Options configure a local cluster.
type Options struct {
	// Shards is the number of AMS shards. The default value is 2.
	Shards int
	// Stripes is the number of stripe owners per shard. The default value
	// is max(1, runtime.GOMAXPROCS(0)/Shards): the shards of one process
	// together get one owner per core (measured on 2 cores with 2 shards:
	// about 4% more training throughput than GOMAXPROCS owners each).
	Stripes int
	// Prefix is the cluster's etcd key prefix. The default value is
	// membership.DefaultPrefix.
	Prefix string
	// LeaseTTL is every member's lease TTL. The default value is
	// membership.DefaultTTL.
	LeaseTTL time.Duration
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
	// Metrics, when set, receives the scheduler's metrics
	// (Scheduler.Collector) and every shard's (amsnode Options.Metrics),
	// labelled shard="ams-<i>". The default value (nil) registers none.
	Metrics prometheus.Registerer
	// RejoinWait is the scheduler's wait for a member whose lease expired
	// to register again in the same life (scheduler.Options.RejoinWait).
	// The default value is scheduler.DefaultRejoinWait; negative: off.
	RejoinWait time.Duration
	// Config is the job's configuration: the scheduler reads its job,
	// kafka and snapshot sections (scheduler.Options.Config), as the
	// workers do. Its snapshot and export stores are the shards' store
	// roots (amsnode.Options.Stores): the shards write and read no other
	// store. The default value (the zero Config) hands out no files,
	// deals no partitions and takes no snapshot.
	Config config.Config
	// ModelRoot, for StartFor: a job without a snapshot store gets one
	// of its own under this directory (config.Config.KeepModelIn), so
	// that its snapshots and final model outlive the process; the
	// directory keeps the newest KeptModels jobs' models. The
	// default value is empty: such a job takes no snapshot.
	ModelRoot string
}

// stores are the store roots of the cluster's shards: the snapshot and
// export stores of the job's config.
func (o *Options) stores() []string {
	var out []string
	for _, s := range []string{o.Config.Snapshot.Store, o.Config.Export.Store} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// tierDirs are the tier directories of the cluster's shards: a scratch
// directory of the cluster's own (the default, removed by Close), and
// every tier_dir of the config's tables.
func (c *Cluster) tierDirs() []string {
	out := []string{filepath.Join(c.dir, "tier")}
	os.MkdirAll(out[0], 0o755) // a failure shows at the declaration of a tiered table
	for _, t := range c.opts.Config.Model.Tables {
		if t.TierDir != "" && !slices.Contains(out, t.TierDir) {
			out = append(out, t.TierDir)
		}
	}
	return out
}

// startNode starts shard i of the cluster.
func (c *Cluster) startNode(ctx context.Context, i int) (*amsnode.Node, error) {
	o := &c.opts
	return amsnode.Start(ctx, c.cli, amsnode.Options{ID: fmt.Sprintf("ams-%d", i), Prefix: o.Prefix,
		Stripes: o.Stripes, LeaseTTL: o.LeaseTTL, Stores: o.stores(), TierDirs: c.tierDirs(), Logger: o.Logger, Metrics: o.shardMetrics(i)})
}

// shardMetrics is shard i's registerer: Metrics with its shard label.
func (o *Options) shardMetrics(i int) prometheus.Registerer {
	if o.Metrics == nil {
		return nil
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"shard": fmt.Sprintf("ams-%d", i)}, o.Metrics)
}

// Cluster is a running local cluster.
type Cluster struct {
	opts  Options
	dir   string
	etcd  *etcdembed.Server
	cli   *clientv3.Client
	conn  *controlplane.Conn
	nodes []*amsnode.Node
	sched *scheduler.Scheduler
	// schedMetrics is the scheduler's collector on Options.Metrics.
	schedMetrics prometheus.Collector
	// models is the model root of a job StartFor gave a directory there,
	// whose retention Close applies (nil: none).
	models *modelRoot
	// direct maps the address of each running shard to its service, for
	// workers in this process (Local). It is replaced whole (copy on
	// write) when a shard starts or stops, and read without a lock.
	direct atomic.Pointer[map[string]client.DataPlane]
}

// Start starts etcd, the shards and the scheduler, and waits until the
// cluster serves (the scheduler published the shard map and began its
// shards).
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Shards <= 0 {
		opts.Shards = 2
	}
	if err := (shard.Options{Stripes: opts.Stripes}).Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if opts.Stripes == 0 {
		opts.Stripes = max(1, runtime.GOMAXPROCS(0)/opts.Shards)
	}
	if opts.Prefix == "" {
		opts.Prefix = membership.DefaultPrefix
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = membership.DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c = &Cluster{opts: opts}
	started := c // a failing return sets c to nil before this runs
	defer func() {
		if err != nil {
			started.Close()
			c = nil
		}
	}()
	if c.dir, err = os.MkdirTemp("", "xps-etcd-"); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.etcd, err = etcdembed.Start(ctx, etcdembed.Options{Dir: c.dir, Logger: opts.Logger, UnsafeNoFsync: true}); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.cli, err = membership.Dial(ctx, c.etcd.Endpoints(), opts.Logger); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.sched, err = scheduler.New(c.cli, scheduler.Options{Prefix: opts.Prefix, Shards: opts.Shards,
		LeaseTTL: opts.LeaseTTL, Logger: opts.Logger, Config: opts.Config, RejoinWait: opts.RejoinWait}); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if opts.Metrics != nil {
		c.schedMetrics = c.sched.Collector()
		opts.Metrics.MustRegister(c.schedMetrics) // unregistered by Close
	}
	for i := 0; i < opts.Shards; i++ {
		n, err := c.startNode(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		c.nodes = append(c.nodes, n)
		c.setDirect(n, nil)
	}
	if c.conn, err = controlplane.New(c.cli, opts.Prefix); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := c.waitServing(ctx); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return c, nil
}

// waitServing waits until the cluster serves, or until the scheduler
// stops on its own (it refused the job: a snapshot store of another job,
// say), whose error it then returns: the job would wait for ever.
func (c *Cluster) waitServing(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.sched.Done():
			cancel()
		case <-wctx.Done():
		}
	}()
	_, err := c.conn.WaitServing(wctx)
	if serr := c.sched.Err(); serr != nil {
		return fmt.Errorf("the scheduler stopped: %w", serr)
	}
	return err
}

// Endpoints are the embedded etcd's client endpoints.
func (c *Cluster) Endpoints() []string { return c.etcd.Endpoints() }

// Etcd is a client of the embedded etcd, owned by the cluster.
func (c *Cluster) Etcd() *clientv3.Client { return c.cli }

// Prefix is the cluster's etcd key prefix.
func (c *Cluster) Prefix() string { return c.opts.Prefix }

// Conn is the cluster's control plane, on Etcd.
func (c *Cluster) Conn() *controlplane.Conn { return c.conn }

// Nodes are the running shards.
func (c *Cluster) Nodes() []*amsnode.Node { return c.nodes }

// RestartShard stops shard i (its rows are lost, as when its process
// dies) and starts a fresh one under the same ID on a new port, as a
// supervisor restarting a crashed process would: the cluster restores it
// from the latest snapshot.
func (c *Cluster) RestartShard(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("cluster: no shard %d of %d", i, len(c.nodes))
	}
	old := c.nodes[i]
	c.setDirect(nil, old)
	if err := old.Close(); err != nil {
		return fmt.Errorf("cluster: stop shard %d: %w", i, err)
	}
	n, err := c.startNode(ctx, i)
	if err != nil {
		return fmt.Errorf("cluster: restart shard %d: %w", i, err)
	}
	c.nodes[i] = n
	c.setDirect(n, nil)
	return nil
}

// Local returns the service of the shard of this cluster that listens on
// addr, or nil when none does (any more): it makes the cluster a
// client.Resolver, so that a worker in this process pulls and pushes by
// direct calls (job.Options.Local). A stopped shard answers its
// direct calls as its closed server would: unavailable.
func (c *Cluster) Local(addr string) client.DataPlane {
	if c == nil {
		return nil
	}
	if m := c.direct.Load(); m != nil {
		return (*m)[addr]
	}
	return nil
}

// setDirect adds the service of started (when not nil) to the direct map
// and removes that of stopped (when not nil).
func (c *Cluster) setDirect(started, stopped *amsnode.Node) {
	m := map[string]client.DataPlane{}
	if old := c.direct.Load(); old != nil {
		maps.Copy(m, *old)
	}
	if stopped != nil {
		delete(m, stopped.Addr())
	}
	if started != nil {
		m[started.Addr()] = shard.NewLocal(started.Shard())
	}
	c.direct.Store(&m)
}

// Close stops the scheduler, the shards and etcd, and removes etcd's data;
// a job given a directory under Options.ModelRoot then has its retention
// applied (modelRoot.keep).
// The scheduler goes first: it would take the shards' leaving for a
// failure.
func (c *Cluster) Close() error {
	var errs []error
	if c.sched != nil {
		errs = append(errs, c.sched.Close())
	}
	if c.schedMetrics != nil {
		c.opts.Metrics.Unregister(c.schedMetrics)
	}
	c.direct.Store(nil)
	for i := len(c.nodes) - 1; i >= 0; i-- {
		errs = append(errs, c.nodes[i].Close())
	}
	if c.cli != nil {
		errs = append(errs, c.cli.Close())
	}
	if c.etcd != nil {
		errs = append(errs, c.etcd.Close())
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	if c.models != nil {
		errs = append(errs, c.models.keep())
	}
	return errors.Join(errs...)
}

// A shard's in-process data plane is what the client takes for a shard
// in this process; the two packages do not import each other.
var _ client.LocalShard = (*shard.Local)(nil)
