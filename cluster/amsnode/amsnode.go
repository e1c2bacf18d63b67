package amsnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/ams/stream"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/ops"
	"github.com/xdlgo/xps/cluster/tlsconf"
)

// Options configure a node.
type Options struct {
	// ID is the shard's member ID, unique in the cluster. Required.
	ID string
	// Prefix is the cluster's etcd key prefix. The default value is
	// membership.DefaultPrefix.
	Prefix string
	// Listen is the TCP address to serve gRPC on. The default value is
	// "127.0.0.1:0" (a free loopback port).
	Listen string
	// Advertise is the address published in etcd for workers to dial. The
	// default value is the listener's address.
	Advertise string
	// Stripes is the number of stripe owners. The default value is
	// runtime.GOMAXPROCS(0).
	Stripes int
	// LeaseTTL is the registration lease's time to live. The default value
	// is membership.DefaultTTL.
	LeaseTTL time.Duration
	// Stores are the roots of the snapshot and export stores the shard
	// may write and read (shard.Options.Stores): directories and
	// hdfs://HOST:PORT/PATH URIs. The default value is none: the shard
	// refuses every snapshot, restore and export that names a store.
	Stores []string
	// TierDirs are the directories where the shard keeps the cold tiers
	// of tiered tables (shard.Options.TierDirs), created by Start if
	// missing. The default value is none: a tiered table is refused.
	TierDirs []string
	// Metrics, when set, receives the shard's metrics: the latency of
	// every RPC served (xps_ams_rpc_seconds) and, read at each scrape, its
	// tables, counters, version and traffic (xps_ams_*). The default value
	// (nil) registers none.
	Metrics prometheus.Registerer
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
	// TLS, when set, makes the gRPC server speak mutual TLS and check
	// each call's role (shard.TLSServerOptions): the AMS certificate is
	// presented, clients must present one of the CA, and admin RPCs are
	// the scheduler's. The default value (nil) serves plaintext.
	TLS *tlsconf.Config
}

// Node is a running shard.
type Node struct {
	opts  Options
	shard *shard.Shard
	gs    *grpc.Server
	lis   net.Listener
	mux   *stream.Mux // the stream's TCP connections beside gRPC on lis (plaintext only), or nil
	reg   *membership.Kept
	addr  string

	wg       sync.WaitGroup
	serveErr error // set by the serving goroutine before wg.Done
	once     sync.Once
	// collector reports the shard's figures while it runs.
	collector prometheus.Collector
}

// Start listens, serves and registers the shard in etcd.
func Start(ctx context.Context, cli *clientv3.Client, opts Options) (*Node, error) {
	if opts.ID == "" {
		return nil, errors.New("amsnode: an ID is required")
	}
	if opts.Prefix == "" {
		opts.Prefix = membership.DefaultPrefix
	}
	if err := (shard.Options{Stripes: opts.Stripes, Stores: opts.Stores, TierDirs: opts.TierDirs}).Validate(); err != nil {
		return nil, fmt.Errorf("amsnode %s: %w", opts.ID, err)
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = membership.DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range opts.TierDirs { // made now: a directory that cannot be fails the start
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("amsnode %s: tier directory: %w", opts.ID, err)
		}
	}
	lis, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("amsnode %s: listen: %w", opts.ID, err)
	}
	n := &Node{opts: opts, lis: lis, addr: opts.Advertise}
	if n.addr == "" {
		n.addr = lis.Addr().String()
	}
	n.shard = shard.New(shard.Options{ID: opts.ID, Stripes: opts.Stripes, Blank: true, Stores: opts.Stores, TierDirs: opts.TierDirs,
		CheckState: checkState})
	var extra []grpc.ServerOption
	if opts.Metrics != nil {
		extra = ops.GRPCServerMetrics(opts.Metrics, "ams")
		n.collector = newCollector(n.shard)
		opts.Metrics.MustRegister(n.collector) // unregistered by Close
	}
	extra = append(extra, shard.TLSServerOptions(opts.TLS)...)
	n.gs = shard.NewGRPCServer(n.shard, extra...)
	grpcLis := lis
	if opts.TLS == nil {
		n.mux = stream.NewMux(lis, shard.StreamHandler(n.shard), nil)
		grpcLis = n.mux
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.serveErr = n.gs.Serve(grpcLis)
	}()
	// Kept: a lost lease is registered again, and the shard serves on
	// with its rows (see the package doc).
	reg, err := membership.Keep(ctx, cli, opts.Prefix, membership.Member{Kind: membership.KindAMS, ID: opts.ID,
		Addr: n.addr, PID: os.Getpid(), Started: time.Now()}, opts.LeaseTTL, opts.Logger)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("amsnode %s: %w", opts.ID, err)
	}
	n.reg = reg
	opts.Logger.Info("ams shard serving", "id", opts.ID, "addr", n.addr, "stores", opts.Stores, "tier_dirs", opts.TierDirs)
	return n, nil
}

// Registrations returns how many times the node registered: 1, plus one
// per lease lost and registered again.
func (n *Node) Registrations() int { return n.reg.Registrations() }

// Addr is the address workers dial.
func (n *Node) Addr() string { return n.addr }

// Shard returns the node's shard.
func (n *Node) Shard() *shard.Shard { return n.shard }

// Close leaves the cluster cleanly, stops serving and closes the shard.
func (n *Node) Close() error {
	var errs []error
	n.once.Do(func() {
		if n.reg != nil {
			errs = append(errs, n.reg.Close())
		}
		n.gs.Stop()
		n.wg.Wait()
		if n.mux != nil {
			n.mux.Close()
			n.mux.Wait()
		}
		if n.collector != nil {
			n.opts.Metrics.Unregister(n.collector)
		}
		if n.serveErr != nil && !errors.Is(n.serveErr, grpc.ErrServerStopped) {
			errs = append(errs, n.serveErr)
		}
		errs = append(errs, n.shard.Close())
	})
	return errors.Join(errs...)
}

// DefaultGCPercent is the garbage collector's target for a shard process
// (cmd/ams -gc-percent): 400 when the tables' rows live outside the Go heap
// (ams.RowsOffHeap), where the heap holds little more than request buffers
// and collecting a quarter as often gave about 8% more samples/s in
// bench/speed_of_light.sh's separate-process run; Go's own 100 otherwise,
// where the heap is the rows and a higher target would multiply them.
var DefaultGCPercent = map[bool]int{true: 400, false: 100}[ams.RowsOffHeap]
