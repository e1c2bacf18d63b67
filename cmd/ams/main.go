// Command ams runs one AMS shard: it holds sparse embedding rows and a range
// of the dense parameters, applies gradients with server-side optimizers,
// and registers itself in etcd under a lease whose keep-alive is its
// heartbeat.
//
// Usage:
//
//	ams -etcd 127.0.0.1:2379 -id ams-0 [-listen 127.0.0.1:0] [flags]
//
// Flags:
//
//	-etcd        etcd endpoints, comma-separated host:port (required)
//	-cluster     cluster name; keys live under /xps/<cluster> (default "default")
//	-id          shard ID, unique in the cluster (required)
//	-listen      gRPC listen address (default "127.0.0.1:0", a free port)
//	-advertise   address published for workers (default: the listen address)
//	-stripes     stripe owner goroutines (default GOMAXPROCS)
//	-lease-ttl   registration lease TTL, the heartbeat timeout (default 5s)
//	-store       snapshot and export store roots, comma-separated directories
//	             and hdfs://HOST:PORT/PATH URIs (default none)
//	-tier-dir    local-disk (SSD) directories for the cold rows of tiered tables,
//	             comma-separated; a table's tier_dir must lie under one, the first
//	             is the default (default none: tiered tables are refused)
//	-log-level   debug, info, warn or error (default info)
//	-log-format  text or json (default text)
//	-http        operations endpoint host:port: /metrics, /healthz, /readyz (default off)
//	-gc-percent  garbage collector target (default 400 where rows are kept off the Go heap,
//	             the default Linux build; 100 otherwise; GOGC, when set, wins)
//	-cpuprofile  write a CPU profile of the shard's life to this file (default off)
//	-tls-ca, -tls-cert, -tls-key  mutual TLS (all three or none; README, "TLS"): gRPC, etcd, roles
//
// The shard writes and reads snapshots and exports only in stores under the
// roots of -store: the scheduler's snapshot store (scheduler
// -snapshot-store) and export store (export.store) must be there, equal to
// a root or below one. A request naming any other location (another
// directory, a path that climbs out with "..", a link out of a root, another
// HDFS namenode) is refused before anything is created or opened; without
// -store every one is.
//
// The shard stops on SIGINT/SIGTERM (leaving the cluster cleanly). It never
// stops on its own: when its lease is lost (etcd unreachable for longer
// than the TTL) it keeps its rows and registers again once etcd answers;
// the scheduler decides what the cluster does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/xdlgo/xps/cluster/amsnode"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	var (
		o      amsnode.Options
		proc   cli.Proc
		etcd   = flag.String("etcd", "", "etcd endpoints, comma-separated host:port (required)")
		name   = flag.String("cluster", "default", "cluster name")
		stores = flag.String("store", "", "snapshot and export store roots, comma-separated directories and hdfs://HOST:PORT/PATH URIs (default none: every store is refused)")
		gcPct  = flag.Int("gc-percent", amsnode.DefaultGCPercent, "the garbage collector's target percentage (debug.SetGCPercent; ignored when GOGC is set); the default is higher when rows are kept outside the Go heap")
		prof   = flag.String("cpuprofile", "", "write a CPU profile of the shard's life, until it stops, to this file")
		tiers  = flag.String("tier-dir", "", "directories on local disk (an SSD) for the cold rows of tiered tables, comma-separated; a table's tier_dir must lie under one, and the first is the default (default none: tiered tables are refused)")
	)
	flag.StringVar(&o.ID, "id", "", "shard ID, unique in the cluster (required)")
	flag.StringVar(&o.Listen, "listen", "127.0.0.1:0", "gRPC listen address")
	flag.StringVar(&o.Advertise, "advertise", "", "address published for workers (default the listen address)")
	flag.IntVar(&o.Stripes, "stripes", 0, "stripe owner goroutines (default GOMAXPROCS)")
	flag.DurationVar(&o.LeaseTTL, "lease-ttl", membership.DefaultTTL, "registration lease TTL (heartbeat timeout)")
	proc.Bind(flag.CommandLine, "info")
	cli.ParseCommandLine("ams")
	cli.SetGCPercent(*gcPct)
	o.Stores = cli.SplitList(*stores)
	o.TierDirs = cli.SplitList(*tiers)
	if err := run(*etcd, *name, *prof, o, &proc); err != nil {
		cli.Fatal("ams", err)
	}
}

func run(etcd, name, prof string, o amsnode.Options, proc *cli.Proc) error {
	endpoints := cli.Endpoints(etcd)
	if len(endpoints) == 0 || o.ID == "" {
		flag.Usage()
		return errors.New("-etcd and -id are required")
	}
	if err := proc.Start(os.Stderr, "ams", o.ID); err != nil {
		return err
	}
	defer proc.Close()
	if prof != "" {
		stopProfile, err := cli.StartCPUProfile(prof)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	var err error
	if o.Prefix, err = membership.Prefix(name); err != nil {
		return err
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	cl, err := membership.Dial(ctx, endpoints, proc.Log, membership.WithTLS(proc.TLS.Client()))
	if err != nil {
		return err
	}
	defer cl.Close()
	o.Logger, o.Metrics, o.TLS = proc.Log, proc.Metrics(), proc.TLS
	node, err := amsnode.Start(ctx, cl, o)
	if err != nil {
		return err
	}
	// The address line lets scripts and tests find a shard started on port 0.
	fmt.Fprintf(os.Stdout, "ams %s serving on %s\n", o.ID, node.Addr())
	proc.SetVersion(node.Shard().Version) // on every log line from now on
	proc.ReadyUntil(ctx)
	<-ctx.Done() // a lost lease is registered again: the rows are the model
	proc.Log.Info("shutting down")
	return node.Close()
}
