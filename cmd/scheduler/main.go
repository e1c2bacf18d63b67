// Command scheduler runs the scheduler of an xps cluster: it registers in
// etcd, watches the AMS shards, workers and other schedulers, publishes the
// shard map once the expected shards have joined, and reports lease expiries
// (see package cluster/scheduler).
//
// Usage:
//
//	scheduler -etcd host:port[,host:port...] [flags]
//
// Flags:
//
//	-etcd host:port[,...]  etcd client endpoints. Required.
//	-cluster name          cluster name; keys under /xps/<name> ("default").
//	-id id                 this scheduler's member id. Default <hostname>-<pid>.
//	-shards N              number of AMS shards the cluster forms with (2).
//	-partitions P          virtual partitions, fixed for a model's life (4096).
//	-lease-ttl d           TTL of the scheduler's lease. Default 5s.
//	-rejoin-wait d         wait for a member whose lease expired to come back
//	                       (a pause, no restore). Default 1m; <0: restore.
//	-stop-snapshot-timeout d  when stopped while leading a serving cluster
//	                       with a store, snapshot what is new first, within d
//	                       (90s); <0: none.
//	-log-level level       debug, info, warn or error. Default info.
//	-log-format f          text or json. Default text.
//	-tls-ca, -tls-cert, -tls-key  mutual TLS with etcd and the shards (README, "TLS").
//	-http addr             operations endpoint: /metrics, /healthz,
//	                       /readyz and the status page (/). Default off.
//	-config file           the job's YAML config (the one the workers read):
//	                       the scheduler reads its job section (train,
//	                       workers, split_bytes), snapshot section (store,
//	                       every, every_samples, keep), export section, kafka
//	                       section, model.tables and train.format.
//	-set path=value        set a key of those sections, as in the file
//	                       (repeatable), e.g. -set snapshot.keep=5.
//	-train paths           job.train: training files, directories or globs
//	                       (comma-separated) to divide among the workers; each
//	                       worker-<i> finds its share under
//	                       /xps/<name>/assign/worker-<i>. Default none.
//	-workers W             job.workers sharing -train. Default 1.
//	-split-bytes N         job.split_bytes: files larger than a worker's share
//	                       (or all, when fewer than the workers) are cut
//	                       into at most W ranges of at least N bytes, and
//	                       more while a worker has none. Default 64 MiB.
//	-format f              train.format of -train; xml files are never cut.
//	                       Default libffm.
//	-kafka brokers         kafka.brokers, with -topic: deal the topic's
//	-topic name            partitions to the live workers (under
//	                       /xps/<name>/partitions), anew whenever a worker
//	                       joins or leaves. Default none.
//	-snapshot-store loc    snapshot.store: where snapshots go, a directory
//	                       every shard can reach, or hdfs://NAMENODE:PORT/PATH.
//	                       Default none.
//	-snapshot-every d      snapshot.every: take a consistent snapshot every d
//	                       (workers pause at a batch boundary). Default 10m;
//	                       negative: on request only.
//	-snapshot-every-samples N
//	                       snapshot.every_samples: also take one once the
//	                       workers' checkpoints in the model count N more
//	                       samples applied. Default 0: off.
//	-snapshot-keep K       snapshot.keep: complete snapshots to keep. Default 3.
//	-export-store loc      export.store: where model exports go (as snapshots).
//	-export-every d        export.every (1m); see README, "Export to serving".
//	-snapshot-now          instead of running a scheduler, ask the running
//	-export-now            one for a snapshot (a model export), wait and
//	                       print its result (one JSON object on stdout).
//
// Several schedulers may run on one cluster: they hold an etcd election
// (under /xps/<name>/leader) and only the leader drives the cluster; a
// standby takes over when the leader stops or its lease expires, resuming
// from etcd.
//
// SIGINT or SIGTERM stops the scheduler gracefully: it takes the stop's
// snapshot (above), leaves the cluster (writing its left marker) and exits
// 0. It exits 1 if it cannot start, if its lease is lost, or if the stop's
// snapshot fails (the model since the last snapshot is then not saved).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	ctx, stop := cli.SignalContext()
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		cli.Fatal("scheduler", err)
	}
}

// run runs the scheduler until ctx ends (a signal) or it stops on its own.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		opts      scheduler.Options
		proc      cli.Proc
		endpoints = fs.String("etcd", "", "etcd client endpoints, host:port[,host:port] (required)")
		name      = fs.String("cluster", "default", "cluster name; keys live under /xps/<name>")
		cfgFile   = fs.String("config", "", "the job's YAML config; the scheduler reads its job, snapshot and kafka sections and train.format")
		snapNow   = fs.Bool("snapshot-now", false, "do not run a scheduler: ask the cluster's running scheduler for a snapshot, wait for it and print the result")
		expNow    = fs.Bool("export-now", false, "do not run a scheduler: ask the cluster's running scheduler for a model export, wait for it and print the result")
		overrides config.Overrides
	)
	opts.BindFlags(fs)
	proc.Bind(fs, "info")
	overrides.Bind(fs, "job", "snapshot", "export", "kafka", "train.format")
	if err := cli.Parse(fs, "scheduler", args); err != nil {
		return err
	}
	cfg, err := config.Build(config.File(*cfgFile), &overrides)
	if err != nil {
		return err
	}
	if *endpoints == "" {
		fs.Usage()
		return errors.New("-etcd is required")
	}
	opts.Config = cfg
	if err = proc.Start(stderr, "scheduler", opts.ID); err != nil {
		return err
	}
	defer proc.Close()
	opts.Logger, opts.TLS = proc.Log, proc.TLS
	if opts.Prefix, err = membership.Prefix(*name); err != nil {
		return fmt.Errorf("-cluster: %w", err)
	}
	etcd, err := membership.Dial(ctx, cli.Endpoints(*endpoints), opts.Logger, membership.WithTLS(proc.TLS.Client()))
	if err != nil {
		return err
	}
	defer etcd.Close()
	if *snapNow || *expNow {
		return scheduler.RequestNow(ctx, etcd, opts.Prefix, *expNow, os.Stdout)
	}
	opts.Logger.Info("scheduler starting", "etcd", *endpoints, "prefix", opts.Prefix, "shards", opts.Shards, "partitions", opts.Partitions)
	return scheduler.Serve(ctx, etcd, opts, &proc)
}
