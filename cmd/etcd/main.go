// Command etcd runs the embedded etcd server (the one `worker -local`
// embeds) as its own process: a single member on a machine without an etcd
// installation, or one member of a multi-member cluster (the Helm chart's
// bundled etcd StatefulSet).
//
// Usage:
//
//	etcd [-addr 127.0.0.1:2379] [-dir DIR]
//	etcd -name etcd-0 -addr 0.0.0.0:2379 -advertise etcd-0.etcd:2379 \
//	     -peer-addr 0.0.0.0:2380 -advertise-peer etcd-0.etcd:2380 \
//	     -initial-cluster etcd-0=http://etcd-0.etcd:2380,etcd-1=... -dir /var/lib/etcd
//
// Flags:
//
//	-addr             client address (default "127.0.0.1:2379")
//	-advertise        client address published to the cluster (default -addr)
//	-dir              data directory (default: a new temporary directory, removed on exit)
//	-name             member name (default "xps")
//	-peer-addr        peer address (default "127.0.0.1:0", a free port)
//	-advertise-peer   peer address published to the other members (default -peer-addr)
//	-initial-cluster  members of a new cluster, name=http://host:port,... (default: this one alone)
//	-ready-timeout    how long to wait for the cluster to form (default 5m)
//	-log-level        debug, info, warn or error (default warn)
//	-log-format       text or json (default text)
//	-tls-ca, -tls-cert, -tls-key  mutual TLS for clients and peers (https; README, "TLS")
//	-auth-clusters    with TLS: etcd users and roles for these clusters' components, auth on
//	-auth-workers     with -auth-clusters: also users worker-0 to worker-<N-1>, for workers of their own certificates
//
// It prints "etcd serving on ADDR" once ready and stops on SIGINT/SIGTERM.
// A production cluster may run a real etcd cluster instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	var (
		o    etcdembed.Options
		proc cli.Proc
	)
	flag.StringVar(&o.ClientAddr, "addr", "127.0.0.1:2379", "client address")
	flag.StringVar(&o.AdvertiseClientAddr, "advertise", "", "client address published to the cluster (default -addr)")
	flag.StringVar(&o.Dir, "dir", "", "data directory (default a temporary directory removed on exit)")
	flag.StringVar(&o.Name, "name", "xps", "member name")
	flag.StringVar(&o.PeerAddr, "peer-addr", "127.0.0.1:0", "peer address")
	flag.StringVar(&o.AdvertisePeerAddr, "advertise-peer", "", "peer address published to the other members (default -peer-addr)")
	flag.StringVar(&o.InitialCluster, "initial-cluster", "", "members of a new cluster: name=http://host:port,... (default this member alone)")
	flag.DurationVar(&o.ReadyTimeout, "ready-timeout", 5*time.Minute, "how long to wait for the cluster to form")
	auth := flag.String("auth-clusters", "", "with -tls-*: give each component an etcd user and role (its certificate's CN) for these clusters, comma-separated names, and enable auth")
	workers := flag.Int("auth-workers", 0, "with -auth-clusters: also give workers of their own certificates (CN worker-0 to worker-<N-1>) etcd users, each writing its own records only")
	proc.Bind(flag.CommandLine, "warn")
	cli.ParseCommandLine("etcd")
	if *workers < 0 {
		cli.Fatal("etcd", errors.New("-auth-workers must be 0 or more"))
	}
	if err := run(o, &proc, cli.SplitList(*auth), *workers); err != nil {
		cli.Fatal("etcd", err)
	}
}

func run(o etcdembed.Options, proc *cli.Proc, clusters []string, workers int) error {
	if err := proc.Start(os.Stderr, "etcd", o.Name); err != nil {
		return err
	}
	defer proc.Close()
	if len(clusters) > 0 && proc.TLS == nil {
		return errors.New("-auth-clusters needs -tls-ca, -tls-cert and -tls-key: etcd's users authenticate by their certificates")
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "xps-etcd-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	o.Logger, o.LogLevel, o.TLS = proc.Log, slog.LevelWarn, proc.TLSFiles
	ctx, stop := cli.SignalContext()
	defer stop()
	srv, err := etcdembed.Start(ctx, o)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := provision(ctx, srv, proc, clusters, workers); err != nil {
		return err
	}
	proc.Ready()
	fmt.Printf("etcd serving on %s (data in %s)\n", srv.Endpoints()[0], o.Dir)
	<-ctx.Done()
	return nil
}

// provision gives the components of the clusters etcd users and roles
// (and the first workers users of their own) and enables auth
// (controlplane.ProvisionAuth), through a client of this
// member with its own certificate (the etcd user, of the root role).
func provision(ctx context.Context, srv *etcdembed.Server, proc *cli.Proc, clusters []string, workers int) error {
	if len(clusters) == 0 {
		return nil
	}
	host, port, err := net.SplitHostPort(srv.Endpoints()[0])
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // listening on every address: dial loopback
	}
	cl, err := membership.Dial(ctx, []string{net.JoinHostPort(host, port)}, proc.Log, membership.WithTLS(proc.TLS.Client()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, name := range clusters {
		prefix, err := membership.Prefix(name)
		if err != nil {
			return fmt.Errorf("-auth-clusters: %w", err)
		}
		if err := controlplane.ProvisionAuth(ctx, cl, prefix, workers, os.Stdout); err != nil {
			return err
		}
	}
	return nil
}
