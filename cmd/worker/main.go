// Command worker runs a worker's job (xps.Train): a CTR model, or with
// -output slide an extreme multi-label classifier whose SLIDE output
// layer lives in this worker. `worker -local` runs everything in one
// process (embedded etcd, AMS shards, scheduler, this worker); `worker
// -etcd HOST:PORT -train FILES -workers 2 -worker-index 0` joins a running
// cluster (README.md). The job is the -config YAML file, changed by -set
// path=value (any key) and the short flags that alias common keys
// (config.Aliases), in command-line order; -h lists every flag. With
// -local it serves the status page on -http (default 127.0.0.1:0, "" off)
// and prints its address.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xdlgo/xps"
	"github.com/xdlgo/xps/autotune"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/ctrtrain"
)

// modelRoot is where -local keeps its models (and autotune its trials').
const modelRoot = "xps-models"

type flags struct {
	local, localGRPC              bool
	asJSON, printConfig, quiet    bool
	shards, stripes, index        int
	etcd, clusterName, configFile string
	profiles                      cli.Profiles
	proc                          cli.Proc
	leaseTTL                      time.Duration
}

func main() {
	var f flags
	fs := flag.CommandLine
	fs.BoolVar(&f.local, "local", false, "run an embedded cluster (etcd, AMS shards, scheduler) in this process; its snapshots and final model go to xps-models/JOB-ID unless -snapshot-store says where")
	fs.BoolVar(&f.localGRPC, "local-grpc", false, "with -local: pull and push over loopback gRPC like a separate process, instead of calling the embedded shards directly")
	fs.IntVar(&f.shards, "shards", 2, "AMS shards of the embedded cluster")
	fs.IntVar(&f.stripes, "stripes", 0, "stripe owners per AMS shard of the embedded cluster (default GOMAXPROCS/shards, at least 1)")
	fs.StringVar(&f.etcd, "etcd", "", "etcd endpoints of an external cluster, comma-separated host:port")
	fs.StringVar(&f.clusterName, "cluster", "default", "cluster name")
	fs.StringVar(&f.configFile, "config", "", "YAML model/training config file")
	fs.IntVar(&f.index, "worker-index", 0, "this worker's index in [0, workers)")
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object on the last line of stdout")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the effective config as YAML and exit")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	f.proc.Bind(fs, "warn")
	f.profiles.Bind(fs)
	fs.DurationVar(&f.leaseTTL, "lease-ttl", membership.DefaultTTL, "TTL of the worker's etcd lease: a worker silent this long is declared dead and the cluster rolls back")
	var overrides config.Overrides
	overrides.Bind(fs)
	cli.ParseCommandLine("worker")
	ctx, stop := cli.SignalContext()
	err := run(ctx, f, &overrides)
	stop()
	if err != nil {
		cli.Fatal("worker", cli.Cause(ctx, err)) // one line on Ctrl-C
	}
}

func run(ctx context.Context, f flags, overrides *config.Overrides) (err error) {
	sources := []config.Source{config.File(f.configFile), overrides}
	cfg, err := config.Build(sources...)
	if err != nil {
		return err
	}
	if f.printConfig {
		return cfg.Write(os.Stdout)
	}
	if f.local { // the status page on a free loopback port, unless -http says otherwise
		f.proc.DefaultHTTP(flag.CommandLine, "127.0.0.1:0")
	}
	if err := f.proc.Start(os.Stderr, "worker", fmt.Sprintf("worker-%d", f.index)); err != nil {
		return err
	}
	defer f.proc.Close()
	log := f.proc.Log
	stopProfiles, err := f.profiles.Start()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfiles()) }()
	if f.local == (f.etcd != "") {
		flag.Usage()
		return errors.New("give exactly one of -local and -etcd")
	}
	var progress io.Writer = os.Stderr
	if f.quiet {
		progress = nil
	}
	prefix, err := membership.Prefix(f.clusterName)
	if err != nil {
		return err
	}
	cfg, tuned, err := xps.Tune(ctx, cfg, f.local, autotune.Options{Sources: sources, Progress: progress, Logger: log,
		Cluster: cluster.Options{Shards: f.shards, Stripes: f.stripes}, ModelRoot: modelRoot})
	if err != nil {
		return err
	}
	opts := job.Options{Config: cfg, Prefix: prefix, Index: f.index, Progress: progress, Logger: log, LeaseTTL: f.leaseTTL}
	if m := f.proc.Metrics(); m != nil {
		opts.OnProgress = ctrtrain.ProgressMetrics(m)
	}
	closeCluster, err := connect(ctx, f, &opts)
	if err != nil {
		return err
	}
	defer closeCluster()
	f.proc.ReadyUntil(ctx)
	res, err := xps.Train(ctx, opts)
	res.Autotune = tuned
	return res.Report(err, f.asJSON, os.Stdout, os.Stderr)
}

// connect starts the embedded cluster (-local) or dials etcd (-etcd) and
// sets opts' etcd client and local shards; the returned func closes them.
func connect(ctx context.Context, f flags, opts *job.Options) (func(), error) {
	if !f.local {
		cl, err := membership.Dial(ctx, cli.Endpoints(f.etcd), opts.Logger, membership.WithTLS(f.proc.TLS.Client()))
		if err != nil {
			return nil, err
		}
		opts.Etcd, opts.TLS = cl, f.proc.TLS
		return func() { cl.Close() }, nil
	}
	if f.proc.TLS != nil {
		return nil, errors.New("-local runs without TLS: -tls-ca, -tls-cert and -tls-key are for a worker joining a cluster (-etcd)")
	}
	lc, err := cluster.StartFor(ctx, cluster.Options{Shards: f.shards, Stripes: f.stripes, Metrics: f.proc.Metrics(), ModelRoot: modelRoot}, opts, !f.localGRPC)
	if err != nil {
		return nil, err
	}
	f.proc.ServeStatus(lc.StatusHandler(), os.Stderr)
	return func() { lc.Close() }, nil
}
